/** bench-net part 1: pipelined forwarding down a chain vs one raw libp2p stream. */
import { performance } from 'node:perf_hooks'
import type { Libp2p } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import { createTreecast, type TreecastNode } from '../../node/create-treecast.ts'
import { WanEmulator } from '../../node/wan/wan-emulator.ts'
import { CHAIN, RELAY, SINK, chainWanInit, createRawNode, makeRelay, rawTransferMs } from '../bench-net-peer.ts'
import { Child, cpuOf, cpuShares, type Json } from './children.ts'
import { MiB, PEER_SCRIPT, gc, keysAndIds, log, mbps, median, steadyCore, steadyLabel, stopAll, waitQuiet, withTimeout, type Options } from './common.ts'

// ---- 1. pipelined forwarding vs one raw stream ------------------------------------------------

export interface ChainRep {
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

export interface ChainReport {
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
export function parentLabels (ids: readonly string[], parents: ReadonlyArray<string | null>): string[] {
  return parents.map((p) => p === null ? '-' : (CHAIN[ids.indexOf(p)] ?? '?'))
}

export const isChainShape = (labels: readonly string[]): boolean => labels.join('') === '-ABC'

/**
 * 4 treecast peers founding an overlay on the chain network, until the bandwidth tree of A
 * is the chain A→B→C→D. Probing ends after a fixed number of probes (no steady-state
 * probing), so the tree it ends with depends on the order of the probes: a peer can settle
 * on a capped link when its better candidate was itself still attached elsewhere. Such an
 * overlay is stopped and a new one founded, at most `attempts` times.
 */
export async function startTreecastChain (cap: number, vnodes: number, attempts: number, steadyProbeMs: number): Promise<{ nodes: TreecastNode[], ids: string[], stableMs: number, labels: string[], tries: string[][] }> {
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

export async function startProcessChain (cap: number, vnodes: number, attempts: number, steadyProbeMs: number): Promise<{ peers: Child[], stableMs: number, labels: string[], tries: string[][], bwParents: () => Promise<string[]> }> {
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
export function firstTouchMs (): number {
  const a = new Uint8Array(64 * MiB)
  const t = performance.now()
  a.fill(1)
  return performance.now() - t
}

export async function chainPart (o: Options): Promise<ChainReport> {
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
