/**
 * fig8-reduction (003 Fig. 8): reduction time against array length, 128 peers in 3
 * clusters, root p0000, one virtual node per peer. treecast (simulator), started by its
 * root and collective (every peer calls it), against every baseline on the same topology.
 *
 * Element size: treecast's partial results are Float64Arrays, sized on the wire as their raw
 * bytes (overlay/codec.ts `wireSize`: 8 bytes per element plus the header), so the
 * baselines run with `elementBytes: 8`. A partial result travels in one frame and the real
 * codec's frame limit is 1 MiB + 64 KiB (overlay/codec.ts), so the longest array here is
 * 2^17 elements (1 MiB): longer ones would run in the simulator (it does not decode) but
 * not on a real node.
 */
import { lowerBounds, reduce } from '../baselines/index.ts'
import type { Scenario } from '../sim/scenario.ts'
import type { Experiment, ExperimentContext, ExperimentResult, TargetCheck } from '../harness/types.ts'
import { BASELINES, IMPL_LABEL, integrity, fmt, geometric, paperTopology, ratio, runSim, stabilityNote, withCore, logLogLines, runFacts } from './common.ts'

const MAGPIE_TARGET = 1.3
/** The points of collective reductions (every peer calls them). */
const COLLECTIVE = 'treecast-collective'
const COLLECTIVE_LABEL = 'treecast, collective'
const ELEMENT_BYTES = 8
const MAX_LENGTH = 1 << 17
/** After the last reduction, how long the simulator may run on for it to finish (it stops as soon as it has). */
const DRAIN_MS = 60_000

function setup (quick: boolean): { peers: number, clusters: number, settleMs: number, lengths: number[] } {
  return quick
    ? { peers: 24, clusters: 3, settleMs: 5000, lengths: [1, 256, 16_384] }
    : { peers: 128, clusters: 3, settleMs: 20_000, lengths: geometric(1, MAX_LENGTH, 4) }
}

/** Time left for one reduction before the next starts: generous (0.25 MB/s of partials), checked afterwards. */
function gapMs (length: number): number {
  return 1000 + length * ELEMENT_BYTES / 250_000 * 1000
}

