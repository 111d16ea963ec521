/**
 * The peers of the comparison: N real libp2p hosts in this process (TCP on loopback, Noise,
 * Yamux), each running BOTH systems as libp2p services (treecast, identify, gossipsub), on
 * the wide-area emulator of node/wan (4 clusters). The host is createTreecast's (same
 * connection-manager limits, quiet Noise, half-window Yamux with 2 MiB windows, no connection
 * monitor) plus identify and gossipsub, and the traffic counter as libp2p's metrics hook.
 * Both systems share every connection, so the stack's savings count for both.
 */
import '../../node/polyfill.ts'
import { performance } from 'node:perf_hooks'
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { gossipsub, type GossipSub } from '@libp2p/gossipsub'
import { identify, type Identify } from '@libp2p/identify'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import { DEFAULT_NODE_NET } from '../../node/config.ts'
import { TreecastNode } from '../../node/create-treecast.ts'
import { treecast, type TreecastService } from '../../node/treecast-service.ts'
import { WanEmulator } from '../../node/wan/wan-emulator.ts'
import { clusterNameOfPeer } from '../../node/wan/topology.ts'
import { halfWindowYamux } from '../../node/half-window-yamux.ts'
import { quietNoise } from '../../node/quiet-noise.ts'
import { Rng } from '../sim/rng.ts'
import { TOPIC, gossipsubOptions, type Plan } from './config.ts'
import { TrafficCounter } from './traffic-counter.ts'

/** The services of one host. */
export type Services = { treecast: TreecastService, identify: Identify, pubsub: GossipSub }

/** One peer: a host running both systems. */
export interface Peer {
  readonly index: number
  readonly cluster: string
  readonly libp2p: Libp2p<Services>
  readonly treecast: TreecastNode
  readonly pubsub: GossipSub
}

/** The running peers, their emulator and traffic counter. */
export interface Hosts {
  readonly peers: Peer[]
  readonly emulator: WanEmulator
  readonly counter: TrafficCounter
}

const sleep = async (ms: number): Promise<void> => { await new Promise<void>((resolve) => { setTimeout(resolve, ms) }) }

/** The gossipsub service's internals used to see the mesh and the scores. */
interface GossipInternals { getMeshPeers (topic: string): string[], getScore (peerId: string): number }
const internals = (p: Peer): GossipInternals => p.pubsub as unknown as GossipInternals

/** Creates and starts `plan.peers` hosts with seeded keys, assigned to their clusters. */
export async function startHosts (plan: Plan, seed: number): Promise<Hosts> {
  const emulator = WanEmulator.fromTopology(plan.topology)
  const counter = new TrafficCounter()
  const rng = new Rng(seed).fork('gossipsub-compare/keys')
  const peers: Peer[] = []
  try {
    for (let i = 0; i < plan.peers; i++) {
      const keySeed = Uint8Array.from({ length: 32 }, () => rng.int(256))
      const privateKey = await generateKeyPairFromSeed('Ed25519', keySeed)
      const cluster = clusterNameOfPeer(plan.topology, i)
      emulator.assign(peerIdFromPrivateKey(privateKey).toString(), cluster)
      const treecastRng = new Rng(seed).fork(`gossipsub-compare/treecast/${i}`)
      const libp2p = await createLibp2p({
        start: false,
        privateKey,
        addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
        transports: [emulator.transport()],
        connectionEncrypters: [quietNoise()],
        streamMuxers: [halfWindowYamux({ streamOptions: { maxStreamWindowSize: 2 * 1024 * 1024 } })],
        connectionManager: { maxConnections: 256, inboundConnectionThreshold: 10_000, maxIncomingPendingConnections: 256, dialTimeout: DEFAULT_NODE_NET.dialTimeoutMs, addressDialTimeout: DEFAULT_NODE_NET.dialTimeoutMs, inboundUpgradeTimeout: DEFAULT_NODE_NET.dialTimeoutMs },
        connectionMonitor: { enabled: false },
        metrics: counter.metrics(),
        services: {
          treecast: treecast({ random: () => treecastRng.next(), core: plan.treecastCore }),
          identify: identify(),
          pubsub: gossipsub(gossipsubOptions())
        }
      })
      peers.push({ index: i, cluster, libp2p, treecast: new TreecastNode(libp2p, 5000), pubsub: libp2p.services.pubsub })
    }
    await Promise.all(peers.map(async (p) => { await p.libp2p.start() }))
  } catch (err) {
    await stopHosts({ peers, emulator, counter })
    throw err
  }
  return { peers, emulator, counter }
}

/** Stops every host, bounded (libp2p's teardown can hang with many connections). */
export async function stopHosts (hosts: Hosts, timeoutMs = 20_000): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  await Promise.race([
    Promise.allSettled(hosts.peers.map(async (p) => { await p.treecast.stop() })),
    new Promise<void>((resolve) => { timer = setTimeout(resolve, timeoutMs) })
  ]).finally(() => { clearTimeout(timer) })
}

/** Why the treecast overlay is not stable yet (undefined when it is). */
function treecastInstability (peers: readonly Peer[]): string | undefined {
  const probing = peers.filter((p) => p.treecast.overlay.probing).length
  if (probing > 0) return `${probing} peer(s) probing`
  const short = peers.filter((p) => p.treecast.members().length !== peers.length).length
  if (short > 0) return `${short} peer(s) do not know every member`
  return undefined
}

/**
 * Counters summed over the peers, for a start that did not settle: missed heartbeats,
 * stalls, dial failures, queue overflows, probes and the process's memory.
 */
