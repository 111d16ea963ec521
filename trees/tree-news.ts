/**
 * News of a tree that got much better (ours, not 003's): a peer whose distance to a root
 * shrank, or whose estimated rate from it grew, by at least TREE_NEWS_GAIN since it last
 * had news of that tree (or that first connected) tells its near peers, who probe it
 * (overlay/probing.ts `offered`). 003's schedule stops probing a few probes after a peer has
 * every parent; a peer that finds a far better parent later (a cluster's first direct
 * wide-area edge to the root, say) is then never seen by its neighbours, which keep their
 * own, worse ones. The baseline is the best metric the tree had since it last connected,
 * so a metric that swings (a parent's children come and go) is news only when it beats its
 * best by the gain: each tree has a few news at most per connection, and a tree that lost
 * its parent and found one again is news again.
 */
import type { TreeState } from './tree-state.ts'

/** The relative gain that makes a tree news: dist x (1 + gain) <= before, or est >= before x (1 + gain). */
export const TREE_NEWS_GAIN = 0.25

/** The best metric each connected tree of one peer had (its last news). */
export class TreeNews {
  private readonly base = new WeakMap<TreeState, number>()

  /** A tree's metric may have changed; true when that is news. `connected`: it has a parent (the root's own trees never are news). */
  observe (st: TreeState, connected: boolean): boolean {
    if (!connected || !Number.isFinite(st.metric) || st.metric < 0) {
      this.base.delete(st)
      return false
    }
    const before = this.base.get(st)
    const lat = st.kind === 'lat'
    if (before === undefined || (lat ? st.metric * (1 + TREE_NEWS_GAIN) <= before : st.metric >= before * (1 + TREE_NEWS_GAIN))) {
      this.base.set(st, st.metric)
      return true
    }
    return false
  }
}
