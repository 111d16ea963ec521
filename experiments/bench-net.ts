/**
 * `npm run bench:net -- [part...] [--json]`: treecast on real libp2p (TCP + Noise + Yamux on
 * loopback, this machine), next to plain libp2p doing the same work in the same run.
 *
 * - chain: one raw libp2p stream (64 MiB in 64 KiB writes) vs a 64 MiB bandwidth-tree
 *   broadcast down a forced chain A→B→C→D of 4 treecast peers (the WAN emulator caps every
 *   other pair), vs a hand-written libp2p relay chain (the same 3 hops, no treecast); in
 *   this process, then with every peer in its own process (`--no-procs` skips that).
 * - latency: 1-byte broadcasts from random roots on 32 stable peers, on plain loopback and
 *   with the emulator (4 clusters of 8, 10 ms one way between clusters), against the
 *   latency tree's depth × the per-hop latency measured by a 1-byte ping-pong.
 * - memory: RSS and heap per idle treecast peer (8, 16, 32 peers) and per libp2p connection
 *   (plain hosts in a full mesh), each N in a fresh child process run with `--expose-gc`
 *   (the latency part's loopback process gives the figure for its own N).
 *
 * Every latency and memory measurement runs in a fresh `node --expose-gc --import tsx
 * experiments/bench-net.ts overlay-child ...` process (the command is printed), so the
 * chain part's 64 MiB buffers do not distort the others.
 *
 * Steady probing is off by default (`--steady-probe-ms 0`): with the node's default (a probe
 * per peer every 2 s) the trees keep changing under load, a chain does not stay a chain and
 * 32 peers in one process never settle (BENCHMARKS.md, "Real network (libp2p)").
 *
 * Progress goes to stderr; stdout gets a table, or with `--json` only the JSON report.
 */
import '../node/polyfill.ts'
import { Rng } from './sim/rng.ts'
import { spawn, type ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { generateKeyPair } from '@libp2p/crypto/keys'
import type { Libp2p, PrivateKey, Stream } from '@libp2p/interface'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { Command } from 'commander'
import { createTreecast, type TreecastNode } from '../node/create-treecast.ts'
import { installLibp2pGuard } from '../node/libp2p-guard.ts'
import { WanEmulator } from '../node/wan/wan-emulator.ts'
import { CHAIN, PING, RELAY, SINK, chainWanInit, createRawNode, echoHandler, makeRelay, nextMessage, rawTransferMs } from './bench-net-peer.ts'

const MiB = 1024 * 1024
const PEER_SCRIPT = fileURLToPath(new URL('./bench-net-peer.ts', import.meta.url))
const SELF_SCRIPT = fileURLToPath(import.meta.url)
const REPO = fileURLToPath(new URL('..', import.meta.url))

// ---- small helpers ----------------------------------------------------------------------

const log = (line: string): void => { process.stderr.write(`bench-net: ${line}\n`) }
const sleep = async (ms: number): Promise<void> => { await new Promise<void>((resolve) => { setTimeout(resolve, ms) }) }

function median (xs: readonly number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (s.length === 0) return NaN
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m] as number : ((s[m - 1] as number) + (s[m] as number)) / 2
}

async function withTimeout<T> (p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([p, new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`timed out after ${ms} ms: ${what}`)) }, ms) })])
  } finally { clearTimeout(timer) }
}

/** mulberry32: a seeded source for the broadcast roots. */
function rng (seed: number): () => number {
  const r = new Rng(seed)
  return () => r.next()
}

/**
 * Waits until `probing()` is false at two polls `settleMs` apart (probing can restart on a
 * late fact), at most `timeoutMs`. Returns the time waited, or NaN on timeout.
 */
async function waitQuiet (probing: () => boolean | Promise<boolean>, timeoutMs: number, settleMs = 300): Promise<number> {
  const t0 = performance.now()
  while (performance.now() - t0 < timeoutMs) {
    if (!await probing()) {
      await sleep(settleMs)
      if (!await probing()) return performance.now() - t0
    }
    await sleep(50)
  }
  return NaN
}

async function stopAll (nodes: ReadonlyArray<{ stop: () => void | Promise<void> }>): Promise<void> {
  await withTimeout(Promise.allSettled(nodes.map(async (n) => { await n.stop() })), 20_000, 'teardown').catch((err: unknown) => { log(String(err)) })
}

async function keysAndIds (n: number): Promise<Array<{ key: PrivateKey, peerId: string }>> {
  return await Promise.all(Array.from({ length: n }, async () => {
    const key = await generateKeyPair('Ed25519')
    return { key, peerId: peerIdFromPrivateKey(key).toString() }
  }))
}

const mbps = (bytes: number, ms: number): number => bytes / 1e6 / (ms / 1000)

// ---- child processes ------------------------------------------------------------------------

type Json = Record<string, unknown>

/** A child process speaking JSON lines (bench-net-peer.ts, or this script's memory parts). */
class Child {
  readonly proc: ChildProcess
  readonly ready: Promise<Json>
  private readonly waiters = new Map<number, { resolve: (v: Json) => void, reject: (e: Error) => void }>()
  private nextReq = 1
  private readonly exited: Promise<number | null>

