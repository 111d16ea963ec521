/**
 * scale: simulator cost and tree quality from 100 to 2,000 peers in 4 clusters. Per size:
 * a cold start, then a 1-byte and a 4 MB broadcast from p0000 once the trees had time to
 * settle; wall time, heap, probes per peer, time to stable trees, tree shape, and both
 * broadcasts against the lower bounds of the modelled network (experiments/baselines).
 *
 * The simulator's cost grows faster than linearly (see BENCHMARKS.md), so sizes run in
 * increasing order and a size whose wall time, extrapolated from the sizes already run, would
 * exceed `SIZE_BUDGET_MS` is reported as not run, with the estimate; `--max-peers` caps the
 * sizes outright.
 */
import { lowerBounds } from '../baselines/index.ts'
import type { Scenario } from '../sim/scenario.ts'
import type { Experiment, ExperimentContext, ExperimentResult } from '../harness/types.ts'
import { PAPER_LINKS, fmt, integrity, paperTopology, ratio, runSim, withCore } from './common.ts'

const SIZES = [100, 200, 500, 1000, 2000]
const QUICK_SIZES = [16, 32]
const CLUSTERS = 4
const LONG_BYTES = 4 * 1024 * 1024
/** Wall-time budget of one size; larger sizes are estimated and skipped past it. */
export const SIZE_BUDGET_MS = 600_000
/** Growth exponent assumed before two sizes are measured (cold start ~ n^3 measured at 100 -> 200 peers). */
const DEFAULT_GROWTH = 3

/** When the broadcasts start: time for the trees to settle, longer for more peers. */
function settleMs (peers: number): number {
  return Math.max(5000, 40 * peers)
}

function scenario (peers: number): Scenario {
  const at = settleMs(peers)
  return {
    name: `scale-${peers}`,
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

async function run (ctx: ExperimentContext): Promise<ExperimentResult> {
  const sizes = ctx.quick ? QUICK_SIZES : SIZES
  const maxPeers = ctx.maxPeers ?? Infinity
  const bar = ctx.progress(sizes.length, 'scale')
  const points: Array<Record<string, unknown>> = []
  const rows: Row[] = []
  const notes: string[] = []
  const measured: Array<{ peers: number, wallMs: number }> = []
  let violations = 0
  for (const peers of sizes) {
    const skip = skipReason(peers, maxPeers, measured)
    if (skip !== null) {
      points.push({ peers, status: 'not run', reason: skip })
      rows.push([peers, 'not run', null, null, null, null, null, null, null, null, null])
      notes.push(`${peers} peers not run: ${skip}`)
      bar.tick(1, `${peers} peers skipped`)
      continue
    }
    bar.tick(0, `${peers} peers`)
    const sc = withCore(ctx, scenario(peers))
    const { sim, report, wallMs, heapMB } = runSim(sc, ctx.seed)
    const sound = integrity(report, sc, ctx.outDir)
    notes.push(...sound.notes.map((n) => `${peers} peers: ${n}`))
    violations += report.violations.length
    measured.push({ peers, wallMs })
    const short = report.broadcasts.find((b) => b.bytes === 1)
    const long = report.broadcasts.find((b) => b.bytes === LONG_BYTES)
    const lbShort = lowerBounds(sc.topology, 0, 1)
    const lbLong = lowerBounds(sc.topology, 0, LONG_BYTES)
    const shape = sim.treeShape('p0000')
    const point = {
      peers,
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
      longMs: long?.durationMs ?? null,
      longDelivered: long?.delivered ?? 0,
      longLowerBoundMs: lbLong.bandwidthMs,
      longRatio: ratio(long?.durationMs, lbLong.bandwidthMs),
      latTree: shape.lat,
      bwTree: shape.bw
    }
    points.push(point)
    rows.push([peers, fmt(wallMs / 1000, 1), point.heapMB, point.firstStableMs, point.probesPerPeer, point.shortMs, point.shortRatio, point.longMs, point.longRatio, `${shape.lat.depth} / ${shape.bw.depth}`, `${shape.lat.wanEdges} / ${shape.bw.wanEdges}`])
    if (point.firstStableMs === null || point.firstStableMs > point.broadcastsAtMs) notes.push(`${peers} peers: trees not stable when the broadcasts started at ${point.broadcastsAtMs} ms`)
    bar.tick(1, `${peers} peers: ${fmt(wallMs / 1000, 1)} s wall`)
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
      core: 'defaults (overlay/config.ts)',
      root: 'p0000',
      broadcasts: `1 B at max(5 s, 40 ms x peers), then ${LONG_BYTES} B 200 ms later`,
      heap: 'process heapUsed right after the run, the simulation still referenced (not the peak)',
      lowerBounds: 'experiments/baselines lowerBounds: largest one-way delay (1 B), bytes / min cut (4 MB)'
    },
    points,
    tables: [{
      title: `Simulator cost and tree quality, ${CLUSTERS} clusters (seed ${ctx.seed})`,
      columns: ['peers', 'wall s', 'heap MB', 'first stable ms', 'probes/peer', '1 B ms', '1 B / bound', '4 MB ms', '4 MB / bound', 'depth lat / bw', 'WAN edges lat / bw'],
      rows,
      notes: [...notes, 'bound: the lower bound of the modelled network for a broadcast from p0000; ratio 1 is optimal', 'tree columns: the trees of root p0000 at the end of the run']
    }],
    plots: [
      {
        id: 'cost',
        title: 'Simulator wall time against peers',
        spec: {
          width: 480,
          height: 300,
          data: { values: ran.map((p) => ({ peers: p.peers, wallS: (p.wallMs as number) / 1000 })) },
          mark: { type: 'line', point: true },
          encoding: {
            x: { field: 'peers', type: 'quantitative', scale: { type: 'log' } },
            y: { field: 'wallS', type: 'quantitative', scale: { type: 'log' }, title: 'wall time (s)' }
          }
        }
      },
      {
        id: 'quality',
        title: 'Broadcast completion over the lower bound',
        spec: {
          width: 480,
          height: 300,
          data: { values: ran.flatMap((p) => [{ peers: p.peers, size: '1 B', ratio: p.shortRatio }, { peers: p.peers, size: '4 MB', ratio: p.longRatio }]).filter((d) => d.ratio !== null) },
          mark: { type: 'line', point: true },
          encoding: {
            x: { field: 'peers', type: 'quantitative', scale: { type: 'log' } },
            y: { field: 'ratio', type: 'quantitative', title: 'completion / lower bound' },
            color: { field: 'size', type: 'nominal' }
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
