/**
 * The summary of a comparison: tables (1 KB latency percentiles, completion per size,
 * messages and bytes per broadcast, completeness, what happened past gossipsub's size
 * limit) and the issue-5 targets, judged on the points of the same run.
 */
import type { Table, TargetCheck } from '../harness/types.ts'
import type { Point } from './points.ts'
import { median, percentile, round } from './stats.ts'

const SYSTEMS = ['treecast', 'gossipsub'] as const

/** gossipsub's RPC frame limit and the bytes an RPC adds to a payload. */
export interface Limit { limitBytes: number, overheadBytes: number }

/** The sizes measured, smallest first, with the systems that sent each. */
function sizesOf (points: readonly Point[]): Array<{ size: string, bytes: number }> {
  const seen = new Map<string, number>()
  for (const p of points) if (p.phase === 'measure') seen.set(p.size, p.bytes)
  return [...seen.entries()].map(([size, bytes]) => ({ size, bytes })).sort((a, b) => a.bytes - b.bytes)
}

const measured = (points: readonly Point[], system: string, size: string): Point[] =>
  points.filter((p) => p.phase === 'measure' && p.system === system && p.size === size)

/** Median completion of the messages (Infinity when any message did not reach every peer). */
function medianCompletion (ps: readonly Point[]): number {
  if (ps.length === 0) return NaN
  return median(ps.map((p) => p.completionMs ?? Infinity))
}

const fmt = (x: number): string => Number.isNaN(x) ? '–' : x === Infinity ? 'not delivered' : x.toFixed(1)
/** `fmt` with a unit when it is a number. */
const ms = (x: number): string => Number.isFinite(x) ? `${x.toFixed(1)} ms` : fmt(x)

function latencyTable (points: readonly Point[]): Table {
  const rows = SYSTEMS.map((s) => {
    const ps = measured(points, s, '1 KB')
    const arrivals = ps.flatMap((p) => p.arrivalsMs.filter((x): x is number => x !== null))
    return [s, ps.length, arrivals.length, round(percentile(arrivals, 50), 2), round(percentile(arrivals, 90), 2),
      round(percentile(arrivals, 99), 2), round(percentile(arrivals, 100), 2), round(medianCompletion(ps), 2)]
  })
  return {
    title: '1 KB delivery latency: per-peer arrival after the publish call (ms)',
    columns: ['system', 'messages', 'arrivals', 'p50', 'p90', 'p99', 'max', 'median completion'],
    rows,
    notes: ['Arrival = the receiving peer\'s delivery event (treecast `deliver`, gossipsub `message`), on the one clock of this process; the root itself is not counted.']
  }
}

function completionTable (points: readonly Point[], peers: number): Table {
  const rows = sizesOf(points).map(({ size, bytes }) => {
    const t = medianCompletion(measured(points, 'treecast', size))
    const g = medianCompletion(measured(points, 'gossipsub', size))
    const range = (s: string): string => {
      const xs = measured(points, s, size).map((p) => p.completionMs ?? Infinity)
      return xs.length === 0 ? '–' : `${fmt(Math.min(...xs))} – ${fmt(Math.max(...xs))}`
    }
    const mbps = (ms: number): number | null => round(bytes * (peers - 1) / 1e6 / (ms / 1000), 2)
    const trees = measured(points, 'treecast', size).map((p) => p.tree).filter((x) => x !== null)
    const shape = trees.length === 0 ? '–' : `${trees[0]?.kind ?? ''}: depth ${median(trees.map((x) => x.depth ?? NaN))}, ${median(trees.map((x) => x.wanEdges))} inter-cluster edges, ${median(trees.map((x) => x.rootChildren))} root children`
    return [size, fmt(t), range('treecast'), fmt(g), range('gossipsub'), round(g / t, 2), mbps(t), mbps(g), shape]
  })
  return {
    title: 'Completion time per size: until every peer has the message (ms, median over messages)',
    columns: ['size', 'treecast', 'treecast min – max', 'gossipsub', 'gossipsub min – max', 'gossipsub / treecast', 'treecast MB/s', 'gossipsub MB/s', 'treecast tree (median)'],
    rows,
    notes: [
      `Throughput = payload × ${peers - 1} receivers / completion time (one message per peer per broadcast), from the medians.`,
      'gossipsub publishes with floodPublish (its default): the publisher itself sends the message to every subscribed peer it is connected to (here all of them), the mesh (D = 6) forwards it further.'
    ]
  }
}

function trafficTable (points: readonly Point[], peers: number): Table {
  const rows = sizesOf(points).flatMap(({ size, bytes }) => SYSTEMS.flatMap((s) => {
    const ps = measured(points, s, size)
    if (ps.length === 0) return []
    const b = median(ps.map((p) => p.bytesSent))
    return [[size, s, ps.length, round(median(ps.map((p) => p.writes)), 0), round(b, 0), round(b / (bytes * (peers - 1)), 2), round(median(ps.map((p) => p.rawBytes)), 0)]]
  }))
  return {
    title: 'Messages and bytes sent per broadcast (all peers, median over messages)',
    columns: ['size', 'system', 'broadcasts', 'stream writes', 'bytes', 'bytes / (payload × receivers)', 'bytes before background subtraction'],
    rows,
    notes: [
      'Counted on every protocol stream of the system (libp2p metrics hook, `send` calls and their bytes), before Yamux and Noise framing; a write is one gossipsub RPC or one batch of treecast frames.',
      'Window: from the publish call to the next message of the same system; background (treecast heartbeats, gossipsub heartbeat traffic) measured while idle and subtracted.'
    ]
  }
}

