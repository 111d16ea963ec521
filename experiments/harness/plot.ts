/**
 * Renders a plot's vega-lite spec to SVG headless: vega-lite compiles it to a vega spec,
 * vega parses it and a View with `renderer: 'none'` writes the SVG (no canvas, no DOM).
 */
import * as vega from 'vega'
import { compile, type TopLevelSpec } from 'vega-lite'
import type { Plot } from './types.ts'

/** Background and font shared by every plot, unless the spec sets its own. */
const DEFAULT_CONFIG = { background: 'white', font: 'Helvetica, Arial, sans-serif' }

/** The SVG text of one plot. */
export async function renderSvg (plot: Plot): Promise<string> {
  const spec = { config: DEFAULT_CONFIG, title: plot.title, ...plot.spec } as TopLevelSpec
  const compiled = compile(spec).spec
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' })
  try {
    return await view.toSVG()
  } finally {
    view.finalize()
  }
}
