/**
 * fig6-latency (003 Fig. 6): 1-byte broadcasts, 201 peers in 3 clusters. A cold start,
 * time for the trees to settle, then one broadcast from a peer of each cluster, 100 ms
 * apart. Arrival time at every peer for treecast (simulator) and each baseline (the same
 * topology, as fixed schedules on the same network model), completion-time ratios and the
 * latency lower bound.
 */
import { broadcast, lowerBounds } from '../baselines/index.ts'
import type { Scenario } from '../sim/scenario.ts'
import type { Experiment, ExperimentContext, ExperimentResult, TargetCheck } from '../harness/types.ts'
import { BASELINES, IMPL_LABEL, integrity, clusterHeads, fmt, paperTopology, ratio, runSim, stabilityNote, withCore, runFacts } from './common.ts'

const MAGPIE_TARGET = 1.2
const MPICH_TARGET = 4
const SPACING_MS = 100

function setup (quick: boolean): { peers: number, clusters: number, settleMs: number } {
  return quick ? { peers: 24, clusters: 3, settleMs: 5000 } : { peers: 201, clusters: 3, settleMs: 20_000 }
}

async function run (ctx: ExperimentContext): Promise<ExperimentResult> {
  const { peers, clusters, settleMs } = setup(ctx.quick)
  const topology = paperTopology(peers, clusters)
  const roots = clusterHeads(topology).map((h, i) => h + i)
  const scenario: Scenario = withCore(ctx, {
    name: `fig6-latency-${peers}`,
    seed: ctx.seed,
    topology,
    until: settleMs + SPACING_MS * roots.length,
    schedule: roots.map((r, i) => ({ at: settleMs + SPACING_MS * i, do: 'broadcast' as const, root: `p${String(r).padStart(4, '0')}`, bytes: 1 }))
  })
  const bar = ctx.progress(1 + roots.length, `fig6-latency: ${peers} peers`)
  const { sim, report, wallMs } = runSim(scenario, ctx.seed)
  const sound = integrity(report, scenario, ctx.outDir)
  bar.tick(1, 'treecast simulated; baselines')
  const impls = ['treecast', ...BASELINES] as const
  const points: Array<Record<string, unknown>> = []
  /** completion[impl][rootIndex] */
  const completion = new Map<string, Array<number | null>>(impls.map((i) => [i, []]))
  const bounds: number[] = []
  roots.forEach((root, k) => {
    const b = report.broadcasts[k]
    const arrivals = b === undefined ? undefined : sim.arrivalTimes(b.id)
    const complete = b !== undefined && b.missing === 0 && b.durationMs !== null
    completion.get('treecast')?.push(complete ? b.durationMs : null)
    arrivals?.forEach((ms, peer) => points.push({ impl: 'treecast', root, peer, arrivalMs: Number.isNaN(ms) ? null : ms }))
    for (const name of BASELINES) {
      const r = broadcast(name, topology, root, 1)
      completion.get(name)?.push(r.completionMs)
      r.arrivalMs.forEach((ms, peer) => points.push({ impl: name, root, peer, arrivalMs: ms }))
      points.push({ impl: name, root, kind: 'summary', completionMs: r.completionMs, messages: r.messages, bytes: r.bytes, wanBytes: r.wanBytes, params: r.params })
    }
    if (b !== undefined) points.push({ impl: 'treecast', root, kind: 'summary', completionMs: b.durationMs, delivered: b.delivered, missing: b.missing, duplicates: b.duplicates, messages: b.messages, bytes: b.bytesSent, startMs: b.startMs })
    bounds.push(lowerBounds(topology, root, 1).latencyMs)
    bar.tick(1)
  })
  bar.done()
  const mean = (xs: Array<number | null>): number | null => xs.some((x) => x === null) || xs.length === 0 ? null : (xs as number[]).reduce((a, b) => a + b, 0) / xs.length
  const tc = completion.get('treecast') ?? []
  const rows = impls.map((impl) => {
    const c = completion.get(impl) ?? []
    return [IMPL_LABEL[impl], ...c, mean(c), ratio(mean(c), mean(tc))]
  })
  rows.push(['lower bound (largest one-way delay)', ...bounds, mean(bounds), ratio(mean(bounds), mean(tc))])
  const magpie = completion.get('magpie') ?? []
  const mpich = completion.get('mpich') ?? []
  const vsMagpie = roots.map((_, k) => ratio(tc[k], magpie[k]))
  const mpichOver = roots.map((_, k) => ratio(mpich[k], tc[k]))
  const rootNames = roots.map((r) => `p${String(r).padStart(4, '0')}`)
  const targets: TargetCheck[] = [
    {
      target: `1-byte broadcast completion within ${MAGPIE_TARGET}x of MagPIe-like (every root)`,
      measured: `treecast / MagPIe-like = ${vsMagpie.map((x, k) => `${fmt(x)} (${rootNames[k]})`).join(', ')}`,
      met: vsMagpie.every((x) => x !== null && x <= MAGPIE_TARGET)
    },
    {
      target: `1-byte broadcast at least ${MPICH_TARGET}x faster than MPICH-like (every root)`,
      measured: `MPICH-like / treecast = ${mpichOver.map((x, k) => `${fmt(x)} (${rootNames[k]})`).join(', ')}`,
      met: mpichOver.every((x) => x !== null && x >= MPICH_TARGET)
    }
  ]
  const plotRoot = roots[0]
  return {
    parameters: {
      peers,
      clusters,
      topology,
      vnodes: 'one per peer (virtual node i on peer i)',
      core: 'defaults (overlay/config.ts)',
      bytes: 1,
      roots: rootNames,
      broadcastsAtMs: scenario.schedule.map((a) => a.at),
      settleMs,
      baselines: [...BASELINES],
      baselineInit: 'defaults (experiments/baselines/types.ts)',
      ...runFacts(report, sound.replay, wallMs),
      completion: 'ms from the start until the last peer holds the byte'
    },
    points,
    tables: [{
      title: `1-byte broadcast completion (ms), ${peers} peers in ${clusters} clusters (seed ${ctx.seed})`,
      columns: ['implementation', ...rootNames.map((r) => `root ${r}`), 'mean', 'mean / treecast'],
      rows,
      notes: [
        stabilityNote(report, settleMs),
        `treecast delivered ${report.broadcasts.map((b) => `${b.delivered}/${b.delivered + b.missing}`).join(', ')}; ${report.totals.duplicates} duplicates`,
        `treecast / MagPIe-like per root: ${vsMagpie.map((x) => fmt(x)).join(', ')}; MPICH-like / treecast per root: ${mpichOver.map((x) => fmt(x)).join(', ')}`,
        `simulator: ${fmt(wallMs / 1000, 1)} s wall`
      ]
    }],
    plots: [{
      id: 'arrivals',
      title: `1-byte broadcast from ${rootNames[0]}: arrival time at every peer (${peers} peers, ${clusters} clusters)`,
      spec: {
        data: { values: points.filter((p) => p.root === plotRoot && p.kind === undefined && p.arrivalMs !== null).map((p) => ({ ...p, impl: IMPL_LABEL[p.impl as 'treecast'] })) },
        facet: { row: { field: 'impl', type: 'nominal', title: null, sort: impls.map((i) => IMPL_LABEL[i]) } },
        spec: {
          width: 560,
          height: 140,
          mark: { type: 'point', filled: true, size: 12 },
          encoding: {
            x: { field: 'peer', type: 'quantitative', title: 'peer' },
            y: { field: 'arrivalMs', type: 'quantitative', title: 'arrival (ms)' },
            color: { field: 'impl', type: 'nominal', legend: null }
          }
        }
      }
    }],
    targets: [...targets, sound.check]
  }
}

export const fig6Latency: Experiment = {
  name: 'fig6-latency',
  description: '003 Fig. 6: 1-byte broadcasts, 201 peers in 3 clusters; arrival time at every peer, treecast against every baseline',
  run
}
