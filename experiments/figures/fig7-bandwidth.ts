/**
 * fig7-bandwidth (003 Fig. 7): broadcast bandwidth (bytes x peers / completion time) from
 * 32 KB to 64 MB, 137 peers in 4 clusters. One cold start, then the broadcasts one after
 * another from p0000, spaced so they do not overlap (checked): treecast with the default
 * 256 KB switch point (latency tree below, bandwidth tree from there on) and with the
 * bandwidth tree forced, every baseline on the same topology, and the min-cut bound.
 */
import { broadcast, lowerBounds } from '../baselines/index.ts'
import type { Scenario } from '../sim/scenario.ts'
import type { Experiment, ExperimentContext, ExperimentResult, TargetCheck } from '../harness/types.ts'
import { BASELINES, IMPL_LABEL, integrity, fmt, geometric, paperTopology, ratio, runSim, sizeLabel, stabilityNote, withCore, logLogLines, runFacts } from './common.ts'

const KB = 1024
const MB = 1024 * KB
const LIST_TARGET = 0.95
const MIN_CUT_TARGET = 0.9
/** treecast's default switch point (overlay/config.ts). */
const SWITCH_POINT_BYTES = 256 * KB
/** After the last broadcast, how long the simulator may run on for it to finish (it stops as soon as it has). */
const DRAIN_MS = 60_000

function setup (quick: boolean): { peers: number, clusters: number, settleMs: number, sizes: number[] } {
  return quick
    ? { peers: 24, clusters: 4, settleMs: 5000, sizes: [32 * KB, 512 * KB, 2 * MB] }
    : { peers: 137, clusters: 4, settleMs: 20_000, sizes: geometric(32 * KB, 64 * MB, 4) }
}

/** Time left for one broadcast before the next starts: generous (0.25 MB/s), checked afterwards. */
function gapMs (bytes: number): number {
  return 2000 + bytes / 250_000 * 1000
}

interface Planned { bytes: number, tree: 'auto' | 'bw', at: number }

type Series = 'treecast' | 'treecast-bw' | (typeof BASELINES)[number]
const SERIES_LABEL: Record<Series, string> = { ...IMPL_LABEL, treecast: 'treecast (auto, 256 KB switch)', 'treecast-bw': 'treecast (bandwidth tree forced)' }

