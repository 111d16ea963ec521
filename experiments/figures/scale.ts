/**
 * scale: simulator cost and tree quality from 100 to 2,000 peers in 4 clusters. Per size:
 * a cold start, then a 1-byte and a 4 MB broadcast from p0000 once the trees had time to
 * settle; wall time, heap, probes per peer, time to stable trees, tree shape, and both
 * broadcasts against the lower bounds of the modelled network (experiments/baselines).
 *
 * Two series: every peer a root (003), and about {@link TREE_ROOTS_TARGET} tree roots
 * (core `treeRootStride`, overlay/tree-roots.ts; p0000 is then no root and broadcasts
 * from its place in the nearest tree root's trees).
 *
 * The simulator's cost grows faster than linearly (see BENCHMARKS.md), so sizes run in
 * increasing order and a size whose wall time, extrapolated from the sizes its series
 * already ran, would exceed `SIZE_BUDGET_MS` is reported as not run, with the estimate;
 * `--max-peers` caps the sizes outright.
 */
import { lowerBounds } from '../baselines/index.ts'
import type { Scenario } from '../sim/scenario.ts'
import type { Experiment, ExperimentContext, ExperimentResult } from '../harness/types.ts'
import { PAPER_LINKS, fmt, integrity, paperTopology, ratio, runSim, withCore } from './common.ts'
import { isTreeRoot } from '../../overlay/tree-roots.ts'
import { peerName } from '../sim/simulation.ts'

const SIZES = [100, 200, 500, 1000, 2000]
const QUICK_SIZES = [16, 32]
const CLUSTERS = 4
const LONG_BYTES = 4 * 1024 * 1024
/** Wall-time budget of one size; larger sizes are estimated and skipped past it. */
export const SIZE_BUDGET_MS = 600_000
/** Growth exponent assumed before two sizes are measured (cold start ~ n^3 measured at 100 -> 200 peers). */
const DEFAULT_GROWTH = 3
/** The tree-roots series aims at about this many tree roots: stride = peers / this. */
export const TREE_ROOTS_TARGET = 32

/** The stride of the tree-roots series at `peers` (at least 2). */
export function strideFor (peers: number): number {
  return Math.max(2, Math.round(peers / TREE_ROOTS_TARGET))
}

/** When the broadcasts start: time for the trees to settle, longer for more peers. */
function settleMs (peers: number): number {
  return Math.max(5000, 40 * peers)
}

function scenario (peers: number, stride: number): Scenario {
  const at = settleMs(peers)
  return {
    name: `scale-${peers}${stride > 1 ? `-stride-${stride}` : ''}`,
    ...(stride > 1 ? { core: { treeRootStride: stride } } : {}),
    seed: 1,
    topology: paperTopology(peers, CLUSTERS),
    until: at + 300,
    schedule: [
      { at, do: 'broadcast', root: 'p0000', bytes: 1 },
      { at: at + 200, do: 'broadcast', root: 'p0000', bytes: LONG_BYTES }
    ]
  }
}

type Row = Array<string | number | null>
type Series = 'per root' | 'tree roots'
const SERIES: readonly Series[] = ['per root', 'tree roots']

