/**
 * Cluster tags: which cluster entries of a bandwidth tree are in one cluster.
 *
 * A bandwidth tree may enter one cluster through two wide-area edges (after a mass leave,
 * orphaned subtrees re-attach one by one, and nothing merges them again). Its root then
 * stripes a long broadcast over both entries, and two stripes share that cluster's one
 * wide-area link from the root's cluster: fig9's half-size phase took 193 ms per 4 MB
 * broadcast instead of 140 (EXPERIMENTS.md, twenty-seventh round). The root cannot tell
 * the clusters apart by its own RTTs (every wide-area RTT may be the same), so each entry
 * reports a tag: the {@link CLUSTER_TAG_SIZE} smallest ids among itself and the live peers
 * it measured near (within NEAR_RTT_FACTOR of its nearest). Peers of one cluster that
 * measured each other report overlapping tags; peers of two clusters never do, as no peer
 * is near both. Entries whose tags overlap get one stripe (overlay/stripes.ts). A tag that
 * misses the overlap (an entry that measured few of its neighbours) only loses the
 * grouping: the plan is then what it was without tags.
 */
import { comparePeerIds, type PeerId } from '../virtual-nodes/peer-id.ts'
import type { RttEntry } from './rtt-order.ts'

/** Ids a cluster tag holds at most (the codec refuses longer ones). */
export const CLUSTER_TAG_SIZE = 4

/**
 * The tag of `self`: the smallest ids of `self` and the live peers of `byRtt` (sorted by RTT)
 * within `nearMs`. Linear in the near peers; no sort of them.
 */
export function clusterTag (self: PeerId, byRtt: readonly RttEntry[], nearMs: number, isAlive: (p: PeerId) => boolean, size = CLUSTER_TAG_SIZE): PeerId[] {
  const tag: PeerId[] = [self]
  for (const e of byRtt) {
    if (e.rttMs > nearMs) break
    if (e.peer === self || !isAlive(e.peer)) continue
    if (tag.length >= size && comparePeerIds(e.peer, tag[tag.length - 1] as PeerId) >= 0) continue
    let i = tag.length
    while (i > 0 && comparePeerIds(e.peer, tag[i - 1] as PeerId) < 0) i--
    tag.splice(i, 0, e.peer)
    if (tag.length > size) tag.pop()
  }
  return tag
}

/** Whether two tags share an id (their entries are in one cluster). */
export function tagsOverlap (a: readonly PeerId[] | undefined, b: readonly PeerId[] | undefined): boolean {
  if (a === undefined || b === undefined) return false
  return a.some((p) => b.includes(p))
}
