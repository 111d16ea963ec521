/**
 * A peer announces what it was given. A joiner's contact fans the joiner's arrival out once,
 * as it welcomes it (OwnershipEngine.onJoin), and whoever hands a peer ranges fans the
 * record of that hand-off out (handoffTo). If that peer crashes before all of its fan-out
 * went out (a host crash loses what its sockets still held), some members never learn of
 * the joiner or of the hand-off. One of them taking the crashed peer's ranges over then
 * claims the ranges it had handed on too, at the version the hand-off had (both add
 * CLAIM_VERSION_STEP to the same record), wins the tie by peer id where it does, and the
 * live receiver yields them: a claim built on a view that missed the hand-off won over it
 * (a reviewer's fuzz of the core loop, which drops a crashed sender's messages in flight:
 * seed 5020 for a contact's share; test/join-announce for a donor that a contact asked
 * for a joiner's share, joinPolicy most-loaded, and seed 747 of test/migration-fuzz). So
 * the receiver tells every member itself: a joiner that it is alive, once welcomed (a
 * claim then waits for its answer), and every receiver the record of each hand-off that
 * gave it ranges, as it applies it, long before anyone can have noticed a crash of the
 * sender. One fan-out per join and per hand-off. Sans-IO.
 */
import { successorOf } from '../virtual-nodes/assignment.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import type { Membership } from './membership.ts'
import type { MemberFact, Message } from './messages.ts'

/**
 * How long a contact passes newly learnt facts on to a peer that joined through it: its
 * snapshot may miss facts fanned out before the others knew the joiner (a hand-off record).
 */
export const JOINER_FORWARD_MS = 30_000

/** What the announcer needs from the peer around it. */
export interface JoinAnnounceHost {
  readonly self: PeerId
  readonly members: Pick<Membership, 'alive'>
  /** Sends `msg` to every live member but this peer and `except`. */
  fanout (msg: Message, except?: PeerId): void
  send (to: PeerId, msg: Message): void
  vnodeCount (): number
}

export class JoinAnnouncer {
  /** The contact that welcomed this peer, while it passes facts on (JOINER_FORWARD_MS). */
  private contact: { peer: PeerId, until: number } | undefined
  /** This peer's own fact as welcomed, and until when it tells members it learns of (JOINER_FORWARD_MS). */
  private self: { fact: MemberFact, until: number } | undefined

  constructor (private readonly host: JoinAnnounceHost) {}

  /** `contact` welcomed this peer at `now` (`self`: its own alive fact). */
  welcomed (now: number, contact: PeerId, self: MemberFact): void {
    this.contact = { peer: contact, until: now + JOINER_FORWARD_MS }
    this.self = { fact: self, until: now + JOINER_FORWARD_MS }
    this.host.fanout({ t: 'facts', vnodeCount: this.host.vnodeCount(), members: [self], records: [], welcome: false }, contact)
  }

  /**
   * `peer` died, or left and its connection closed. If it is the contact, still passing facts
   * on to this joiner, what it would have passed on is asked of another member (`sync`: its
   * whole view, the successor's among the members alive here): a joiner whose contact crashed
   * or left just after the welcome missed a hand-off record fanned out while its sender had
   * not heard of the joiner yet, and its view named the previous owner for good (seeds 1688,
   * 1838 and 2085 of test/migration-fuzz). Facts fanned out later still, by members that
   * have not heard of the joiner by then, are missed: a second contact failure.
   */
  gone (now: number, peer: PeerId): void {
    if (this.contact?.peer !== peer) return
    const due = now <= this.contact.until
    this.contact = undefined
    const to = due ? successorOf(this.host.self, this.host.members.alive().filter((p) => p !== peer)) : undefined
    if (to !== undefined && to !== this.host.self) this.host.send(to, { t: 'sync' })
  }

  /**
   * This peer learnt of member `peer` (new, or back alive). Within JOINER_FORWARD_MS of its
   * own welcome it tells it of itself and of what it owns (`records`): its welcome snapshot
   * and its announcements reached only the members its contact knew then, and the hand-off
   * that gave it its share was fanned out only to the members its giver knew. A member
   * that joined meanwhile through a contact that left at once heard of neither, and its
   * view named a stale owner for good (seed 32579 of test/migration-fuzz). One message per
   * member learnt of in that time.
   */
  learnt (now: number, peer: PeerId, records: () => OwnershipRecord[]): void {
    if (this.self === undefined || now > this.self.until || peer === this.host.self) return
    this.host.send(peer, { t: 'facts', vnodeCount: this.host.vnodeCount(), members: [this.self.fact], records: records(), welcome: false })
  }

  /** A hand-off from `from` that gave this peer ranges was applied. */
  handedOff (from: PeerId, record: OwnershipRecord): void {
    this.host.fanout({ t: 'facts', vnodeCount: this.host.vnodeCount(), members: [], records: [record], welcome: false }, from)
  }
}
