/**
 * Summary tables: Markdown for `<name>.md` and for stdout (a Markdown table reads well in
 * a terminal and pastes into EXPERIMENTS.md as is).
 */
import type { Table } from './types.ts'

/** One cell as text: numbers with at most 4 significant decimals, null as `n/a`. */
export function cell (v: string | number | null): string {
  if (v === null) return 'n/a'
  if (typeof v === 'string') return v.replace(/\|/g, '\\|')
  if (!Number.isFinite(v)) return String(v)
  if (Number.isInteger(v)) return String(v)
  const abs = Math.abs(v)
  const digits = abs >= 100 ? 1 : abs >= 1 ? 2 : abs >= 0.01 ? 3 : 4
  return v.toFixed(digits)
}

/** A table as Markdown: a `###` title, the grid, then its notes as a list. */
export function tableMarkdown (t: Table): string {
  const lines = [`### ${t.title}`, '', `| ${t.columns.map(cell).join(' | ')} |`, `|${t.columns.map(() => '---').join('|')}|`]
  for (const row of t.rows) lines.push(`| ${row.map(cell).join(' | ')} |`)
  if (t.notes !== undefined && t.notes.length > 0) {
    lines.push('')
    for (const n of t.notes) lines.push(`- ${n}`)
  }
  return lines.join('\n')
}
