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
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import type { MemberFact, Message } from './messages.ts'

/** What the announcer needs from the peer around it. */
export interface JoinAnnounceHost {
  /** Sends `msg` to every live member but this peer and `except`. */
  fanout (msg: Message, except?: PeerId): void
  vnodeCount (): number
}

export class JoinAnnouncer {
  constructor (private readonly host: JoinAnnounceHost) {}

  /** `contact` welcomed this peer (`self`: its own alive fact). */
  welcomed (contact: PeerId, self: MemberFact): void {
    this.host.fanout({ t: 'facts', vnodeCount: this.host.vnodeCount(), members: [self], records: [], welcome: false }, contact)
  }

  /** A hand-off from `from` that gave this peer ranges was applied. */
  handedOff (from: PeerId, record: OwnershipRecord): void {
    this.host.fanout({ t: 'facts', vnodeCount: this.host.vnodeCount(), members: [], records: [record], welcome: false }, from)
  }
}