  constructor (args: string[], nodeFlags: string[] = []) {
    this.proc = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', ...args], { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] })
    let onReady: (v: Json) => void = () => {}
    let onFail: (e: Error) => void = () => {}
    this.ready = new Promise<Json>((resolve, reject) => { onReady = resolve; onFail = reject })
    this.ready.catch(() => {})
    this.exited = new Promise((resolve) => { this.proc.on('exit', (code) => { resolve(code) }) })
    void this.exited.then((code) => {
      const err = new Error(`child ${args.join(' ')} exited with ${String(code)}`)
      onFail(err)
      for (const w of this.waiters.values()) w.reject(err)
      this.waiters.clear()
    })
    createInterface({ input: this.proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      let ev: Json
      try { ev = JSON.parse(line) as Json } catch { log(`child said: ${line}`); return }
      if (ev.ev === 'ready' || ev.ev === 'result') { onReady(ev); return }
      const w = typeof ev.req === 'number' ? this.waiters.get(ev.req) : undefined
      if (w === undefined) return
      this.waiters.delete(ev.req as number)
      if (ev.ev === 'error') w.reject(new Error(String(ev.message)))
      else w.resolve(ev)
    })
  }

  async request (cmd: Json, timeoutMs = 60_000): Promise<Json> {
    const req = this.nextReq++
    const p = new Promise<Json>((resolve, reject) => { this.waiters.set(req, { resolve, reject }) })
    this.proc.stdin?.write(JSON.stringify({ ...cmd, req }) + '\n')
    return await withTimeout(p, timeoutMs, `child ${String(cmd.cmd)}`)
  }

  /** Asks the child to exit; kills it (by its pid) if it does not within `ms`. */
  async close (ms = 8000): Promise<void> {
    if (this.proc.exitCode !== null) return
    this.proc.stdin?.write(JSON.stringify({ cmd: 'exit' }) + '\n')
    this.proc.stdin?.end()
    const code = await Promise.race([this.exited, sleep(ms).then(() => 'late' as const)])
    if (code === 'late' && this.proc.pid !== undefined) process.kill(this.proc.pid, 'SIGKILL')
  }
}

async function cpuOf (children: readonly Child[]): Promise<Json[]> {
  return await Promise.all(children.map(async (c) => await c.request({ cmd: 'cpu' })))
}

function cpuShares (before: readonly Json[], after: readonly Json[]): number[] {
  return after.map((a, i) => {
    const b = before[i] as Json
    return (Number(a.cpuMs) - Number(b.cpuMs)) / (Number(a.wallMs) - Number(b.wallMs))
  })
}

// ---- 1. pipelined forwarding vs one raw stream ------------------------------------------------

interface ChainRep {
  rep: number
  rawMBps: number
  relayMBps: number
  chainMBps: number
  /** bw parents of A B C D after the in-process broadcast ('-ABC': still the chain) */
  bwParentsAfter: string
  /** CPU time of this process over wall time (cores busy) during each in-process run */
  cpuShare: { raw: number, relay: number, chain: number }
  procRawMBps?: number
  procChainMBps?: number
  /** per process (sender, sink): CPU time over wall time during the 2-process raw stream */
  procRawCpuShare?: number[]
  /** per process (A, B, C, D): CPU time over wall time during the 4-process chain broadcast */
  procChainCpuShare?: number[]
  procBwParentsAfter?: string
}

interface ChainReport {
  /** the peers' steadyProbeIntervalMs (null: the node's default) */
  steadyProbeMs: number | null
  payloadBytes: number
  hops: number
  capBytesPerSec: number
  inProcess: { stableMs: number, bwParents: string[], isChain: boolean, attempts: string[][] }
  processes?: { stableMs: number, bwParents: string[], isChain: boolean, attempts: string[][] }
  reps: ChainRep[]
  /** ms to first-touch a fresh 64 MiB array: every peer's delivery allocates one payload-sized buffer */
  firstTouchMsPer64MiB: number
  median: Required<Pick<ChainRep, 'rawMBps' | 'relayMBps' | 'chainMBps' | 'procRawMBps' | 'procChainMBps'>> & {
    chainOverRaw: number
    perHopNormalised: number
    chainOverRelay: number
    relayOverRaw: number
    procChainOverProcRaw: number
    procPerHopNormalised: number
  }
}

/** Labels of the bandwidth-tree parents from A: e.g. ['-', 'A', 'B', 'C'] for the chain. */
function parentLabels (ids: readonly string[], parents: ReadonlyArray<string | null>): string[] {
  return parents.map((p) => p === null ? '-' : (CHAIN[ids.indexOf(p)] ?? '?'))
}

const isChainShape = (labels: readonly string[]): boolean => labels.join('') === '-ABC'

/**
 * 4 treecast peers founding an overlay on the chain network, until the bandwidth tree of A
 * is the chain A→B→C→D. Probing ends after a fixed number of probes (no steady-state
 * probing), so the tree it ends with depends on the order of the probes: a peer can settle
 * on a capped link when its better candidate was itself still attached elsewhere. Such an
 * overlay is stopped and a new one founded, at most `attempts` times.
 */
