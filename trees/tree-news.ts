/**
 * News of a tree that got much better or much worse (ours, not 003's). A peer whose
 * distance to a root shrank, or whose estimated rate from it grew, by at least
 * TREE_NEWS_GAIN over its best since it connected (or that first connected) tells its near
 * peers, who probe it (overlay/probing.ts `offered`). One whose tree fell that much below
 * its best probes a few near peers itself, once per best (`worse`). 003's schedule stops
 * probing a few probes after a peer has every parent; a peer that finds a far better
 * parent later (a cluster's first direct wide-area edge from the root, say) is then never
 * seen by its neighbours, and a peer whose parent got worse (its siblings multiplied) never
 * looks again. The baseline is the best metric since the tree connected, so a metric that
 * swings (a parent's children come and go) is news only when it beats its best by the
 * gain: each tree has a few news at most per connection, and one that lost its parent and
 * found one again is news again.
 */
import type { TreeState } from './tree-state.ts'

/** The relative gain that makes a tree news: dist x (1 + gain) <= best, or est >= best x (1 + gain); the same loss makes it worse. */
export const TREE_NEWS_GAIN = 0.25

/** What a tree's metric change means for its neighbours. */
export type TreeNewsKind = 'better' | 'worse' | null

/** The best metric each connected tree of one peer had, and whether its fall was reported. */
export class TreeNews {
  private readonly best = new WeakMap<TreeState, { metric: number, fell: boolean }>()

  /** A tree's metric may have changed. `connected`: it has a parent (the root's own trees never are news). */
  observe (st: TreeState, connected: boolean): TreeNewsKind {
    if (!connected || !Number.isFinite(st.metric) || st.metric < 0) {
      this.best.delete(st)
      return null
    }
    const b = this.best.get(st)
    const lat = st.kind === 'lat'
    const g = 1 + TREE_NEWS_GAIN
    if (b === undefined || (lat ? st.metric * g <= b.metric : st.metric >= b.metric * g)) {
      this.best.set(st, { metric: st.metric, fell: false })
      return 'better'
    }
    if (!b.fell && (lat ? st.metric >= b.metric * g : st.metric * g <= b.metric)) {
      b.fell = true
      return 'worse'
    }
    return null
  }
}