export function treecastDiagnosis (hosts: Hosts): string {
  const sums: Record<string, number> = {}
  for (const p of hosts.peers) {
    const c = p.treecast.overlay.counters() as { links: Record<string, number>, core: Record<string, unknown> }
    for (const k of ['heartbeatsMissed', 'stalls', 'dialFailures', 'queueOverflows']) sums[k] = (sums[k] ?? 0) + (c.links[k] ?? 0)
    sums.probes = (sums.probes ?? 0) + Number(c.core.probes ?? 0)
  }
  const parts = Object.entries(sums).map(([k, v]) => `${k} ${v}`)
  return `${parts.join(', ')}, rss ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB`
}

/**
 * Founds the treecast overlay (one virtual node per peer) and waits until no peer probes and
 * every peer knows every member, at two polls 300 ms apart, as live-run does. Returns the
 * time waited, or NaN when `timeoutMs` passed first (the run then measures anyway).
 */
export async function foundTreecast (hosts: Hosts, timeoutMs: number): Promise<{ stableMs: number, why?: string }> {
  const { peers } = hosts
  const ids = peers.map((p) => p.treecast.id)
  const t0 = performance.now()
  for (const p of peers) p.treecast.bootstrap(peers.length, ids)
  while (performance.now() - t0 < timeoutMs) {
    if (treecastInstability(peers) === undefined) {
      await sleep(300)
      if (treecastInstability(peers) === undefined) return { stableMs: performance.now() - t0 }
    }
    await sleep(50)
  }
  return { stableMs: NaN, why: treecastInstability(peers) ?? 'flapping' }
}

/**
 * Connects every pair of peers that treecast left unconnected (the lower index dials), so
 * gossipsub sees every peer, as a small network whose peers all know each other would.
 * Returns the dials made and the failures.
 */
export async function connectAll (hosts: Hosts): Promise<{ dialled: number, failed: number }> {
  const { peers } = hosts
  let dialled = 0
  let failed = 0
  await Promise.all(peers.map(async (a) => {
    for (const b of peers) {
      if (b.index <= a.index) continue
      if (a.libp2p.getConnections(b.libp2p.peerId).length > 0) continue
      dialled++
      try {
        await a.libp2p.dial(multiaddr(b.treecast.id))
      } catch {
        failed++
      }
    }
  }))
  return { dialled, failed }
}

/** Why the gossipsub mesh is not ready (undefined when it is). */
function meshProblem (peers: readonly Peer[]): string | undefined {
  const others = peers.length - 1
  for (const p of peers) {
    const subs = p.pubsub.getSubscribers(TOPIC).length
    if (subs < others) return `peer ${p.index} sees ${subs}/${others} subscribers`
    const mesh = internals(p).getMeshPeers(TOPIC).length
    if (mesh < Math.min(4, others)) return `peer ${p.index} has ${mesh} mesh peers (Dlo = 4)`
    const negative = p.pubsub.getPeers().filter((q) => internals(p).getScore(q.toString()) < 0).length
    if (negative > 0) return `peer ${p.index} scores ${negative} peer(s) below 0`
  }
  return undefined
}

/**
 * Subscribes every peer to the topic and waits until every peer sees every other peer
 * subscribed, has at least Dlo mesh peers and scores nobody below 0; then `settle`
 * heartbeats more. Returns the time waited (NaN on timeout) and the mesh sizes.
 */
export async function formMesh (hosts: Hosts, timeoutMs: number, settleHeartbeats: number): Promise<{ meshMs: number, meshSizes: number[], why?: string }> {
  const { peers } = hosts
  const t0 = performance.now()
  for (const p of peers) p.pubsub.subscribe(TOPIC)
  let ready = false
  while (performance.now() - t0 < timeoutMs) {
    if (meshProblem(peers) === undefined) { ready = true; break }
    await sleep(100)
  }
  const meshMs = ready ? performance.now() - t0 : NaN
  if (ready) await sleep(settleHeartbeats * 1000)
  const why = meshProblem(peers)
  return { meshMs, meshSizes: peers.map((p) => internals(p).getMeshPeers(TOPIC).length), ...(why !== undefined ? { why } : {}) }
}

/** Open connections per peer. */
export function connectionsPerPeer (hosts: Hosts): number[] {
  return hosts.peers.map((p) => p.libp2p.getConnections().length)
}

/** True when no emulated link holds data (backlog or on the wire). */
export function linksIdle (emulator: WanEmulator): boolean {
  return emulator.stats().every((s) => s.backlogBytes === 0 && s.inFlightBytes === 0)
}

/** The shape of `root`'s treecast tree of `kind`: depth, edges between clusters, the root's children. */
export function treeShapeOf (hosts: Hosts, kind: 'lat' | 'bw', rootIndex: number): { depth: number | null, wanEdges: number, rootChildren: number } {
  const { peers } = hosts
  const rootId = (peers[rootIndex] as Peer).treecast.id
  const byId = new Map(peers.map((p) => [p.treecast.id, p]))
  let depth = 0
  let wanEdges = 0
  let rootChildren = 0
  for (const p of peers) {
    if (p.index === rootIndex) continue
    let cur: Peer | undefined = p
    let hops = 0
    while (cur !== undefined && cur.index !== rootIndex && hops <= peers.length) {
      const parentId: string | null | undefined = cur.treecast.tree(kind, rootId)?.parent
      const parent: Peer | undefined = parentId == null ? undefined : byId.get(parentId)
      if (hops === 0 && parent !== undefined) {
        if (parent.cluster !== p.cluster) wanEdges++
        if (parent.index === rootIndex) rootChildren++
      }
      cur = parent
      hops++
    }
    if (cur === undefined || cur.index !== rootIndex) return { depth: null, wanEdges, rootChildren }
    depth = Math.max(depth, hops)
  }
  return { depth, wanEdges, rootChildren }
}
