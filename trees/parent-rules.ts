/**
 * 003's parent rules, as pure functions of what a probe measured.
 */

/** The estimated rate reported for a tree's root: it has the data already. */
export const ROOT_EST_BYTES_PER_SEC = 1e15

/** Relative difference under which two RTTs count as equal in the latency rule (float rounding, not measurement). */
export const RTT_ROUNDING = 1e-9

/**
 * Latency rule (003 §IV-B): p moves under candidate c when RTT(p,c) < RTT(p,parent) and
 * dist(c,root) < dist(p,root). A parent-less p takes any connected candidate.
 */
export function latencyPrefers (hasParent: boolean, parentRttMs: number, distMs: number, candRttMs: number, candDistMs: number, tieTolerance = 0): boolean {
  if (candDistMs < 0) return false
  if (!hasParent) return true
  if (tieTolerance <= 0) return candRttMs < parentRttMs && candDistMs < distMs
  // With a tolerance (ours), 003's "RTT(p,c) < RTT(p,parent)" must hold by more than
  // rounding (RTT_ROUNDING). Two wide-area RTTs equal but for the last bits of a float
  // moved a cluster's entry from a parent in the root's cluster (distance 6.63 ms) to one
  // in a third cluster at the same distance (then 12.65 ms), and the whole cluster with it:
  // fig6 seed 3, root p0068, 1.77x MagPIe-like (EXPERIMENTS.md, fourteenth round). Asking
  // for the whole tolerance instead fixed that too, but made fig8's 32 KB reductions 1.3x
  // slower than MagPIe-like (latency trees with more children per parent).
  if (candRttMs * (1 + RTT_ROUNDING) < parentRttMs && candDistMs < distMs) return true
  // Tie-break (ours): an RTT equal within the tolerance does not block a move that
  // shortens the distance to the root clearly (a chain a->b->c of equal wide-area RTTs
  // would otherwise never straighten in a noise-free network).
  if (candRttMs <= parentRttMs * (1 + tieTolerance) && candDistMs + candRttMs < distMs * (1 - tieTolerance)) return true
  // Regrouping (ours): a candidate at most as far from the root (within the tolerance) and
  // at a quarter of the parent's RTT or less takes p, so a cluster's peers gather behind one
  // wide-area edge instead of each keeping its own.
  return candRttMs * 4 <= parentRttMs && candDistMs <= distMs * (1 + tieTolerance)
}

/**
 * est(p,c) = min(est(c), bw(p,c) / n_children(c)), n_children counting p (003 §IV-C).
 * Returns -1 when the candidate is not connected.
 */
export function bandwidthEstimate (candEst: number, bwBytesPerSec: number, candChildren: number, alreadyChild: boolean): number {
  if (candEst < 0) return -1
  const n = candChildren + (alreadyChild ? 0 : 1)
  return Math.min(candEst, bwBytesPerSec / Math.max(1, n))
}

/**
 * Bandwidth rule: p moves under c when est(p,c) > est(p,parent). With a tieTolerance (ours;
 * 0 gives 003's rule): estimates within the tolerance are ties. A better estimate must beat
 * the current one by more than the tolerance (a 0.1% gain moved a peer, and each move costs
 * a check up the candidate's path: with tree news, half the tree messages of a 201-peer cold
 * start), and a tie moves p to a candidate at less than half the RTT of its parent, so
 * siblings with identical estimates from one distant parent regroup under a local one
 * instead of each keeping its own wide-area branch.
 */
export function bandwidthPrefers (hasParent: boolean, currentEst: number, candEst: number, parentRttMs = Infinity, candRttMs = Infinity, tieTolerance = 0): boolean {
  if (candEst < 0) return false
  if (!hasParent) return true
  if (candEst > currentEst * (1 + Math.max(0, tieTolerance))) return true
  return tieTolerance > 0 && candEst >= currentEst * (1 - tieTolerance) && candRttMs < parentRttMs / 2
}
