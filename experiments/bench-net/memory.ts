/** bench-net part 3: memory per idle treecast peer and per libp2p connection, in child processes. */
import { performance } from 'node:perf_hooks'
import type { Libp2p } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import { createRawNode } from '../bench-net-peer.ts'
import { inChild } from './children.ts'
import { gc, log, sleep, stopAll, type Options } from './common.ts'
import { foundOverlay, measureLatency, type LatencyReport } from './latency.ts'

// ---- 3. memory ----------------------------------------------------------------------------------

export interface MemSample { rss: number, heapUsed: number, external: number }
export interface MemoryChildResult {
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

export interface MemoryRow {
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

export async function memNow (): Promise<MemSample> {
  for (let i = 0; i < 3; i++) { gc(); await sleep(50) }
  const m = process.memoryUsage()
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external }
}

/**
 * Runs in a fresh child process run with --expose-gc (`overlay-child`): N treecast peers
 * found an overlay (memory before, once started, once quiet), then, with `latency`, the
 * 1-byte broadcasts; or (`mesh-child`) N plain libp2p hosts connected in a full mesh.
 */
export async function overlayChild (o: Options, n: number, wan: boolean, latency: boolean): Promise<{ memory: MemoryChildResult, latency?: LatencyReport }> {
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

export async function meshChild (n: number): Promise<MemoryChildResult> {
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

export function memoryRow (r: MemoryChildResult): MemoryRow {
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

export async function memoryPart (o: Options, have: readonly MemoryChildResult[]): Promise<MemoryRow[]> {
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
