/** bench-net part 2: 1-byte broadcast latency on stable trees. */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import type { Libp2p, Stream } from '@libp2p/interface'
import { multiaddr } from '@multiformats/multiaddr'
import { createTreecast, type TreecastNode } from '../../node/create-treecast.ts'
import { WanEmulator } from '../../node/wan/wan-emulator.ts'
import { PING, echoHandler, nextMessage } from '../bench-net-peer.ts'
import { keysAndIds, log, median, rng, sleep, steadyCore, steadyLabel, stopAll, waitQuiet, withTimeout, type Options } from './common.ts'

// ---- 2. 1-byte broadcast latency on stable trees ------------------------------------------------

export interface LatencyBroadcast {
  root: number
  doneMs: number
  /** broadcast call to the last peer's 'deliver' event (one shared clock: one process) */
  deliverMs: number
  delivered: number
  /** CPU time of this process (all peers) from the call to done */
  cpuMs: number
  depth: number
  /** the slowest root-to-peer path of the latency tree, summing each edge's one-way latency */
  pathMs: number
  /** emulator only: the largest sum of configured one-way delays along a root-to-peer path of the latency tree */
  propagationMs: number
}

export interface LatencyReport {
  network: string
  peers: number
  stableMs: number
  /** one-way latency per hop: half the median ping-pong RTT on open tree connections */
  hopMs: { intra: number, inter: number }
  pingEdges: { intra: number, inter: number }
  /** median ping-pong RTT of each edge pinged */
  pingRttMs: { intra: number[], inter: number[] }
  /** core messages sent by all peers, by type, during the 2 s idle window (heartbeats are not core messages) */
  idleMessages: Record<string, number>
  /** 'tree' events (a peer's parent changed in some tree) over the 2 s idle window and during the broadcasts */
  parentChanges: { idle2s: number, duringBroadcasts: number }
  /** event-loop delay of the process over the 2 s idle window and over the broadcasts */
  eventLoopDelayMs: { idle: { p50: number, p99: number, max: number }, broadcasts: { p50: number, p99: number, max: number } }
  /** half the median RTT the probes measured on latency-tree edges (during the cold start) */
  probeHopMs: number
  broadcasts: LatencyBroadcast[]
  /** CPU cores this process used over 2 s of idle stable state, before the broadcasts */
  idleCpuCores: number
  heartbeatIntervalMs: number
  median: {
    doneMs: number
    cpuMs: number
    deliverMs: number
    depth: number
    pathMs: number
    depthTimesHopMs: number
    doneOverPath: number
    deliverOverPath: number
    propagationMs: number
    deliverOverPropagation: number
    /** done also waits for the acknowledgements to come back up: its floor is twice the propagation */
    doneOverTwicePropagation: number
  }
}

/** 1-byte ping-pongs on one stream from `a` to `b` (connection already open); RTTs in ms. */
export async function pingRtts (a: Libp2p, b: string, count: number): Promise<number[]> {
  const s: Stream = await a.dialProtocol(multiaddr(b), PING)
  const out: number[] = []
  const one = new Uint8Array([1])
  for (let i = 0; i < count + 3; i++) {
    const reply = nextMessage(s)
    const t = performance.now()
    s.send(one)
    await reply
    if (i >= 3) out.push(performance.now() - t)
  }
  await s.close().catch(() => {})
  return out
}

/** An overlay of treecast peers founded together, quiet (or not, after the bounded wait). */
export interface Overlay {
  nodes: TreecastNode[]
  ids: string[]
  wan: boolean
  network: string
  clusterOf: (i: number) => string
  stableMs: number
}

/**
 * `o.nodes` peers (or `n`), on loopback or the emulator (4 clusters), found an overlay
 * together (`bootstrap(vnodes, ids)`); waits until no peer probes (bounded). `onStarted` runs
 * once the peers listen, before any connection.
 */