function completenessTable (points: readonly Point[]): Table {
  const rows = sizesOf(points).flatMap(({ size }) => SYSTEMS.flatMap((s) => {
    const ps = measured(points, s, size)
    if (ps.length === 0) return []
    const f = ps.map((p) => p.completeness)
    return [[size, s, ps.length, ps.filter((p) => p.completeness === 1).length, round(f.reduce((a, b) => a + b, 0) / f.length, 3), round(Math.min(...f), 3)]]
  }))
  return { title: 'Delivery completeness (fraction of the other peers that got the message)', columns: ['size', 'system', 'broadcasts', 'complete', 'mean fraction', 'min fraction'], rows }
}

function limitTable (points: readonly Point[], limit: Limit): Table | undefined {
  const over = points.filter((p) => p.system === 'gossipsub' && p.bytes + limit.overheadBytes > limit.limitBytes)
  if (over.length === 0) return undefined
  const after = points.filter((p) => p.phase === 'after-limit')
  const call = (p: Point): string => p.publishError ?? (p.publishRecipients === null ? 'started' : `resolved, recipients ${p.publishRecipients}`)
  const rows = [
    ...over.map((p) => [`gossipsub ${p.size} #${p.seq}`, p.root, call(p), `${p.delivered}/${p.expected}`, p.rawBytes, p.stalled ? 'nothing more arrived: gave up' : 'complete']),
    ...after.map((p) => [`${p.system} 1 KB after it #${p.seq}`, p.root, call(p), `${p.delivered}/${p.expected}`, p.rawBytes, p.stalled ? 'nothing more arrived: gave up' : 'complete'])
  ]
  return {
    title: `Past gossipsub's default size limit (${limit.limitBytes} bytes per RPC frame, so at most ${limit.limitBytes - limit.overheadBytes} payload bytes)`,
    columns: ['message', 'root', 'publish call', 'delivered', 'bytes sent in its window', 'outcome'],
    rows,
    notes: [
      'gossipsub refuses the message at the publisher, silently: its length-prefix encoder throws InvalidDataLengthError for every peer, sendRpc catches and logs it, and publish() resolves normally with `recipients: []` (no exception, no event). Nothing is sent; the message id still goes to the publisher\'s seen cache and message cache, so it is advertised in IHAVE gossip and the IWANT answers fail the same way (the few bytes counted).',
      'An application that does not check `recipients.length` loses the message without noticing. A receiver with a larger limit would not help: the sender\'s encoder enforces the same default. The 1 KB messages sent afterwards show that gossipsub itself keeps working.'
    ]
  }
}

/** Every table of the summary. */
export function tablesOf (points: readonly Point[], peers: number, limit: Limit): Table[] {
  const limitRows = limitTable(points, limit)
  return [latencyTable(points), completionTable(points, peers), trafficTable(points, peers), completenessTable(points), ...(limitRows !== undefined ? [limitRows] : [])]
}

/** The issue-5 targets against gossipsub. */
export function targetsOf (points: readonly Point[]): TargetCheck[] {
  const out: TargetCheck[] = []
  for (const { size } of sizesOf(points)) {
    const tc = measured(points, 'treecast', size)
    const gs = measured(points, 'gossipsub', size)
    if (tc.length === 0 || gs.length === 0) continue
    const t = medianCompletion(tc)
    const g = medianCompletion(gs)
    let met = t < g
    let measuredText = `median completion: treecast ${ms(t)}, gossipsub ${ms(g)}`
    if (size === '1 KB') {
      const arr = (ps: Point[]): number[] => ps.flatMap((p) => p.arrivalsMs.filter((x): x is number => x !== null))
      const tp = percentile(arr(tc), 50)
      const gp = percentile(arr(gs), 50)
      met = met && tp < gp
      measuredText = `p50 arrival: treecast ${ms(tp)}, gossipsub ${ms(gp)}; ${measuredText}`
    }
    if (gs.some((p) => p.publishRecipients === 0 && p.delivered === 0)) measuredText += ' (gossipsub sent it to nobody: over its size limit)'
    out.push({ target: `treecast lower latency than gossipsub at ${size}`, measured: measuredText, met })
  }
  const t1 = medianCompletion(measured(points, 'treecast', '1 MB'))
  const g1 = medianCompletion(measured(points, 'gossipsub', '1 MB'))
  if (!Number.isNaN(t1) && !Number.isNaN(g1)) {
    const ratio = g1 / t1
    out.push({
      target: 'at least 3x gossipsub\'s throughput at 1 MB (one message per peer per broadcast)',
      measured: `${Number.isFinite(ratio) ? `${ratio.toFixed(2)}x` : 'gossipsub did not deliver'} (median completion treecast ${ms(t1)}, gossipsub ${ms(g1)})`,
      met: ratio >= 3
    })
  }
  return out
}