async function startTreecastChain (cap: number, vnodes: number, attempts: number, steadyProbeMs: number): Promise<{ nodes: TreecastNode[], ids: string[], stableMs: number, labels: string[], tries: string[][] }> {
  const tries: string[][] = []
  for (;;) {
    const emulator = new WanEmulator(chainWanInit(cap))
    const keys = await keysAndIds(CHAIN.length)
    keys.forEach((k, i) => { emulator.assign(k.peerId, CHAIN[i] as string) })
    const nodes = await Promise.all(keys.map(async (k) => await createTreecast({ privateKey: k.key, transport: emulator.transport(), ...steadyCore(steadyProbeMs) })))
    await Promise.all(nodes.map(async (n) => { await n.start() }))
    const ids = nodes.map((n) => n.id)
    for (const n of nodes) n.bootstrap(vnodes, ids)
    const stableMs = await waitQuiet(() => nodes.some((n) => n.overlay.probing), 60_000)
    const labels = parentLabels(ids, nodes.map((n) => n.tree('bw', ids[0])?.parent ?? null))
    tries.push(labels)
    if (isChainShape(labels) || tries.length >= attempts) return { nodes, ids, stableMs, labels, tries }
    log(`chain: bw parents from A came out ${labels.join(' ')}, not a chain: founding again`)
    await stopAll(nodes)
  }
}

async function startProcessChain (cap: number, vnodes: number, attempts: number, steadyProbeMs: number): Promise<{ peers: Child[], stableMs: number, labels: string[], tries: string[][], bwParents: () => Promise<string[]> }> {
  const tries: string[][] = []
  for (;;) {
    const peers = CHAIN.map((cluster) => new Child([PEER_SCRIPT, 'peer', JSON.stringify({ cluster, capBytesPerSec: cap, vnodes, ...(Number.isNaN(steadyProbeMs) ? {} : { steadyProbeMs }) })]))
    const ready = await withTimeout(Promise.all(peers.map(async (p) => await p.ready)), 60_000, 'peer processes ready')
    const ids = ready.map((r) => String(r.id))
    const assign = ready.map((r, i) => [String(r.peerId), CHAIN[i]])
    await Promise.all(peers.map(async (p) => await p.request({ cmd: 'setup', assign, founders: ids })))
    const status = async (): Promise<Json[]> => await Promise.all(peers.map(async (p) => await p.request({ cmd: 'status', root: ids[0] })))
    const stableMs = await waitQuiet(async () => (await status()).some((s) => s.probing === true), 60_000)
    const bwParents = async (): Promise<string[]> => parentLabels(ids, (await status()).map((s) => s.bwParent as string | null))
    const labels = await bwParents()
    tries.push(labels)
    if (isChainShape(labels) || tries.length >= attempts) return { peers, stableMs, labels, tries, bwParents }
    log(`chain (processes): bw parents from A came out ${labels.join(' ')}, not a chain: founding again`)
    await Promise.all(peers.map(async (p) => { await p.close() }))
  }
}

/** Time to write the first byte of every page of a fresh 64 MiB array (this VM's page faults). */
function firstTouchMs (): number {
  const a = new Uint8Array(64 * MiB)
  const t = performance.now()
  a.fill(1)
  return performance.now() - t
}

