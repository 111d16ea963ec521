/**
 * The depth tie-break of bandwidth trees (ours; core option `bwTieDepthHops`).
 *
 * Inside a cluster every peer's bandwidth estimate from a root is the same figure (the
 * slowest link on the way, usually the wide-area one), so 003's rule never moves a peer
 * there, and with `bwMaxChildren` a cluster's bandwidth tree grows as a chain: 21 hops on
 * average after fig7's cold start. Every hop adds a chunk's store-and-forward time and a
 * peer whose crash or leave re-routes the rest. So a tie (the candidate's estimate no
 * worse than the current one by more than the tie tolerance would let the rule move back
 * for) moves a peer under a candidate at least `gain` hops nearer the root.
 *
 * The candidate's estimate must be at least current / (1 + tieTolerance): the bandwidth
 * rule moves a peer only for more than current x (1 + tieTolerance), so it never takes it
 * straight back to the parent it left, and each tie move shortens its path by `gain` hops.
 * Nor may the candidate be farther than the parent (RTT, within the tolerance): a peer in a
 * chain inside a cluster would otherwise take a shallower candidate across the wide area
 * (its estimate ties when the download measured the idle wide-area link), and the tree
 * would enter that cluster through one more wide-area edge (test/near-survey's seeds 2
 * and 3: 195 such edges instead of the least possible 192).
 * Depth travels in probe replies (`bwDepth`) and, down the tree, in metric updates.
 *
 * A probe does not download for this tie alone (trees/download-wanted.ts does not ask for
 * it): ties are judged where a download happens for the bandwidth rule, or with a bandwidth
 * measured recently (`probeBandwidthReuseMs`). Downloading for ties too made 25% more probes
 * in test-crash-mid-combined-reduction, its trees settled 6.1 s after the last crash
 * instead of 2.8 s, and its reductions' median took 6.1 s instead of 4.0 s.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { ProbeTreeEntry, TreeOp } from './tree-ops.ts'
import { closeEnough, type TreeState } from './tree-state.ts'

type MetricOp = Extract<TreeOp, { op: 'metric' }>

/** Whether a bandwidth-tree tie moves `st` under the candidate of `e` (at `rttMs`; estimate `candEst`, computed as 003 says). */
export function depthTiePrefers (st: TreeState, candEst: number, rttMs: number, e: ProbeTreeEntry, tieTolerance: number, gain: number): boolean {
  if (gain <= 0 || st.parent === null || candEst < 0 || e.bwDepth === undefined || e.bwDepth < 0) return false
  const tol = Math.max(0, tieTolerance)
  return candEst * (1 + tol) >= st.metric && rttMs <= st.parentRttMs * (1 + tol) && e.bwDepth + 1 + gain <= st.depth
}

/** The depth `st` takes under the candidate of `e` (Infinity when it did not say). */
export function depthUnder (e: ProbeTreeEntry): number {
  return e.bwDepth !== undefined && e.bwDepth >= 0 ? e.bwDepth + 1 : Infinity
}

/** A metric update from the parent of bandwidth tree `st`: its new depth; whether it changed. */
export function metricDepth (st: TreeState, op: MetricOp): boolean {
  if (st.kind !== 'bw' || op.depth === undefined || op.depth + 1 === st.depth) return false
  st.depth = op.depth + 1
  return true
}

/** The bandwidth metric updates due to `st`'s children: those whose estimate changed, all when the depth did (with depths on; an unknown depth is not sent). */
export function bwMetricsDue (st: TreeState, withDepth: boolean): Array<[PeerId, MetricOp]> {
  const n = st.children.size
  const depth = withDepth && Number.isFinite(st.depth) ? st.depth : undefined
  const depthChanged = depth !== undefined && depth !== st.sentDepth
  if (depth !== undefined) st.sentDepth = depth
  const out: Array<[PeerId, MetricOp]> = []
  for (const [child, bw] of st.childBw) {
    const est = Math.min(st.metric, bw / n)
    if (!depthChanged && closeEnough(est, st.sentChildEst.get(child) ?? NaN)) continue
    st.sentChildEst.set(child, est)
    out.push([child, depth === undefined ? { op: 'metric', kind: 'bw', root: st.root, value: est } : { op: 'metric', kind: 'bw', root: st.root, value: est, depth }])
  }
  return out
}
