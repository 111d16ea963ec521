/**
 * What the figure experiments share: 003 §V topologies, a timed simulator run, ratios and
 * the vega-lite specs of the usual plots.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ExperimentContext, TargetCheck } from '../harness/types.ts'
import type { TopologyInit } from '../sim/network.ts'
import type { Scenario } from '../sim/scenario.ts'
import { Simulation } from '../sim/simulation.ts'
import type { SimReport } from '../sim/report.ts'
import { BASELINES, type BaselineName } from '../baselines/types.ts'

/** 003 §V: RTT of a few hundred µs inside a cluster, several ms between (the simulator's defaults). */
export const PAPER_LINKS = {
  intraRttMs: 0.3,
  interRttMs: 6,
  /** 1 Gb/s NICs. */
  peerLinkBytesPerSec: 125_000_000,
  /** 100 Mb/s per cluster pair, shared: the wide area is 10x narrower than a peer's NIC. */
  wanLinkBytesPerSec: 12_500_000
} as const

/** Display names of the implementations, treecast first. */
export const IMPL_LABEL: Record<'treecast' | BaselineName, string> = {
  treecast: 'treecast',
  mpich: 'MPICH-like',
  magpie: 'MagPIe-like',
  'mpich-g2': 'MPICH-G2-like',
  list: 'List',
  model: 'model-driven (002)'
}

export { BASELINES }

/** `peers` split over `k` clusters as evenly as possible (the first ones one larger). */
export function clusterSizes (peers: number, k: number): number[] {
  return Array.from({ length: k }, (_, i) => Math.floor(peers / k) + (i < peers % k ? 1 : 0))
}

/** A 003 §V topology: `peers` in `k` clusters named a, b, c, ... */
export function paperTopology (peers: number, k: number): TopologyInit {
  const clusters = clusterSizes(peers, k).map((n, i) => ({ name: String.fromCharCode(97 + i), peers: n }))
  return { clusters, ...PAPER_LINKS }
}

/** The first peer of each cluster, as peer indices. */
export function clusterHeads (topology: TopologyInit): number[] {
  const heads: number[] = []
  let i = 0
  for (const c of topology.clusters) { heads.push(i); i += c.peers }
  return heads
}

/** The outcome of one simulator run with its cost. */
/** The scenario with the run's core options (`--steady-probe-ms`, ...) merged over its own. */
export function withCore (ctx: ExperimentContext, scenario: Scenario): Scenario {
  if (ctx.core === undefined || Object.keys(ctx.core).length === 0) return scenario
  return { ...scenario, core: { ...(scenario.core ?? {}), ...ctx.core } }
}

export interface TimedRun { sim: Simulation, report: SimReport, wallMs: number, heapMB: number }

/** Runs a scenario with `seed` and measures wall time and the heap held at the end; `progress` as `Simulation.run`'s. */
export function runSim (scenario: Scenario, seed: number, progress?: (simulatedMs: number, untilMs: number) => void): TimedRun {
  const t0 = performance.now()
  const sim = new Simulation({ ...scenario, seed }, seed)
  const report = sim.run(progress)
  const wallMs = performance.now() - t0
  return { sim, report, wallMs, heapMB: process.memoryUsage().heapUsed / 1e6 }
}

/**
 * What a run's invariant violations mean for its figures: a note for the tables, a check
 * for the targets, and the scenario saved to `outDir` so the replay command works.
 * A run with violations still reports its figures (to show what happened), flagged.
 */
export function integrity (report: SimReport, scenario: Scenario, outDir: string): { notes: string[], check: TargetCheck, replay: string } {
  mkdirSync(outDir, { recursive: true })
  const file = join(outDir, `${scenario.name}.json`)
  writeFileSync(file, JSON.stringify({ ...scenario, seed: report.seed }, null, 2) + '\n')
  const replay = `npm run --silent sim -- ${file} --seed ${report.seed}`
  const n = report.violations.length
  const notes = n === 0
    ? []
    : [`INVARIANT VIOLATIONS in the simulated run (${n}), the figures are suspect; first: ${report.violations.slice(0, 3).join('; ')}; replay: ${replay}`]
  return {
    notes,
    check: { target: 'simulated run free of invariant violations (not an issue-5 target: a precondition of the figures)', measured: n === 0 ? 'none' : `${n} violations; first: ${report.violations[0]}`, met: n === 0 },
    replay
  }
}

/** a / b, null when either is unknown or b is 0. */
export function ratio (a: number | null | undefined, b: number | null | undefined): number | null {
  if (a == null || b == null || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return null
  return a / b
}

/** A number for a table or a target string. */
export function fmt (v: number | null | undefined, digits = 2): string {
  return v == null || !Number.isFinite(v) ? 'n/a' : v.toFixed(digits)
}

/** Bytes in KB/MB as 003 writes them (32 KB, 64 MB). */
export function sizeLabel (bytes: number): string {
  if (bytes >= 1 << 20) return `${bytes / (1 << 20)} MB`
  if (bytes >= 1 << 10) return `${bytes / (1 << 10)} KB`
  return `${bytes} B`
}

/** Powers of `step` from `lo` to `hi`, with `hi` included. */
export function geometric (lo: number, hi: number, step: number): number[] {
  const out: number[] = []
  for (let v = lo; v < hi; v *= step) out.push(v)
  out.push(hi)
  return out
}

/** The note a table gets when the trees were not yet stable at the first measurement. */
export function stabilityNote (report: SimReport, firstAtMs: number): string {
  const s = report.stability.firstStableMs
  return s !== null && s <= firstAtMs
    ? `trees first stable at ${fmt(s / 1000)} s of virtual time, before the first measurement at ${fmt(firstAtMs / 1000)} s`
    : `trees NOT yet stable at the first measurement (${fmt(firstAtMs / 1000)} s; first stable ${s === null ? 'never' : `${fmt(s / 1000)} s`}): figures include tree construction`
}

/** A log-log line plot (vega-lite) of `values`, one line per `series` value, in `order`. */
export function logLogLines (values: unknown[], x: { field: string, title: string }, y: { field: string, title: string }, series: string, order: string[]): Record<string, unknown> {
  return {
    width: 560,
    height: 360,
    data: { values },
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: x.field, type: 'quantitative', scale: { type: 'log', base: 2 }, title: x.title },
      y: { field: y.field, type: 'quantitative', scale: { type: 'log' }, title: y.title },
      color: { field: series, type: 'nominal', title: null, sort: order }
    }
  }
}

/** The parameters every simulated figure records about its run: stability, integrity, replay, cost. */
export function runFacts (report: SimReport, replay: string, wallMs: number): Record<string, unknown> {
  return { treesFirstStableMs: report.stability.firstStableMs, violations: report.violations.length, replay, wallMs: Math.round(wallMs) }
}
