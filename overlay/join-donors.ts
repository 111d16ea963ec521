/**
 * The donor of a joiner's share under `joinPolicy: 'most-loaded'`: the contact asks the
 * most loaded peer in its view (a `give`) for the upper half of what the view names as
 * that peer's. The view changes only when the donor's hand-off record comes back, a round
 * trip later: a second join through the same contact meanwhile picked the same donor and
 * asked for the same ranges, which the donor had just given the first joiner, and the
 * second joiner got nothing at all (a review's test, test/join-donors). So the contact
 * remembers what it asked each donor for until its view no longer names the donor there,
 * and counts it as given already. Sans-IO, one entry per donor asked.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { joinShare, mostLoaded } from '../virtual-nodes/assignment.ts'
import type { OwnershipMap } from '../virtual-nodes/ownership-map.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'

export class JoinDonors {
  /** Ranges asked of each donor that the view still names as the donor's. */
  private readonly asked = new Map<PeerId, IntervalSet>()

  /** Picks the donor among `among` and the share it is to give; remembers it as asked (unless the donor is `self`, whose own hand-off changes the view at once). */
  pick (view: OwnershipMap, self: PeerId, among: ReadonlySet<PeerId>): { donor: PeerId, share: IntervalSet } | undefined {
    const loads = view.loads()
    for (const [donor, set] of this.asked) {
      const still = set.intersection(view.rangesOf(donor))
      if (still.isEmpty) { this.asked.delete(donor); continue }
      this.asked.set(donor, still)
      loads.set(donor, (loads.get(donor) ?? 0) - still.size)
    }
    const donor = mostLoaded(loads, among)
    if (donor === undefined) return undefined
    const before = this.asked.get(donor) ?? IntervalSet.EMPTY
    const share = joinShare(view.rangesOf(donor).difference(before))
    if (!share.isEmpty && donor !== self) this.asked.set(donor, before.union(share))
    return { donor, share }
  }
}
