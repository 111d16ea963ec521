/**
 * Figures summed over every core a run started, those that left or crashed included (a
 * rejoin starts a new core): probes started, light probes, tree-news offers received and
 * remote input rejected, by reason (report.probes, report.rejected).
 */
import type { TreecastCore } from '../../overlay/core.ts'

export class CoreFigures {
  probes = 0
  probesLight = 0
  offers = 0
  readonly rejected: Record<string, number> = {}

  /** Adds the figures of `core`. */
  add (core: TreecastCore): this {
    this.probes += core.probesStarted
    this.probesLight += core.stats.probesLight
    this.offers += core.stats.offers
    for (const [k, v] of Object.entries(core.stats.rejected)) this.rejected[k] = (this.rejected[k] ?? 0) + v
    return this
  }

  /** A copy, with the figures of `cores` added. */
  with (cores: Iterable<TreecastCore>): CoreFigures {
    const out = new CoreFigures()
    out.probes = this.probes
    out.probesLight = this.probesLight
    out.offers = this.offers
    Object.assign(out.rejected, this.rejected)
    for (const c of cores) out.add(c)
    return out
  }
}