async function chainPart (o: Options): Promise<ChainReport> {
  const bytes = Math.round(o.mb * MiB)
  const cap = o.capMBps * 1e6
  log(`chain: ${o.mb} MiB, ${o.reps} repetitions; other pairs capped at ${o.capMBps} MB/s${steadyLabel(o.steadyProbeMs)}`)
  const [r0, r1] = await Promise.all([createRawNode(), createRawNode()]) as [Libp2p, Libp2p]
  const relay = await Promise.all(CHAIN.map(async () => await createRawNode())) as [Libp2p, Libp2p, Libp2p, Libp2p]
  const addr = (h: Libp2p): Multiaddr => h.getMultiaddrs()[0] as Multiaddr
  await makeRelay(relay[1], addr(relay[2]), RELAY)
  await makeRelay(relay[2], addr(relay[3]), SINK)
  await relay[1].dial(addr(relay[2]))
  await relay[2].dial(addr(relay[3]))
  const tc = await startTreecastChain(cap, o.vnodes, o.chainAttempts, o.steadyProbeMs)
  log(`chain: in-process treecast peers quiet after ${tc.stableMs.toFixed(0)} ms; bw parents from A: ${tc.labels.join(' ')}${isChainShape(tc.labels) ? ' (a chain)' : ' (NOT a chain)'}`)
  let procs: Awaited<ReturnType<typeof startProcessChain>> | undefined
  let rawSink: Child | undefined
  let rawSender: Child | undefined
  let sinkAddr = ''
  if (o.procs) {
    procs = await startProcessChain(cap, o.vnodes, o.chainAttempts, o.steadyProbeMs)
    log(`chain: 4 peer processes quiet after ${procs.stableMs.toFixed(0)} ms; bw parents from A: ${procs.labels.join(' ')}`)
    rawSink = new Child([PEER_SCRIPT, 'raw'])
    rawSender = new Child([PEER_SCRIPT, 'raw'])
    sinkAddr = String((await rawSink.ready).addr)
    await rawSender.ready
  }
  const payload = new Uint8Array(bytes).fill(5)
  const reps: ChainRep[] = []
  const touchMs = firstTouchMs()
  /** Runs `fn` and returns its throughput and the process's CPU time over wall time. */
  const timed = async (fn: () => Promise<void>): Promise<[number, number]> => {
    gc()
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    await fn()
    const ms = performance.now() - t0
    const c = process.cpuUsage(c0)
    return [mbps(bytes, ms), (c.user + c.system) / 1000 / ms]
  }
  const runChain = async (payloadBytes: Uint8Array): Promise<void> => {
    await withTimeout((tc.nodes[0] as TreecastNode).startBroadcast(payloadBytes, { mode: 'bw' }).done, 120_000, 'chain broadcast')
  }
  try {
    // Warm-up (untimed): opens the streams and compiles the paths of every variant.
    const warm = Math.min(bytes, 4 * MiB)
    await rawTransferMs(r0, addr(r1), warm)
    await rawTransferMs(relay[0], addr(relay[1]), warm, RELAY)
    await runChain(payload.subarray(0, warm))
    if (procs !== undefined && rawSender !== undefined) {
      await rawSender.request({ cmd: 'send', addr: sinkAddr, bytes: warm }, 120_000)
      await (procs.peers[0] as Child).request({ cmd: 'broadcast', bytes: warm, mode: 'bw' }, 120_000)
    }
    for (let rep = 1; rep <= o.reps; rep++) {
      const [rawMBps, rawCpu] = await timed(async () => { await rawTransferMs(r0, addr(r1), bytes) })
      const [relayMBps, relayCpu] = await timed(async () => { await rawTransferMs(relay[0], addr(relay[1]), bytes, RELAY) })
      const [chainMBps, chainCpu] = await timed(async () => { await runChain(payload) })
      const after = parentLabels(tc.ids, tc.nodes.map((n) => n.tree('bw', tc.ids[0])?.parent ?? null))
      const r: ChainRep = { rep, rawMBps, relayMBps, chainMBps, cpuShare: { raw: rawCpu, relay: relayCpu, chain: chainCpu }, bwParentsAfter: after.join('') }
      if (procs !== undefined && rawSender !== undefined && rawSink !== undefined) {
        const rawProcs = [rawSender, rawSink]
        const c0 = await cpuOf(rawProcs)
        const pr = await rawSender.request({ cmd: 'send', addr: sinkAddr, bytes }, 120_000)
        r.procRawMBps = mbps(bytes, Number(pr.ms))
        r.procRawCpuShare = cpuShares(c0, await cpuOf(rawProcs))
        const c1 = await cpuOf(procs.peers)
        const pc = await (procs.peers[0] as Child).request({ cmd: 'broadcast', bytes, mode: 'bw' }, 120_000)
        r.procChainMBps = mbps(bytes, Number(pc.ms))
        r.procChainCpuShare = cpuShares(c1, await cpuOf(procs.peers))
        r.procBwParentsAfter = (await procs.bwParents()).join('')
      }
      reps.push(r)
      log(`chain rep ${rep}: raw ${r.rawMBps.toFixed(1)} MB/s, relay chain ${r.relayMBps.toFixed(1)}, treecast chain ${r.chainMBps.toFixed(1)} (bw parents after: ${r.bwParentsAfter}; CPU ${rawCpu.toFixed(2)} / ${relayCpu.toFixed(2)} / ${chainCpu.toFixed(2)} cores)` +
        (r.procChainMBps !== undefined ? `; processes (bw parents after: ${r.procBwParentsAfter}): raw ${r.procRawMBps?.toFixed(1)} (CPU ${r.procRawCpuShare?.map((x) => x.toFixed(2)).join(' ')}), treecast chain ${r.procChainMBps.toFixed(1)} (CPU ${r.procChainCpuShare?.map((x) => x.toFixed(2)).join(' ')})` : ''))
    }
  } finally {
    await stopAll([...tc.nodes, r0, r1, ...relay])
    await Promise.all([...(procs?.peers ?? []), rawSink, rawSender].map(async (c) => { await c?.close() }))
  }
  const m = (k: 'rawMBps' | 'relayMBps' | 'chainMBps' | 'procRawMBps' | 'procChainMBps'): number => median(reps.map((r) => r[k] ?? NaN))
  const hops = CHAIN.length - 1
  const med = {
    rawMBps: m('rawMBps'),
    relayMBps: m('relayMBps'),
    chainMBps: m('chainMBps'),
    procRawMBps: m('procRawMBps'),
    procChainMBps: m('procChainMBps'),
    chainOverRaw: median(reps.map((r) => r.chainMBps / r.rawMBps)),
    perHopNormalised: median(reps.map((r) => r.chainMBps * hops / r.rawMBps)),
    chainOverRelay: median(reps.map((r) => r.chainMBps / r.relayMBps)),
    relayOverRaw: median(reps.map((r) => r.relayMBps / r.rawMBps)),
    procChainOverProcRaw: median(reps.map((r) => (r.procChainMBps ?? NaN) / (r.procRawMBps ?? NaN))),
    procPerHopNormalised: median(reps.map((r) => (r.procChainMBps ?? NaN) * hops / (r.procRawMBps ?? NaN)))
  }
  return {
    steadyProbeMs: Number.isNaN(o.steadyProbeMs) ? null : o.steadyProbeMs,
    payloadBytes: bytes,
    hops,
    capBytesPerSec: cap,
    inProcess: { stableMs: tc.stableMs, bwParents: tc.labels, isChain: isChainShape(tc.labels), attempts: tc.tries },
    ...(procs !== undefined ? { processes: { stableMs: procs.stableMs, bwParents: procs.labels, isChain: isChainShape(procs.labels), attempts: procs.tries } } : {}),
    firstTouchMsPer64MiB: touchMs,
    reps,
    median: med
  }
}

