/**
 * Runs one experiment: gives it a context (seed, quick, progress), times it, writes its
 * outputs and prints its tables and targets. Used by experiments/experiment.ts and the tests.
 */
import { resolve } from 'node:path'
import { progressSink, type ProgressSink } from './progress.ts'
import { targetsMarkdown, writeOutputs, type Written } from './output.ts'
import { tableMarkdown } from './table.ts'
import type { CoreInit } from '../../overlay/config.ts'
import type { Experiment, ExperimentResult } from './types.ts'

export interface RunOptions {
  quick: boolean
  seed: number
  outDir: string
  /** Largest peer count for size sweeps (`scale`). */
  maxPeers?: number
  /** Core options for the simulated treecast peers (see ExperimentContext.core). */
  core?: CoreInit
  /** The command line recorded in the JSON. @default the reconstructed `npm run experiment` line */
  command?: string
  /** Where progress goes. @default the terminal (a bar on a TTY, plain lines otherwise) */
  progress?: ProgressSink
  /** Prints the tables and targets to stdout. @default true */
  print?: boolean
}

export interface RunOutcome { result: ExperimentResult, written: Written, wallMs: number }

/** The command that reproduces a run. */
export function commandLine (name: string, quick: boolean, seed: number, outDir: string, maxPeers?: number, core?: CoreInit): string {
  const steady = core?.steadyProbeIntervalMs
  return `npm run experiment -- ${name}${quick ? ' --quick' : ''} --seed ${seed} --out ${outDir}${maxPeers !== undefined ? ` --max-peers ${maxPeers}` : ''}${steady !== undefined ? ` --steady-probe-ms ${steady}` : ''}${core?.probeNearLane === false ? ' --one-lane' : ''}${core?.treeNewsGapMs === 0 ? ' --no-news' : ''}${core?.probeDetour === true ? ' --detour' : ''}${core?.probeDownloadOnDemand === false ? ' --no-download-on-demand' : ''}${core?.treeRootStride !== undefined ? ` --tree-root-stride ${core.treeRootStride}` : ''}`
}

/** Runs `exp` and writes `<outDir>/<name>.json`, `.md` and its SVGs. */
export async function runExperiment (exp: Experiment, opts: RunOptions): Promise<RunOutcome> {
  const outDir = resolve(opts.outDir)
  const sink = opts.progress ?? progressSink()
  const startedAt = new Date().toISOString()
  const t0 = performance.now()
  let result: ExperimentResult
  try {
    result = await exp.run({
      quick: opts.quick,
      seed: opts.seed,
      outDir,
      ...(opts.maxPeers !== undefined ? { maxPeers: opts.maxPeers } : {}),
      ...(opts.core !== undefined ? { core: opts.core } : {}),
      progress: (total, label) => sink.bar(total, label),
      log: (line) => sink.log(line)
    })
  } finally {
    sink.close()
  }
  const wallMs = performance.now() - t0
  const command = opts.command ?? commandLine(exp.name, opts.quick, opts.seed, opts.outDir, opts.maxPeers, opts.core)
  if (opts.core !== undefined) result = { ...result, parameters: { ...result.parameters, coreOverride: opts.core } }
  const written = await writeOutputs(outDir, { name: exp.name, quick: opts.quick, seed: opts.seed, command, startedAt, wallMs }, result)
  if (opts.print !== false) {
    for (const t of result.tables) console.log(`${tableMarkdown(t)}\n`)
    const targets = targetsMarkdown(result.targets)
    if (targets !== '') console.log(`${targets}\n`)
    console.log(`${exp.name}: ${(wallMs / 1000).toFixed(1)} s wall; wrote ${written.json}, ${written.markdown}${written.svgs.length > 0 ? `, ${written.svgs.length} SVG plot(s)` : ''}`)
  }
  return { result, written, wallMs }
}