export async function foundOverlay (o: Options, n: number, wan: boolean, onStarted?: () => Promise<void>): Promise<Overlay> {
  const clusters = ['c0', 'c1', 'c2', 'c3']
  const per = Math.ceil(n / clusters.length)
  const clusterOf = (i: number): string => clusters[Math.min(clusters.length - 1, Math.floor(i / per))] as string
  const emulator = wan ? new WanEmulator({ clusters, interDelayMs: o.wanDelayMs }) : undefined
  const network = (wan ? `emulator: 4 clusters of ${per}, ${o.wanDelayMs} ms one way between, uncapped` : 'loopback') +
    (o.heartbeatMs === 1000 ? '' : `, heartbeats every ${o.heartbeatMs} ms`) +
    steadyLabel(o.steadyProbeMs)
  log(`${network}: ${n} peers`)
  const keys = await keysAndIds(n)
  keys.forEach((k, i) => { emulator?.assign(k.peerId, clusterOf(i)) })
  const beat = o.heartbeatMs === 1000 ? {} : { heartbeatIntervalMs: o.heartbeatMs, failureDetectionTimeoutMs: Math.max(5000, 3 * o.heartbeatMs) }
  const nodes = await Promise.all(keys.map(async (k) => await createTreecast({ privateKey: k.key, ...beat, ...steadyCore(o.steadyProbeMs), ...(emulator !== undefined ? { transport: emulator.transport() } : {}) })))
  try {
    await Promise.all(nodes.map(async (x) => { await x.start(); await x.libp2p.handle(PING, echoHandler) }))
    await onStarted?.()
    const ids = nodes.map((x) => x.id)
    const t0 = performance.now()
    for (const x of nodes) x.bootstrap(o.vnodesPerPeer * n, ids)
    const stableMs = await waitQuiet(() => nodes.some((x) => x.overlay.probing), o.stableTimeoutMs)
    log(`${network}: ${Number.isNaN(stableMs) ? `NOT quiet after ${o.stableTimeoutMs} ms (${nodes.filter((x) => x.overlay.probing).length} still probing); measuring anyway` : `quiet after ${stableMs.toFixed(0)} ms`} (founded ${(performance.now() - t0).toFixed(0)} ms ago)`)
    return { nodes, ids, wan, network, clusterOf, stableMs }
  } catch (err) {
    await stopAll(nodes)
    throw err
  }
}