// ---- 2. 1-byte broadcast latency on stable trees ------------------------------------------------

interface LatencyBroadcast {
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

interface LatencyReport {
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
async function pingRtts (a: Libp2p, b: string, count: number): Promise<number[]> {
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

/** The steady-probing setting, as shown in the tables. */
function steadyLabel (ms: number): string {
  return Number.isNaN(ms) ? ", node's default steady probes" : ms === 0 ? ', no steady probes' : `, steady probes every ${ms} ms`
}

/** `core` options of createTreecast for the steady-probing setting (NaN: the node's default). */
function steadyCore (ms: number): { core?: { steadyProbeIntervalMs: number } } {
  return Number.isNaN(ms) ? {} : { core: { steadyProbeIntervalMs: ms } }
}

/** An overlay of treecast peers founded together, quiet (or not, after the bounded wait). */
interface Overlay {
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
async function foundOverlay (o: Options, n: number, wan: boolean, onStarted?: () => Promise<void>): Promise<Overlay> {
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
async function measureLatency (ov: Overlay, o: Options): Promise<LatencyReport> {
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

// ---- 3. memory ----------------------------------------------------------------------------------

interface MemSample { rss: number, heapUsed: number, external: number }
interface MemoryChildResult {
  kind: 'treecast' | 'libp2p-mesh'
  n: number
  base: MemSample
  started: MemSample
  stable: MemSample
  /** connection ends: sum over the peers of libp2p.getConnections().length */
  connectionEnds: number
  streams: number
  stableMs: number
}

interface MemoryRow {
  kind: 'treecast' | 'libp2p-mesh'
  n: number
  connectionEnds: number
  stableMs: number
  /** MB per peer, created and started, before any connection */
  startedPerPeer: { rssMB: number, heapMB: number }
  /** MB per peer, with the overlay stable (treecast) or the mesh connected (libp2p) */
  stablePerPeer: { rssMB: number, heapMB: number }
  /** KB per connection end: (stable - started) / ends; in one process each connection has two ends */
  perConnectionEnd: { rssKB: number, heapKB: number }
}

function gc (): void {
  const g = (globalThis as { gc?: () => void }).gc
  if (g !== undefined) { g(); g() }
}

async function memNow (): Promise<MemSample> {
  for (let i = 0; i < 3; i++) { gc(); await sleep(50) }
  const m = process.memoryUsage()
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external }
}

/**
 * Runs in a fresh child process run with --expose-gc (`overlay-child`): N treecast peers
 * found an overlay (memory before, once started, once quiet), then, with `latency`, the
 * 1-byte broadcasts; or (`mesh-child`) N plain libp2p hosts connected in a full mesh.
 */
async function overlayChild (o: Options, n: number, wan: boolean, latency: boolean): Promise<{ memory: MemoryChildResult, latency?: LatencyReport }> {
  if ((globalThis as { gc?: unknown }).gc === undefined) throw new Error('this part needs node --expose-gc')
  // Warm up module code and the crypto once, outside the baseline.
  const warm = await createRawNode()
  await warm.stop()
  const base = await memNow()
  let started = base
  const ov = await foundOverlay(o, n, wan, async () => { await sleep(300); started = await memNow() })
  try {
    // Let the probes' downloads and idle bulk streams go before measuring.
    await sleep(o.memSettleMs)
    const stable = await memNow()
    const connectionEnds = ov.nodes.reduce((s, x) => s + x.libp2p.getConnections().length, 0)
    const streams = ov.nodes.reduce((s, x) => s + x.libp2p.getConnections().reduce((t, c) => t + c.streams.length, 0), 0)
    const memory: MemoryChildResult = { kind: 'treecast', n, base, started, stable, connectionEnds, streams, stableMs: ov.stableMs }
    return latency ? { memory, latency: await measureLatency(ov, o) } : { memory }
  } finally {
    await stopAll(ov.nodes)
  }
}

async function meshChild (n: number): Promise<MemoryChildResult> {
  if ((globalThis as { gc?: unknown }).gc === undefined) throw new Error('this part needs node --expose-gc')
  const warm = await createRawNode()
  await warm.stop()
  const base = await memNow()
  const hosts: Libp2p[] = []
  for (let i = 0; i < n; i++) hosts.push(await createRawNode())
  await sleep(300)
  const started = await memNow()
  const t0 = performance.now()
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) await (hosts[i] as Libp2p).dial((hosts[j] as Libp2p).getMultiaddrs()[0] as Multiaddr)
  const stableMs = performance.now() - t0
  await sleep(1000)
  const stable = await memNow()
  const connectionEnds = hosts.reduce((s, h) => s + h.getConnections().length, 0)
  const streams = hosts.reduce((s, h) => s + h.getConnections().reduce((t, c) => t + c.streams.length, 0), 0)
  await stopAll(hosts)
  return { kind: 'libp2p-mesh', n, base, started, stable, connectionEnds, streams, stableMs }
}

/** Common options passed on to the child processes. */
function childArgs (o: Options): string[] {
  return ['--stable-timeout', String(o.stableTimeoutMs), '--mem-settle', String(o.memSettleMs), '--broadcasts', String(o.broadcasts),
    '--vnodes-per-peer', String(o.vnodesPerPeer), '--wan-delay-ms', String(o.wanDelayMs), '--heartbeat-ms', String(o.heartbeatMs),
    '--ping-edges', String(o.pingEdges), '--pings', String(o.pings), '--seed', String(o.seed),
    '--steady-probe-ms', Number.isNaN(o.steadyProbeMs) ? 'node' : String(o.steadyProbeMs)]
}

/** Runs this script's `mode` in a fresh `node --expose-gc` process; its result. */
async function inChild (mode: string, extra: string[], o: Options, timeoutMs: number): Promise<Json> {
  const args = [mode, ...extra, ...childArgs(o)]
  log(`fresh process: node --expose-gc --import tsx ${SELF_SCRIPT.slice(REPO.length)} ${args.join(' ')}`)
  const child = new Child([SELF_SCRIPT, ...args], ['--expose-gc'])
  try {
    const r = await withTimeout(child.ready, timeoutMs, `${mode} ${extra.join(' ')}`)
    return r.result as Json
  } finally {
    await child.close()
  }
}

function memoryRow (r: MemoryChildResult): MemoryRow {
  const heap = (s: MemSample): number => s.heapUsed + s.external
  const perPeer = (s: MemSample): { rssMB: number, heapMB: number } => ({ rssMB: (s.rss - r.base.rss) / r.n / 1e6, heapMB: (heap(s) - heap(r.base)) / r.n / 1e6 })
  const ends = Math.max(1, r.connectionEnds)
  return {
    kind: r.kind,
    n: r.n,
    connectionEnds: r.connectionEnds,
    stableMs: r.stableMs,
    startedPerPeer: perPeer(r.started),
    stablePerPeer: perPeer(r.stable),
    perConnectionEnd: { rssKB: (r.stable.rss - r.started.rss) / ends / 1e3, heapKB: (heap(r.stable) - heap(r.started)) / ends / 1e3 }
  }
}

async function memoryPart (o: Options, have: readonly MemoryChildResult[]): Promise<MemoryRow[]> {
  const results: MemoryChildResult[] = []
  for (const n of o.memNodes) {
    const done = have.find((r) => r.kind === 'treecast' && r.n === n)
    results.push(done ?? (await inChild('overlay-child', ['--mem-n', String(n)], o, 300_000)).memory as MemoryChildResult)
  }
  results.push(await inChild('mesh-child', ['--mem-n', String(o.meshNodes)], o, 120_000) as unknown as MemoryChildResult)
  const rows = results.map(memoryRow)
  for (const row of rows) {
    log(`memory: ${row.kind} N=${row.n}: ${row.stablePerPeer.rssMB.toFixed(2)} MB RSS / ${row.stablePerPeer.heapMB.toFixed(2)} MB heap per peer; ${row.connectionEnds} connection ends, ${row.perConnectionEnd.rssKB.toFixed(0)} KB RSS / ${row.perConnectionEnd.heapKB.toFixed(0)} KB heap each`)
  }
  return rows
}

// ---- report -------------------------------------------------------------------------------------

interface Options {
  reps: number
  mb: number
  capMBps: number
  vnodes: number
  chainAttempts: number
  procs: boolean
  nodes: number
  broadcasts: number
  vnodesPerPeer: number
  wanDelayMs: number
  heartbeatMs: number
  /** NaN: the node's default */
  steadyProbeMs: number
  pingEdges: number
  pings: number
  stableTimeoutMs: number
  memNodes: number[]
  meshNodes: number
  memSettleMs: number
  seed: number
  json: boolean
}

interface Report {
  date: string
  node: string
  cpus: number
  command: string
  chain?: ChainReport
  latency?: LatencyReport[]
  memory?: MemoryRow[]
}

const f = (x: number, d = 1): string => Number.isFinite(x) ? x.toFixed(d) : 'n/a'

function printTable (r: Report): void {
  const out: string[] = []
  if (r.chain !== undefined) {
    const c = r.chain
    const m = c.median
    out.push(`## chain: ${c.payloadBytes / MiB} MiB, ${c.hops} hops${steadyLabel(c.steadyProbeMs ?? NaN)}; bw parents from A: in-process ${c.inProcess.bwParents.join(' ')}${c.processes !== undefined ? `, processes ${c.processes.bwParents.join(' ')}` : ''}`)
    out.push('| rep | raw stream MB/s | relay chain MB/s | treecast chain MB/s | chain/raw | 4 procs: raw MB/s | 4 procs: chain MB/s | chain/raw | bw parents after (1 proc / 4) |')
    out.push('|---|---|---|---|---|---|---|---|---|')
    for (const x of c.reps) out.push(`| ${x.rep} | ${f(x.rawMBps)} | ${f(x.relayMBps)} | ${f(x.chainMBps)} | ${f(x.chainMBps / x.rawMBps, 2)} | ${f(x.procRawMBps ?? NaN)} | ${f(x.procChainMBps ?? NaN)} | ${f((x.procChainMBps ?? NaN) / (x.procRawMBps ?? NaN), 2)} | ${x.bwParentsAfter} / ${x.procBwParentsAfter ?? 'n/a'} |`)
    out.push(`| median | ${f(m.rawMBps)} | ${f(m.relayMBps)} | ${f(m.chainMBps)} | ${f(m.chainOverRaw, 2)} | ${f(m.procRawMBps)} | ${f(m.procChainMBps)} | ${f(m.procChainOverProcRaw, 2)} | |`)
    out.push(`per-hop normalised (chain x ${c.hops} / raw): in-process ${f(m.perHopNormalised, 2)}, processes ${f(m.procPerHopNormalised, 2)}; treecast chain / relay chain ${f(m.chainOverRelay, 2)}; relay chain / raw ${f(m.relayOverRaw, 2)}`)
    const cpu = (k: 'raw' | 'relay' | 'chain'): string => f(median(c.reps.map((x) => x.cpuShare[k])), 2)
    const procCpu = (k: 'procRawCpuShare' | 'procChainCpuShare'): string => {
      const per = c.reps[0]?.[k]?.map((_x, i) => f(median(c.reps.map((x) => x[k]?.[i] ?? NaN)), 2))
      return per === undefined ? 'n/a' : per.join(' ')
    }
    out.push(`CPU busy (cores, medians): in-process raw ${cpu('raw')}, relay ${cpu('relay')}, chain ${cpu('chain')}; processes: raw (sender sink) ${procCpu('procRawCpuShare')}, chain (A B C D) ${procCpu('procChainCpuShare')}`)
    out.push(`first touch of a fresh 64 MiB array: ${f(c.firstTouchMsPer64MiB, 0)} ms; chain attempts (bw parents of A B C D): in-process ${c.inProcess.attempts.map((a) => a.join('')).join(', ')}${c.processes !== undefined ? `; processes ${c.processes.attempts.map((a) => a.join('')).join(', ')}` : ''}`)
    out.push('')
  }
  if (r.latency !== undefined) {
    out.push('## 1-byte broadcasts on stable trees (medians)')
    out.push('| network | peers | quiet after s | idle CPU cores | idle loop delay p50 / p99 ms | done ms | CPU ms per broadcast | last delivery ms | depth | hop ms (intra / inter) | probe hop ms | path ms | depth x hop ms | done / path | delivery / path | propagation ms | delivery / propagation | done / 2 x propagation |')
    out.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
    for (const l of r.latency) {
      const m = l.median
      out.push(`| ${l.network} | ${l.peers} | ${f(l.stableMs / 1000, 1)} | ${f(l.idleCpuCores, 2)} | ${f(l.eventLoopDelayMs.idle.p50, 1)} / ${f(l.eventLoopDelayMs.idle.p99, 1)} | ${f(m.doneMs, 2)} | ${f(m.cpuMs, 1)} | ${f(m.deliverMs, 2)} | ${f(m.depth, 1)} | ${f(l.hopMs.intra, 3)} / ${f(l.hopMs.inter, 2)} | ${f(l.probeHopMs, 2)} | ${f(m.pathMs, 2)} | ${f(m.depthTimesHopMs, 2)} | ${f(m.doneOverPath, 2)} | ${f(m.deliverOverPath, 2)} | ${f(m.propagationMs, 0)} | ${f(m.deliverOverPropagation, 2)} | ${f(m.doneOverTwicePropagation, 2)} |`)
    }
    out.push('')
  }
  if (r.memory !== undefined) {
    out.push('## memory (fresh process each; MB per peer, KB per connection end)')
    out.push('| kind | N | started: RSS / heap MB per peer | stable: RSS / heap MB per peer | connection ends | per end: RSS / heap KB | quiet after s |')
    out.push('|---|---|---|---|---|---|---|')
    for (const x of r.memory) {
      out.push(`| ${x.kind} | ${x.n} | ${f(x.startedPerPeer.rssMB, 2)} / ${f(x.startedPerPeer.heapMB, 2)} | ${f(x.stablePerPeer.rssMB, 2)} / ${f(x.stablePerPeer.heapMB, 2)} | ${x.connectionEnds} | ${f(x.perConnectionEnd.rssKB, 0)} / ${f(x.perConnectionEnd.heapKB, 0)} | ${f(x.stableMs / 1000, 1)} |`)
    }
  }
  console.log(out.join('\n'))
}

const PARTS = ['chain', 'latency', 'memory'] as const

const program = new Command()
  .name('bench-net')
  .description('treecast on real libp2p: pipelined chain vs one stream, 1-byte broadcast latency, memory')
  .argument('[parts...]', `${PARTS.join(', ')} (default: all)`)
  .option('--reps <n>', 'chain: repetitions (raw and chain alternate)', '3')
  .option('--mb <n>', 'chain: payload in MiB', '64')
  .option('--cap-mbps <n>', 'chain: rate of the pairs off the chain, MB/s', '1')
  .option('--vnodes <n>', 'chain: virtual nodes', '16')
  .option('--chain-attempts <n>', 'chain: overlays founded at most until the bw tree is a chain', '5')
  .option('--no-procs', 'chain: skip the 4-process chain')
  .option('--nodes <n>', 'latency: peers', '32')
  .option('--broadcasts <n>', 'latency: 1-byte broadcasts per network', '20')
  .option('--vnodes-per-peer <n>', 'latency, memory: virtual nodes per peer', '8')
  .option('--wan-delay-ms <n>', 'latency: one-way delay between clusters', '10')
  .option('--heartbeat-ms <n>', 'latency: heartbeatIntervalMs of the peers (failure detection 3x, at least 5 s)', '1000')
  .option('--steady-probe-ms <n>', "all parts: the core's steadyProbeIntervalMs; 0 = off (trees stay as built), 'node' = the node's default (probes keep changing the trees)", '0')
  .option('--ping-edges <n>', 'latency: tree edges pinged per class', '8')
  .option('--pings <n>', 'latency: ping-pongs per edge', '20')
  .option('--stable-timeout <ms>', 'longest wait for the peers to stop probing', '90000')
  .option('--mem-nodes <list>', 'memory: treecast peer counts', '8,16,32')
  .option('--mesh-nodes <n>', 'memory: libp2p hosts in a full mesh', '16')
  .option('--mem-settle <ms>', 'memory: wait after quiet before measuring', '2000')
  .option('--seed <n>', 'broadcast roots', '1')
  .option('--json', 'print only the JSON report on stdout')
  .option('--out <file>', 'also write the JSON report to this file')
  // internal: the parts run in fresh child processes
  .option('--mem-n <n>', 'overlay-child, mesh-child: N', '8')
  .option('--wan', 'overlay-child: on the emulator')
  .option('--latency', 'overlay-child: also the 1-byte broadcasts')
  .action(async (parts: string[], raw: Record<string, string | boolean>) => {
    installLibp2pGuard()
    const num = (k: string): number => Number(raw[k])
    const o: Options = {
      reps: num('reps'),
      mb: num('mb'),
      capMBps: num('capMbps'),
      vnodes: num('vnodes'),
      chainAttempts: num('chainAttempts'),
      procs: raw.procs !== false,
      nodes: num('nodes'),
      broadcasts: num('broadcasts'),
      vnodesPerPeer: num('vnodesPerPeer'),
      wanDelayMs: num('wanDelayMs'),
      heartbeatMs: num('heartbeatMs'),
      steadyProbeMs: raw.steadyProbeMs === 'node' ? NaN : num('steadyProbeMs'),
      pingEdges: num('pingEdges'),
      pings: num('pings'),
      stableTimeoutMs: num('stableTimeout'),
      memNodes: String(raw.memNodes).split(',').map(Number),
      meshNodes: num('meshNodes'),
      memSettleMs: num('memSettle'),
      seed: num('seed'),
      json: raw.json === true
    }
    if (parts[0] === 'overlay-child' || parts[0] === 'mesh-child') {
      const result = parts[0] === 'mesh-child'
        ? await meshChild(num('memN'))
        : await overlayChild(o, num('memN'), raw.wan === true, raw.latency === true)
      process.stdout.write(JSON.stringify({ ev: 'result', result }) + '\n')
      process.exit(0)
    }
    const selected = parts.length === 0 ? [...PARTS] : parts
    for (const p of selected) if (!(PARTS as readonly string[]).includes(p)) throw new Error(`unknown part '${p}' (${PARTS.join(', ')})`)
    const report: Report = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: (await import('node:os')).cpus().length,
      command: `npm run bench:net -- ${process.argv.slice(2).join(' ')}`.trim()
    }
    const t0 = performance.now()
    if (selected.includes('chain')) report.chain = await chainPart(o)
    const memoryDone: MemoryChildResult[] = []
    if (selected.includes('latency')) {
      // Each network in a fresh process; the loopback one also gives the memory figure for its N.
      report.latency = []
      for (const wan of [false, true]) {
        const r = await inChild('overlay-child', ['--mem-n', String(o.nodes), '--latency', ...(wan ? ['--wan'] : [])], o, 600_000)
        report.latency.push(r.latency as LatencyReport)
        if (!wan) memoryDone.push(r.memory as MemoryChildResult)
      }
    }
    if (selected.includes('memory')) report.memory = await memoryPart(o, memoryDone)
    log(`total ${((performance.now() - t0) / 1000).toFixed(0)} s`)
    if (typeof raw.out === 'string') writeFileSync(raw.out, JSON.stringify(report, null, 2) + '\n')
    if (o.json) console.log(JSON.stringify(report, null, 2))
    else printTable(report)
    process.exit(0)
  })

await program.parseAsync()
