/**
 * Writes an experiment's outputs: `<name>.json` (parameters, every point, tables,
 * targets, seed, command, timestamp), `<name>.md` (tables and targets) and one SVG per
 * plot (`<name>-<id>.svg`). A run can be understood from its folder alone.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { renderSvg } from './plot.ts'
import { tableMarkdown } from './table.ts'
import type { ExperimentResult, TargetCheck } from './types.ts'

/** What a run was, besides what the experiment returned. */
export interface RunInfo {
  name: string
  quick: boolean
  seed: number
  /** The command line that reproduces the run. */
  command: string
  /** ISO time the run started. */
  startedAt: string
  wallMs: number
}

/** The paths written. */
export interface Written { json: string, markdown: string, svgs: string[] }

/** The targets as a Markdown table. */
export function targetsMarkdown (targets: readonly TargetCheck[]): string {
  if (targets.length === 0) return ''
  return tableMarkdown({
    title: 'Targets (issue 5)',
    columns: ['target', 'measured', 'met'],
    rows: targets.map((t) => [t.target, t.measured, t.met ? 'yes' : 'NO'])
  })
}

/** The whole `<name>.md`. */
export function summaryMarkdown (info: RunInfo, result: ExperimentResult, svgs: readonly string[]): string {
  const parts = [
    `## ${info.name}${info.quick ? ' (quick)' : ''}`,
    '',
    `\`${info.command}\` — seed ${info.seed}, started ${info.startedAt}, ${(info.wallMs / 1000).toFixed(1)} s wall`,
    ...result.tables.map((t) => `\n${tableMarkdown(t)}`)
  ]
  const targets = targetsMarkdown(result.targets)
  if (targets !== '') parts.push('', targets)
  if (svgs.length > 0) parts.push('', ...svgs.map((s) => `![${s}](${s})`))
  return parts.join('\n') + '\n'
}

/** Renders the plots and writes every file into `outDir`. */
export async function writeOutputs (outDir: string, info: RunInfo, result: ExperimentResult): Promise<Written> {
  mkdirSync(outDir, { recursive: true })
  const svgs: string[] = []
  for (const plot of result.plots) {
    const file = `${info.name}-${plot.id}.svg`
    writeFileSync(join(outDir, file), await renderSvg(plot))
    svgs.push(file)
  }
  const json = join(outDir, `${info.name}.json`)
  writeFileSync(json, JSON.stringify({
    experiment: info.name,
    quick: info.quick,
    seed: info.seed,
    command: info.command,
    startedAt: info.startedAt,
    wallMs: Math.round(info.wallMs),
    parameters: result.parameters,
    targets: result.targets,
    tables: result.tables,
    plots: svgs,
    points: result.points
  }, null, 2) + '\n')
  const markdown = join(outDir, `${info.name}.md`)
  writeFileSync(markdown, summaryMarkdown(info, result, svgs))
  return { json, markdown, svgs: svgs.map((s) => join(outDir, s)) }
}
