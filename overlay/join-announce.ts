/**
 * A joiner announces itself. Its contact fans the joiner's arrival and the record of its
 * share out once, as it welcomes it (OwnershipEngine.onJoin). If the contact crashes before
 * all of that fan-out went out (a host crash loses what its sockets still held), some
 * members never learn of the joiner. One of them taking the contact's ranges over then
 * claims the joiner's share too without asking it (overlay/pending-claims.ts waits for the
 * members it knows), wins the version tie by peer id, and both own it (a reviewer's fuzz of
 * the core loop, which drops a crashed sender's messages in flight: seed 5020). So the
 * joiner tells every member itself: that it is alive, once welcomed (a claim then waits
 * for its answer: it yields, or its record wins), and the record of its share, once the
 * contact hands it over (the share is then not claimed at all). Two fan-outs per join.
 * Sans-IO.
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
  /** The contact that welcomed this peer, until it hands the share over. */
  private contact: PeerId | undefined

  constructor (private readonly host: JoinAnnounceHost) {}

  /** `contact` welcomed this peer (`self`: its own alive fact). */
  welcomed (contact: PeerId, self: MemberFact): void {
    this.contact = contact
    this.host.fanout({ t: 'facts', vnodeCount: this.host.vnodeCount(), members: [self], records: [], welcome: false }, contact)
  }

  /** A hand-off from `from` was applied: the first from the contact is the join share. */
  handedOff (from: PeerId, record: OwnershipRecord): void {
    if (from !== this.contact) return
    this.contact = undefined
    this.host.fanout({ t: 'facts', vnodeCount: this.host.vnodeCount(), members: [], records: [record], welcome: false }, from)
  }
}