/** 1-byte broadcasts from random roots on a quiet overlay, against its latency trees. */
export async function measureLatency (ov: Overlay, o: Options): Promise<LatencyReport> {
  const { nodes, ids, wan, network, clusterOf, stableMs } = ov
  const n = nodes.length
  const index = new Map(ids.map((id, i) => [id, i]))
  await sleep(500)
  // How busy the process is with nothing to do: heartbeats on every control stream.
  const loop = monitorEventLoopDelay({ resolution: 1 })
  loop.enable()
  const sentByType = (): Record<string, number> => {
    const out: Record<string, number> = {}
    for (const x of nodes) for (const [k, v] of Object.entries(x.overlay.counters().sent as Record<string, number>)) out[k] = (out[k] ?? 0) + v
    return out
  }
  let parentChanges = 0
  for (const x of nodes) x.addEventListener('tree', () => { parentChanges++ })
  const sent0 = sentByType()
  const idle0 = process.cpuUsage()
  const idleT0 = performance.now()
  await sleep(2000)
  const sent1 = sentByType()
  const idleMessages = Object.fromEntries(Object.entries(sent1).map(([k, v]) => [k, v - (sent0[k] ?? 0)]).filter(([, v]) => v !== 0))
  const idleC = process.cpuUsage(idle0)
  const idleCpuCores = (idleC.user + idleC.system) / 1000 / (performance.now() - idleT0)
  const loopMs = (): { p50: number, p99: number, max: number } => ({ p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 })
  const idleLoopMs = loopMs()
  const idleParentChanges = parentChanges
  loop.reset()

  // The latency tree of `root`: hops and parent of every peer (undefined: not connected to the root).
  const pathsOf = (root: number): Array<{ hops: number, edges: Array<[number, number]> } | undefined> => nodes.map((_x, i) => {
    const edges: Array<[number, number]> = []
    let cur = i
    while (cur !== root) {
      const p = (nodes[cur] as TreecastNode).tree('lat', ids[root])?.parent
      const pi = p == null ? undefined : index.get(p)
      if (pi === undefined || edges.length > n) return undefined
      edges.push([cur, pi])
      cur = pi
    }
    return { hops: edges.length, edges }
  })

  const deliveries = new Map<string, { count: number, last: number }>()
  for (const x of nodes) {
    x.addEventListener('deliver', (e) => {
      const d = deliveries.get(e.detail.id) ?? { count: 0, last: 0 }
      d.count++
      d.last = performance.now()
      deliveries.set(e.detail.id, d)
    })
  }
  const random = rng(o.seed + (wan ? 1000 : 0))
  const runs: Array<{ root: number, doneMs: number, deliverMs: number, delivered: number, cpuMs: number, paths: ReturnType<typeof pathsOf> }> = []
  for (let b = 0; b < o.broadcasts; b++) {
    const root = Math.floor(random() * n)
    const paths = pathsOf(root)
    const c0 = process.cpuUsage()
    const t = performance.now()
    const h = (nodes[root] as TreecastNode).startBroadcast(new Uint8Array([b & 0xff]))
    await withTimeout(h.done, 30_000, `1-byte broadcast ${b}`)
    const doneMs = performance.now() - t
    const c = process.cpuUsage(c0)
    await sleep(30)
    const d = deliveries.get(h.id)
    runs.push({ root, doneMs, deliverMs: d === undefined ? NaN : d.last - t, delivered: d?.count ?? 0, cpuMs: (c.user + c.system) / 1000, paths })
    await sleep(20)
  }

  const broadcastLoopMs = loopMs()
  const broadcastParentChanges = parentChanges - idleParentChanges
  loop.disable()
  // Per-hop latency now (stable, idle): ping-pong on tree edges, by class (same cluster or not).
  const edgeKey = (a: number, b: number): string => a < b ? `${a},${b}` : `${b},${a}`
  const edges = new Map<string, [number, number]>()
  for (const r of runs) for (const p of r.paths) for (const e of p?.edges ?? []) edges.set(edgeKey(...e), e)
  const inter = (e: [number, number]): boolean => wan && clusterOf(e[0]) !== clusterOf(e[1])
  const sample = (want: boolean): Array<[number, number]> => [...edges.values()].filter((e) => inter(e) === want).sort(() => random() - 0.5).slice(0, o.pingEdges)
  const pingRttMs: { intra: number[], inter: number[] } = { intra: [], inter: [] }
  const hopOf = async (list: Array<[number, number]>, into: number[]): Promise<number> => {
    for (const [a, b] of list) into.push(median(await pingRtts((nodes[a] as TreecastNode).libp2p, ids[b] as string, o.pings)))
    return median(into) / 2
  }
  const intraEdges = sample(false)
  const interEdges = sample(true)
  const hopMs = { intra: await hopOf(intraEdges, pingRttMs.intra), inter: wan ? await hopOf(interEdges, pingRttMs.inter) : NaN }
  const probeRtts: number[] = []
  for (const e of edges.values()) {
    const m = (nodes[e[0]] as TreecastNode).measured().get(ids[e[1]] as string) ?? (nodes[e[1]] as TreecastNode).measured().get(ids[e[0]] as string)
    if (m !== undefined) probeRtts.push(m.rttMs)
  }
  const edgeHop = (e: [number, number]): number => inter(e) ? hopMs.inter : hopMs.intra
  const broadcasts: LatencyBroadcast[] = runs.map((r) => {
    let depth = 0
    let pathMs = 0
    let propagationMs = 0
    for (const p of r.paths) {
      if (p === undefined) { depth = NaN; pathMs = NaN; propagationMs = NaN; break }
      depth = Math.max(depth, p.hops)
      pathMs = Math.max(pathMs, p.edges.reduce((s, e) => s + edgeHop(e), 0))
      propagationMs = Math.max(propagationMs, p.edges.reduce((s, e) => s + (inter(e) ? o.wanDelayMs : 0), 0))
    }
    return { root: r.root, doneMs: r.doneMs, deliverMs: r.deliverMs, delivered: r.delivered, cpuMs: r.cpuMs, depth, pathMs, propagationMs: wan ? propagationMs : NaN }
  })
  const med = {
    doneMs: median(broadcasts.map((x) => x.doneMs)),
    cpuMs: median(broadcasts.map((x) => x.cpuMs)),
    deliverMs: median(broadcasts.map((x) => x.deliverMs)),
    depth: median(broadcasts.map((x) => x.depth)),
    pathMs: median(broadcasts.map((x) => x.pathMs)),
    depthTimesHopMs: median(broadcasts.map((x) => x.depth)) * hopMs.intra,
    doneOverPath: median(broadcasts.map((x) => x.doneMs / x.pathMs)),
    deliverOverPath: median(broadcasts.map((x) => x.deliverMs / x.pathMs)),
    propagationMs: median(broadcasts.map((x) => x.propagationMs)),
    deliverOverPropagation: median(broadcasts.map((x) => x.deliverMs / x.propagationMs)),
    doneOverTwicePropagation: median(broadcasts.map((x) => x.doneMs / (2 * x.propagationMs)))
  }
  log(`${network}: done ${med.doneMs.toFixed(2)} ms, last delivery ${med.deliverMs.toFixed(2)} ms, depth ${med.depth}, hop ${hopMs.intra.toFixed(3)}${wan ? ` / ${hopMs.inter.toFixed(2)}` : ''} ms, path ${med.pathMs.toFixed(2)} ms`)
  return {
    network,
    peers: n,
    stableMs,
    idleCpuCores,
    heartbeatIntervalMs: o.heartbeatMs,
    hopMs,
    pingEdges: { intra: intraEdges.length, inter: interEdges.length },
    pingRttMs,
    eventLoopDelayMs: { idle: idleLoopMs, broadcasts: broadcastLoopMs },
    idleMessages,
    parentChanges: { idle2s: idleParentChanges, duringBroadcasts: broadcastParentChanges },
    probeHopMs: median(probeRtts) / 2,
    broadcasts,
    median: med
  }
}
