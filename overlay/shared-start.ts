/**
 * What every founder of one overlay computes alike at bootstrap: the initial ownership
 * view (V virtual nodes spread evenly over the founders, in their order) and the member
 * list (every founder alive at incarnation 0). `TreecastCore.bootstrap` builds one for
 * itself; a process that starts many founders (the simulator) builds one and passes it to
 * each, which then shares it and copies only what it changes. At 2,000 founders the copies
 * were 4 million segments and 4 million member entries, 680 MB of the simulation's heap,
 * and the lookups in 2,000 separate tables missed the processor's caches (docs/SCALE.md).
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { OwnershipMap } from '../virtual-nodes/ownership-map.ts'
import { initialAssignment } from '../virtual-nodes/assignment.ts'
import { FounderMembers } from './membership.ts'
import { InvalidArgumentError } from './errors.ts'

/** The founders' common start (immutable once built). */
export class SharedStart {
  /** Never changed: each founder works on a copy ({@link OwnershipMap.clone}). */
  readonly view: OwnershipMap
  readonly members: FounderMembers

  constructor (readonly vnodeCount: number, readonly founders: readonly PeerId[]) {
    if (!Number.isInteger(vnodeCount) || vnodeCount < 1) throw new InvalidArgumentError(`vnodeCount must be an integer >= 1, got ${vnodeCount}`)
    const assignment = initialAssignment(vnodeCount, founders)
    this.view = OwnershipMap.fromRecords(vnodeCount, [...assignment].map(([owner, ranges]) => ({ ranges, owner, version: 0, ownerIncarnation: 0 })))
    this.members = new FounderMembers(founders)
  }

  /** Whether this start is the one of `vnodeCount` virtual nodes over `founders` (in that order). */
  matches (vnodeCount: number, founders: readonly PeerId[]): boolean {
    if (vnodeCount !== this.vnodeCount) return false
    if (founders === this.founders) return true
    return founders.length === this.founders.length && founders.every((p, i) => p === this.founders[i])
  }
}
