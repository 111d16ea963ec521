/**
 * 003's parent rules, as pure functions of what a probe measured.
 */

/** The estimated rate reported for a tree's root: it has the data already. */
export const ROOT_EST_BYTES_PER_SEC = 1e15

/**
 * Latency rule (003 §IV-B): p moves under candidate c when RTT(p,c) < RTT(p,parent) and
 * dist(c,root) < dist(p,root). A parent-less p takes any connected candidate.
 */
export function latencyPrefers (hasParent: boolean, parentRttMs: number, distMs: number, candRttMs: number, candDistMs: number): boolean {
  if (candDistMs < 0) return false
  if (!hasParent) return true
  return candRttMs < parentRttMs && candDistMs < distMs
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

/** Bandwidth rule: p moves under c when est(p,c) > est(p,parent). */
export function bandwidthPrefers (hasParent: boolean, currentEst: number, candEst: number): boolean {
  if (candEst < 0) return false
  if (!hasParent) return true
  return candEst > currentEst
}