async function run (ctx: ExperimentContext): Promise<ExperimentResult> {
  const sizes = ctx.quick ? QUICK_SIZES : SIZES
  const maxPeers = ctx.maxPeers ?? Infinity
  const bar = ctx.progress(2 * sizes.length, 'scale')
  const points: Array<Record<string, unknown>> = []
  const rows: Row[] = []
  const notes: string[] = []
  const measured: Record<Series, Array<{ peers: number, wallMs: number }>> = { 'per root': [], 'tree roots': [] }
  let violations = 0
  for (const peers of sizes) {
    for (const series of SERIES) {
      const stride = series === 'per root' ? 1 : strideFor(peers)
      const roots = Array.from({ length: peers }, (_, i) => peerName(i)).filter((p) => isTreeRoot(p, stride)).length
      const trees = stride === 1 ? 'every peer' : `stride ${stride}: ${roots} roots`
      const skip = skipReason(peers, maxPeers, measured[series])
      if (skip !== null) {
        points.push({ peers, series, treeRootStride: stride, treeRoots: roots, status: 'not run', reason: skip })
        rows.push([peers, trees, 'not run', null, null, null, null, null, null, null, null, null])
        notes.push(`${peers} peers, ${series}: not run: ${skip}`)
        bar.tick(1, `${peers} peers (${series}) skipped`)
        continue
      }
      bar.tick(0, `${peers} peers (${series})`)
      const sc = withCore(ctx, scenario(peers, stride))
      const { sim, report, wallMs, heapMB } = runSim(sc, ctx.seed)
      const sound = integrity(report, sc, ctx.outDir)
      notes.push(...sound.notes.map((n) => `${peers} peers, ${series}: ${n}`))
      violations += report.violations.length
      measured[series].push({ peers, wallMs })
      const short = report.broadcasts.find((b) => b.bytes === 1)
      const long = report.broadcasts.find((b) => b.bytes === LONG_BYTES)
      const lbShort = lowerBounds(sc.topology, 0, 1)
      const lbLong = lowerBounds(sc.topology, 0, LONG_BYTES)
      // The trees p0000's broadcasts took: its own, or (tree roots) those of the root it picked.
      const treeOf = report.broadcasts.find((b) => b.bytes === 1)?.treeRoot ?? 'p0000'
      const shape = sim.treeShape(treeOf)
      const point = {
        peers,
        series,
        treeRootStride: stride,
        treeRoots: roots,
        status: 'run',
        wallMs: Math.round(wallMs),
        heapMB: Math.round(heapMB),
        simulatedMs: report.simulatedMs,
        broadcastsAtMs: settleMs(peers),
        firstStableMs: report.stability.firstStableMs,
        probesPerPeer: report.probes.perPeerMean,
        messages: report.totals.messages,
        violations: report.violations.length,
        replay: sound.replay,
        shortMs: short?.durationMs ?? null,
        shortDelivered: short?.delivered ?? 0,
        shortLowerBoundMs: lbShort.latencyMs,
        shortRatio: ratio(short?.durationMs, lbShort.latencyMs),
        shortFallbackSends: short?.fallbackSends ?? null,
        longMs: long?.durationMs ?? null,
        longDelivered: long?.delivered ?? 0,
        longLowerBoundMs: lbLong.bandwidthMs,
        longRatio: ratio(long?.durationMs, lbLong.bandwidthMs),
        treeRoot: treeOf,
        latTree: shape.lat,
        bwTree: shape.bw
      }
      points.push(point)
      rows.push([peers, trees, fmt(wallMs / 1000, 1), point.heapMB, point.firstStableMs, point.probesPerPeer, point.shortMs, point.shortRatio, point.longMs, point.longRatio, `${shape.lat.depth} / ${shape.bw.depth}`, `${shape.lat.wanEdges} / ${shape.bw.wanEdges}`])
      if (point.firstStableMs === null || point.firstStableMs > point.broadcastsAtMs) notes.push(`${peers} peers, ${series}: trees not stable when the broadcasts started at ${point.broadcastsAtMs} ms`)
      bar.tick(1, `${peers} peers (${series}): ${fmt(wallMs / 1000, 1)} s wall`)
    }
  }
  bar.done()
  const ran = points.filter((p) => p.status === 'run')
  return {
    parameters: {
      sizes,
      maxPeers: Number.isFinite(maxPeers) ? maxPeers : null,
      sizeBudgetMs: SIZE_BUDGET_MS,
      clusters: CLUSTERS,
      links: PAPER_LINKS,
      vnodes: 'one per peer',
      core: 'defaults (overlay/config.ts), and in the tree-roots series treeRootStride = max(2, round(peers / 32))',
      series: { 'per root': 'every peer roots its trees (003)', 'tree roots': `about ${TREE_ROOTS_TARGET} tree roots (overlay/tree-roots.ts); p0000 broadcasts from its place in the trees of the root it picks (treeRoot)` },
      root: 'p0000',
      broadcasts: `1 B at max(5 s, 40 ms x peers), then ${LONG_BYTES} B 200 ms later`,
      heap: 'process heapUsed right after the run, the simulation still referenced (not the peak)',
      lowerBounds: 'experiments/baselines lowerBounds: largest one-way delay (1 B), bytes / min cut (4 MB)'
    },
    points,
    tables: [{
      title: `Simulator cost and tree quality, ${CLUSTERS} clusters (seed ${ctx.seed})`,
      columns: ['peers', 'trees', 'wall s', 'heap MB', 'first stable ms', 'probes/peer', '1 B ms', '1 B / bound', '4 MB ms', '4 MB / bound', 'depth lat / bw', 'WAN edges lat / bw'],
      rows,
      notes: [...notes, 'bound: the lower bound of the modelled network for a broadcast from p0000; ratio 1 is optimal', 'tree columns: at the end of the run, the trees of p0000 (per root) or of the tree root its broadcasts took (tree roots)']
    }],
    plots: [
      {
        id: 'cost',
        title: 'Simulator wall time against peers',
        spec: {
          width: 480,
          height: 300,
          data: { values: ran.map((p) => ({ peers: p.peers, series: p.series, wallS: (p.wallMs as number) / 1000 })) },
          mark: { type: 'line', point: true },
          encoding: {
            x: { field: 'peers', type: 'quantitative', scale: { type: 'log' } },
            y: { field: 'wallS', type: 'quantitative', scale: { type: 'log' }, title: 'wall time (s)' },
            color: { field: 'series', type: 'nominal' }
          }
        }
      },
      {
        id: 'quality',
        title: 'Broadcast completion over the lower bound',
        spec: {
          width: 480,
          height: 300,
          data: { values: ran.flatMap((p) => [{ peers: p.peers, run: `1 B, ${String(p.series)}`, ratio: p.shortRatio }, { peers: p.peers, run: `4 MB, ${String(p.series)}`, ratio: p.longRatio }]).filter((d) => d.ratio !== null) },
          mark: { type: 'line', point: true },
          encoding: {
            x: { field: 'peers', type: 'quantitative', scale: { type: 'log' } },
            y: { field: 'ratio', type: 'quantitative', title: 'completion / lower bound' },
            color: { field: 'run', type: 'nominal' }
          }
        }
      }
    ],
    targets: [{ target: 'simulated runs free of invariant violations (a precondition of the figures)', measured: violations === 0 ? 'none' : `${violations} violations`, met: violations === 0 }]
  }
}

/** Why `peers` is not run, or null. */
function skipReason (peers: number, maxPeers: number, measured: ReadonlyArray<{ peers: number, wallMs: number }>): string | null {
  if (peers > maxPeers) return `above --max-peers ${maxPeers}`
  const last = measured[measured.length - 1]
  if (last === undefined) return null
  const prev = measured[measured.length - 2]
  const growth = prev === undefined ? DEFAULT_GROWTH : Math.max(1, Math.log(last.wallMs / prev.wallMs) / Math.log(last.peers / prev.peers))
  const estimateMs = last.wallMs * (peers / last.peers) ** growth
  if (estimateMs <= SIZE_BUDGET_MS) return null
  return `estimated ${fmt(estimateMs / 1000, 0)} s wall (${fmt(last.wallMs / 1000, 1)} s at ${last.peers} peers, growth ~n^${fmt(growth, 1)}) > the ${SIZE_BUDGET_MS / 1000} s budget per size`
}

export const scale: Experiment = {
  name: 'scale',
  description: 'simulator cost and tree quality, 100 to 2,000 peers in 4 clusters: wall time, heap, probes, stability, broadcasts against the lower bounds',
  run
}
