/**
 * Sibling combining for long reductions. A reduction's partials go up the root's latency
 * tree, and a peer with k children receives k whole partials on one downlink: a root with
 * 28 children received 28 MiB for an array of 2^17 float64s (fig8 in EXPERIMENTS.md),
 * where MagPIe-like's binomial tree gives each peer about log2(k). So when a peer routes a
 * long reduction's start to several near children, it arranges them in a binomial tree
 * among themselves (as MPICH and MagPIe combine inside a cluster): child of rank r sends its
 * partial to rank r - lowbit(r), rank 0 to the parent, and each collects the parts of the
 * ranks that send to it. Every peer then receives at most about log2(k) partials, and
 * segments keep the extra hops pipelined.
 *
 * Only near children take part (a wide-area child sending to a sibling in another cluster
 * would cross the wide area twice); ranks go to the children with the smallest parts
 * first, so the collectors are the ones whose own subtrees send them least.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { CombinePlan } from './messages.ts'

/** One child a start is routed to, with the part it takes. */
export interface CombineChild {
  readonly peer: PeerId
  readonly header: IntervalSet
}

/** Fewest near children for which combining pays (with two, the parent still receives one fewer partial only). */
export const MIN_COMBINE_CHILDREN = 3

/**
 * The binomial plan for `children` (in any order) restricted to those `isNear` accepts:
 * per child, where its partial goes (`to`, absent for rank 0: the parent) and what it also
 * collects. Empty when fewer than {@link MIN_COMBINE_CHILDREN} are near. Deterministic: ranks
 * follow the part size, then the peer id.
 */
export function planCombine (children: readonly CombineChild[], isNear: (peer: PeerId) => boolean): Map<PeerId, CombinePlan> {
  const near = children.filter((c) => isNear(c.peer))
  const plans = new Map<PeerId, CombinePlan>()
  if (near.length < MIN_COMBINE_CHILDREN) return plans
  near.sort((a, b) => a.header.size - b.header.size || (a.peer < b.peer ? -1 : a.peer > b.peer ? 1 : 0))
  const extra = near.map(() => IntervalSet.EMPTY)
  // Rank r collects from r + 2^j for every 2^j below lowbit(r) (all powers for rank 0):
  // the sender's part plus everything that sender collects, so fill from the highest rank.
  const collected = near.map((c) => c.header)
  for (let r = near.length - 1; r > 0; r--) {
    const to = r - (r & -r)
    extra[to] = (extra[to] as IntervalSet).union(collected[r] as IntervalSet)
    collected[to] = (collected[to] as IntervalSet).union(collected[r] as IntervalSet)
  }
  near.forEach((c, r) => {
    const e = extra[r] as IntervalSet
    plans.set(c.peer, r === 0 ? { extra: e } : { to: (near[r - (r & -r)] as CombineChild).peer, extra: e })
  })
  return plans
}