async function run (ctx: ExperimentContext): Promise<ExperimentResult> {
  const { peers, clusters, settleMs, sizes } = setup(ctx.quick)
  const topology = paperTopology(peers, clusters)
  const plan: Planned[] = []
  let at = settleMs
  for (const bytes of sizes) {
    // At and above the switch point, auto is the bandwidth tree: forcing it would repeat the measurement.
    for (const tree of bytes >= SWITCH_POINT_BYTES ? ['auto'] as const : ['auto', 'bw'] as const) {
      plan.push({ bytes, tree, at })
      at += gapMs(bytes)
    }
  }
  const scenario: Scenario = withCore(ctx, {
    name: `fig7-bandwidth-${peers}`,
    seed: ctx.seed,
    topology,
    until: (plan[plan.length - 1] as Planned).at + 1,
    drainMs: Math.max(DRAIN_MS, gapMs(sizes[sizes.length - 1] as number)),
    schedule: plan.map((p) => ({ at: p.at, do: 'broadcast' as const, root: 'p0000', bytes: p.bytes, tree: p.tree }))
  })
  const bar = ctx.progress(1 + sizes.length, `fig7-bandwidth: ${peers} peers, ${plan.length} broadcasts`)
  const { report, wallMs } = runSim(scenario, ctx.seed)
  const sound = integrity(report, scenario, ctx.outDir)
  bar.tick(1, 'treecast simulated; baselines')
  const points: Array<Record<string, unknown>> = []
  const bw = (bytes: number, ms: number | null): number | null => ms === null || ms <= 0 ? null : bytes * peers / (ms / 1000) / 1e6
  const overlaps: string[] = []
  report.broadcasts.forEach((b, i) => {
    const p = plan[i] as Planned
    const next = report.broadcasts[i + 1]
    if (next !== undefined && (b.completeMs === null || b.completeMs > next.startMs)) overlaps.push(`${sizeLabel(b.bytes)} ${p.tree}`)
    const row = { series: p.tree === 'auto' ? 'treecast' : 'treecast-bw', bytes: b.bytes, tree: b.tree, completionMs: b.durationMs, bandwidthMBps: bw(b.bytes, b.durationMs), delivered: b.delivered, missing: b.missing, duplicates: b.duplicates, messages: b.messages, bytesSent: b.bytesSent, startMs: b.startMs }
    points.push(row)
    if (p.bytes >= SWITCH_POINT_BYTES) points.push({ ...row, series: 'treecast-bw', sameRunAs: 'treecast' })
  })
  for (const bytes of sizes) {
    for (const name of BASELINES) {
      const r = broadcast(name, topology, 0, bytes)
      points.push({ series: name, bytes, completionMs: r.completionMs, bandwidthMBps: bw(bytes, r.completionMs), messages: r.messages, bytesSent: r.bytes, wanBytes: r.wanBytes, params: r.params })
    }
    const lb = lowerBounds(topology, 0, bytes)
    points.push({ series: 'min-cut', bytes, completionMs: lb.bandwidthMs, bandwidthMBps: bw(bytes, lb.bandwidthMs), minCutBytesPerSec: lb.minCutBytesPerSec, latencyMs: lb.latencyMs })
    bar.tick(1, sizeLabel(bytes))
  }
  bar.done()
  const at64 = (series: string, bytes: number): number | null => (points.find((p) => p.series === series && p.bytes === bytes)?.bandwidthMBps as number | null | undefined) ?? null
  const series: Array<Series | 'min-cut'> = ['treecast', 'treecast-bw', ...BASELINES, 'min-cut']
  const label = (s: Series | 'min-cut'): string => s === 'min-cut' ? 'min-cut bound' : SERIES_LABEL[s]
  const rows = series.map((s) => [label(s), ...sizes.map((b) => at64(s, b))])
  const largest = sizes[sizes.length - 1] as number
  const tcLargest = at64('treecast', largest)
  const ratioRows = ['treecast', 'treecast-bw', ...BASELINES].map((s) => [label(s as Series), ...sizes.map((b) => ratio(at64(s, b), at64('list', b)))])
  const vsList = ratio(tcLargest, at64('list', largest))
  const vsCut = ratio(tcLargest, at64('min-cut', largest))
  const targets: TargetCheck[] = [
    { target: `${sizeLabel(largest)} broadcast bandwidth at least ${LIST_TARGET * 100}% of List`, measured: `${fmt(tcLargest, 1)} MB/s = ${fmt((vsList ?? NaN) * 100, 1)}% of List (${fmt(at64('list', largest), 1)} MB/s)`, met: vsList !== null && vsList >= LIST_TARGET },
    { target: `${sizeLabel(largest)} broadcast bandwidth at least ${MIN_CUT_TARGET * 100}% of the min cut`, measured: `${fmt((vsCut ?? NaN) * 100, 1)}% of the min-cut bound (${fmt(at64('min-cut', largest), 1)} MB/s)`, met: vsCut !== null && vsCut >= MIN_CUT_TARGET }
  ]
  const plotValues = points.filter((p) => p.bandwidthMBps !== null && p.sameRunAs === undefined).map((p) => ({ sizeKB: (p.bytes as number) / KB, bandwidthMBps: p.bandwidthMBps, series: label(p.series as Series) }))
  return {
    parameters: {
      peers,
      clusters,
      topology,
      vnodes: 'one per peer',
      core: 'defaults (overlay/config.ts): chunkBytes 65536, switchPointBytes 262144',
      root: 'p0000',
      sizes,
      schedule: plan,
      settleMs,
      spacing: 'each broadcast gets 2 s + bytes / (0.25 MB/s) before the next starts; overlaps are checked and reported',
      bandwidth: 'bytes x peers / completion time (003 §V-A2), MB/s with MB = 1e6 bytes',
      baselines: [...BASELINES],
      baselineInit: 'defaults (experiments/baselines/types.ts: 64 KB segments, 32 B headers)',
      ...runFacts(report, sound.replay, wallMs)
    },
    points,
    tables: [
      {
        title: `Broadcast bandwidth (MB/s), ${peers} peers in ${clusters} clusters, root p0000 (seed ${ctx.seed})`,
        columns: ['implementation', ...sizes.map(sizeLabel)],
        rows,
        notes: [
          ...sound.notes,
          stabilityNote(report, settleMs),
          `treecast: ${report.totals.broadcastsComplete}/${report.totals.broadcasts} broadcasts complete, ${report.totals.lostDeliveries} lost deliveries, ${report.totals.duplicates} duplicates`,
          overlaps.length === 0 ? 'no treecast broadcast overlapped the next one' : `OVERLAPPED the next broadcast (figures disturbed): ${overlaps.join(', ')}`,
          `at ${sizeLabel(SWITCH_POINT_BYTES)} and above the auto mode is the bandwidth tree, so the forced row repeats the auto measurement there`,
          `simulator: ${fmt(wallMs / 1000, 1)} s wall`
        ]
      },
      { title: 'Bandwidth relative to List (same run)', columns: ['implementation', ...sizes.map(sizeLabel)], rows: ratioRows }
    ],
    plots: [{
      id: 'bandwidth',
      title: `Broadcast bandwidth, ${peers} peers in ${clusters} clusters`,
      spec: logLogLines(plotValues, { field: 'sizeKB', title: 'message size (KB)' }, { field: 'bandwidthMBps', title: 'bandwidth (MB/s)' }, 'series', series.map(label))
    }],
    targets: [...targets, sound.check]
  }
}

export const fig7Bandwidth: Experiment = {
  name: 'fig7-bandwidth',
  description: '003 Fig. 7: broadcast bandwidth from 32 KB to 64 MB, 137 peers in 4 clusters, every baseline and the min-cut bound',
  run
}