async function run (ctx: ExperimentContext): Promise<ExperimentResult> {
  const { peers, clusters, settleMs, lengths } = setup(ctx.quick)
  const topology = paperTopology(peers, clusters)
  // Per length, a started reduction (the root sends the start down its latency tree) and
  // then a collective one (every peer calls it at the same instant, like the baselines'
  // MPI processes, and leaves send first: 003 §IV-E), on the same trees.
  const starts: number[] = []
  const collStarts: number[] = []
  let at = settleMs
  for (const length of lengths) { starts.push(at); at += gapMs(length); collStarts.push(at); at += gapMs(length) }
  const scenario: Scenario = withCore(ctx, {
    name: `fig8-reduction-${peers}`,
    seed: ctx.seed,
    topology,
    until: (collStarts[collStarts.length - 1] as number) + 1,
    drainMs: Math.max(DRAIN_MS, gapMs(lengths[lengths.length - 1] as number)),
    schedule: lengths.flatMap((length, i) => [
      { at: starts[i] as number, do: 'reduce' as const, root: 'p0000', op: 'sum', length },
      { at: collStarts[i] as number, do: 'reduce' as const, root: 'p0000', op: 'sum', length, collective: true }
    ])
  })
  const bar = ctx.progress(1 + lengths.length, `fig8-reduction: ${peers} peers, ${lengths.length} reductions`)
  const { report, wallMs } = runSim(scenario, ctx.seed)
  const sound = integrity(report, scenario, ctx.outDir)
  bar.tick(1, 'treecast simulated; baselines')
  const points: Array<Record<string, unknown>> = []
  const overlaps: string[] = []
  report.reductions.forEach((r, i) => {
    const next = report.reductions[i + 1]
    if (next !== undefined && (r.durationMs === null || r.startMs + r.durationMs > next.startMs)) overlaps.push(String(r.length))
    points.push({ impl: r.collective !== undefined ? COLLECTIVE : 'treecast', elements: r.length, bytes: r.length * ELEMENT_BYTES, timeMs: r.complete ? r.durationMs : null, rawDurationMs: r.durationMs, complete: r.complete, correct: r.correct, startMs: r.startMs })
  })
  for (const length of lengths) {
    for (const name of BASELINES) {
      const r = reduce(name, topology, 0, length, { elementBytes: ELEMENT_BYTES })
      points.push({ impl: name, elements: length, bytes: length * ELEMENT_BYTES, timeMs: r.completionMs, messages: r.messages, bytesSent: r.bytes, wanBytes: r.wanBytes, params: r.params })
    }
    const lb = lowerBounds(topology, 0, length * ELEMENT_BYTES)
    points.push({ impl: 'lower-bound', elements: length, bytes: length * ELEMENT_BYTES, timeMs: Math.max(lb.latencyMs, lb.bandwidthMs), latencyMs: lb.latencyMs, bandwidthMs: lb.bandwidthMs })
    bar.tick(1, `${length} elements`)
  }
  bar.done()
  const time = (impl: string, length: number): number | null => (points.find((p) => p.impl === impl && p.elements === length)?.timeMs as number | null | undefined) ?? null
  const impls = ['treecast', COLLECTIVE, ...BASELINES] as const
  const label = (impl: typeof impls[number]): string => impl === COLLECTIVE ? COLLECTIVE_LABEL : IMPL_LABEL[impl]
  const rows = impls.map((impl) => [label(impl), ...lengths.map((l) => time(impl, l))])
  rows.push(['bound (broadcast bounds, see notes)', ...lengths.map((l) => time('lower-bound', l))])
  const ratioRows = impls.map((impl) => [label(impl), ...lengths.map((l) => ratio(time(impl, l), time('magpie', l)))])
  const targets: TargetCheck[] = (['treecast', COLLECTIVE] as const).map((impl) => {
    const vsMagpie = lengths.map((l) => ratio(time(impl, l), time('magpie', l)))
    const worst = vsMagpie.reduce<{ r: number, l: number } | null>((w, r, i) => r === null ? w : w === null || r > w.r ? { r, l: lengths[i] as number } : w, null)
    const metCount = vsMagpie.filter((r) => r !== null && r <= MAGPIE_TARGET).length
    return {
      target: `reduction time within ${MAGPIE_TARGET}x of MagPIe-like (every array length), ${impl === COLLECTIVE ? 'collective reductions' : 'started reductions'}`,
      measured: `${label(impl)} / MagPIe-like within the target at ${metCount}/${lengths.length} lengths; worst ${fmt(worst?.r)} at ${worst?.l ?? 'n/a'} elements`,
      met: metCount === lengths.length
    }
  })
  const plotValues = points.filter((p) => p.timeMs !== null && p.impl !== 'lower-bound').map((p) => ({ elements: p.elements, timeMs: p.timeMs, impl: label(p.impl as 'treecast') }))
  return {
    parameters: {
      peers,
      clusters,
      topology,
      vnodes: 'one per peer',
      core: 'defaults (overlay/config.ts)',
      root: 'p0000',
      op: 'sum',
      lengths,
      elementBytes: ELEMENT_BYTES,
      elementSize: 'Float64Array partials: 8 bytes per element on the wire (overlay/codec.ts wireSize); baselines run with elementBytes 8',
      maxLength: `${MAX_LENGTH}: a partial result is one frame and the real codec allows 1 MiB + 64 KiB per frame`,
      starts,
      collectiveStarts: collStarts,
      collective: 'a collective reduction after each started one: every running peer calls it at the same instant (reduceCollective), as the baselines assume',
      settleMs,
      baselines: [...BASELINES],
      ...runFacts(report, sound.replay, wallMs)
    },
    points,
    tables: [
      {
        title: `Reduction time (ms) by array length (elements of 8 B), ${peers} peers in ${clusters} clusters, root p0000 (seed ${ctx.seed})`,
        columns: ['implementation', ...lengths.map(String)],
        rows,
        notes: [
          ...sound.notes,
          stabilityNote(report, settleMs),
          `treecast: ${report.reductions.filter((r) => r.correct).length}/${report.reductions.length} reductions correct (started and collective)${report.reductions.some((r) => !r.complete) ? `; INCOMPLETE (n/a): ${report.reductions.filter((r) => !r.complete).map((r) => `${r.length} elements (${r.durationMs === null ? 'no result by the end of the run' : `result covering part of the virtual nodes after ${fmt(r.durationMs, 1)} ms`})`).join(', ')}` : ''}`,
          overlaps.length === 0 ? 'no treecast reduction overlapped the next one' : `OVERLAPPED the next reduction: lengths ${overlaps.join(', ')}`,
          'bound row: max(largest one-way delay, bytes / min cut) of a broadcast from the root; a reduction needs the mirror image, so it is a guide, not a proven bound',
          `simulator: ${fmt(wallMs / 1000, 1)} s wall`
        ]
      },
      { title: 'Reduction time relative to MagPIe-like (same run)', columns: ['implementation', ...lengths.map(String)], rows: ratioRows }
    ],
    plots: [{
      id: 'reduction',
      title: `Reduction time, ${peers} peers in ${clusters} clusters`,
      spec: logLogLines(plotValues, { field: 'elements', title: 'array length (elements of 8 B)' }, { field: 'timeMs', title: 'reduction time (ms)' }, 'impl', impls.map(label))
    }],
    targets: [...targets, sound.check]
  }
}

export const fig8Reduction: Experiment = {
  name: 'fig8-reduction',
  description: '003 Fig. 8: reduction time against array length, 128 peers in 3 clusters, every baseline',
  run
}
