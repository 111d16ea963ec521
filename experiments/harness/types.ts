/**
 * The contract of one experiment run by `npm run experiment -- <name>` (experiments/experiment.ts).
 * An experiment measures, the harness writes: `<out>/<name>.json` (every point with every
 * parameter), `<out>/<name>-<plot>.svg` (vega-lite, rendered headless), `<out>/<name>.md`
 * (the summary tables), and prints the tables.
 */
import type { CoreInit } from '../../overlay/config.ts'

/** What the harness gives an experiment. */
export interface ExperimentContext {
  /** Reduced size, the one the test suite runs. */
  readonly quick: boolean
  /** Seed of every random choice (the simulator's and the topology's). */
  readonly seed: number
  /** Directory the outputs go to (created by the harness). */
  readonly outDir: string
  /** Largest peer count to run, for experiments that sweep sizes (`scale`); larger sizes are reported as not run. */
  readonly maxPeers?: number
  /**
   * Core options for every simulated treecast peer (`--steady-probe-ms`, `--one-lane`, `--no-news`, `--detour`, `--no-download-on-demand`, `--tree-root-stride`), merged over the
   * experiment's own; simulator experiments only. @default none
   */
  readonly core?: CoreInit
  /** Progress bar: `total` steps of work. */
  progress(total: number, label: string): ProgressBar
  /** A line of narrative (goes above the progress bar, and to stderr when not a TTY). */
  log(line: string): void
}

export interface ProgressBar {
  tick(steps?: number, label?: string): void
  done(): void
}

/** One table of the summary, rendered to markdown by the harness. */
export interface Table {
  title: string
  columns: string[]
  rows: Array<Array<string | number | null>>
  /** Notes under the table (what was missed and why, caveats). */
  notes?: string[]
}

/** A target of issue 5, judged in the same run. */
export interface TargetCheck {
  target: string
  measured: string
  met: boolean
}

/** A plot: a vega-lite spec whose data values are inline; the harness renders it to `<name>-<id>.svg`. */
export interface Plot {
  id: string
  title: string
  spec: Record<string, unknown>
}

/** Everything an experiment returns. */
export interface ExperimentResult {
  /** Every parameter picked: topology, sizes, seeds, core options. */
  parameters: Record<string, unknown>
  /** Every measured point, flat records. */
  points: Array<Record<string, unknown>>
  tables: Table[]
  plots: Plot[]
  targets: TargetCheck[]
}

export interface Experiment {
  name: string
  /** One line for `--help` and the list. */
  description: string
  run(ctx: ExperimentContext): Promise<ExperimentResult>
}
