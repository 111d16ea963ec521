/**
 * Whether a probe's download can matter (overlay/probe-runner.ts, `probeDownloadOnDemand`).
 * A probe times a `probeBytes` download only to learn bw(p,c), and bw(p,c) enters only the
 * bandwidth rule, through est(p,c) = min(est(c), bw(p,c) / n_children(c)) <= est(c). The
 * rule (`bandwidthPrefers`) is monotone in est(p,c), so if even est(c) would not move p in
 * any bandwidth tree, no measured bandwidth would: the download is skipped. That is the
 * common case in a cold start (most candidates are connected in no tree yet) and at scale
 * it is what crowds the wide-area links (docs/SCALE.md).
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { bandwidthPrefers } from './parent-rules.ts'
import type { ProbeTreeEntry } from './tree-ops.ts'
import type { TreeState } from './tree-state.ts'

/** What the test needs of this peer. */
export interface DownloadWantedInit {
  readonly self: PeerId
  isAlive (peer: PeerId): boolean
  /** This peer's bandwidth tree of `root`, if it has one yet. */
  bwTree (root: PeerId): TreeState | undefined
  /** A candidate with this many bandwidth-tree children already is never taken (0: no limit). */
  readonly bwMaxChildren: number
  readonly tieTolerance: number
}

/**
 * True when timing the download from `cand` (at `rttMs`) could change some bandwidth tree
 * of this peer, judged from the tree state `entries` its reply carried: `cand` is the
 * parent there (its estimate is refreshed from the new rate), or the bandwidth rule would
 * take `cand` with est(p,c) at its upper bound est(c). Locks and pending moves are not
 * looked at: they may be over by the time the download ends.
 */
export function downloadWanted (init: DownloadWantedInit, cand: PeerId, rttMs: number, entries: readonly ProbeTreeEntry[]): boolean {
  for (const e of entries) {
    if (e.root === init.self || e.est < 0) continue
    // A root with a tree here is alive (the tree table follows the member list).
    const st = init.bwTree(e.root)
    if (st === undefined) {
      if (!init.isAlive(e.root)) continue
      return true // no state yet: no parent, and a connected candidate
    }
    if (st.root === init.self) continue
    if (st.parent === cand) return true
    if (init.bwMaxChildren > 0 && e.bwChildren >= init.bwMaxChildren) continue
    if (bandwidthPrefers(st.parent !== null, st.metric, e.est, st.parentRttMs, rttMs, init.tieTolerance)) return true
  }
  return false
}
