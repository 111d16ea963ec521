/**
 * A join under way, seen from both ends, when the contact cannot take it.
 *
 * A contact that is leaving does not welcome joiners: it is handing its ranges away. It
 * used to drop the join, and the joiner waited for its host's timeout (the node's
 * `joinTimeoutMs`, 30 s) before it could try another member. Now it answers
 * `join-elsewhere`, naming the peer its ranges go to (or, when that one is gone, the
 * successor among the members it knows alive), and the joiner sends the same join there.
 * Redirects are bounded: a chain of leaving contacts, or a faulty peer, cannot keep a
 * joiner bouncing for ever; past {@link MAX_JOIN_REDIRECTS} the join waits for its timeout.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { successorOf } from '../virtual-nodes/assignment.ts'
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { InvalidArgumentError } from './errors.ts'
import type { JoinMessage } from './messages.ts'
import type { Membership } from './membership.ts'

/** Redirects one join follows at most. */
export const MAX_JOIN_REDIRECTS = 8

/**
 * The join a peer sends through `contact` (`TreecastCore.join`'s options).
 * @throws InvalidArgumentError for a join through oneself, a bad incarnation or `wantOf`
 */
export function joinMessage (self: PeerId, contact: PeerId, opts: { want?: IntervalSet, wantOf?: number, incarnation?: number }): JoinMessage {
  if (contact === self) throw new InvalidArgumentError('cannot join through oneself')
  if (opts.incarnation !== undefined && (!Number.isSafeInteger(opts.incarnation) || opts.incarnation < 0)) throw new InvalidArgumentError(`incarnation must be a non-negative safe integer, got ${opts.incarnation}`)
  if (opts.wantOf !== undefined && (!Number.isSafeInteger(opts.wantOf) || opts.wantOf < 1)) throw new InvalidArgumentError(`wantOf must be a virtual node count >= 1, got ${opts.wantOf}`)
  return { t: 'join', incarnation: opts.incarnation ?? 0, ...(opts.want !== undefined ? { want: opts.want } : {}), ...(opts.wantOf !== undefined ? { of: opts.wantOf } : {}) }
}

/**
 * Where a leaving contact sends `joiner`: its hand-off target while that one is alive, else
 * the successor of this peer among the alive members other than the joiner. Undefined when
 * nobody else is left (the join then goes unanswered, as before).
 */
export function joinElsewhereTarget (self: PeerId, joiner: PeerId, leaveTarget: PeerId | undefined, members: Pick<Membership, 'alive' | 'isAlive'>): PeerId | undefined {
  if (leaveTarget !== undefined && leaveTarget !== joiner && leaveTarget !== self && members.isAlive(leaveTarget)) return leaveTarget
  return successorOf(self, members.alive().filter((p) => p !== joiner))
}

/** The joiner's side: the contact asked last, and the join it was sent. */
export class JoinAttempt {
  private redirectsValue = 0
  private downReported: PeerId | undefined

  constructor (private contactValue: PeerId, readonly message: JoinMessage) {}

  /** The peer whose welcome this join waits for. */
  get contact (): PeerId { return this.contactValue }

  /** Redirects followed so far. */
  get redirects (): number { return this.redirectsValue }

  /**
   * `from` answered `join-elsewhere` naming `to`: true when the join should now go to `to`
   * (the contact is changed), else the reason to reject the answer.
   */
  redirect (self: PeerId, from: PeerId, to: PeerId): true | 'join-elsewhere-not-from-contact' | 'join-elsewhere-bad-target' | 'join-redirect-limit' {
    if (from !== this.contactValue) return 'join-elsewhere-not-from-contact'
    if (to === self || to === from) return 'join-elsewhere-bad-target'
    if (this.redirectsValue >= MAX_JOIN_REDIRECTS) return 'join-redirect-limit'
    this.redirectsValue++
    this.contactValue = to
    return true
  }

  /**
   * The connection to `peer` closed while this join waits: true, once per contact, when
   * `peer` is the contact. Its welcome will then most likely never come: a contact that
   * crashed just after handing this joiner its share and before the welcome left it
   * waiting for its host's timeout (the node's `joinTimeoutMs`, 30 s), while the members
   * the contact had told routed to it (seed 10576 of test/broadcast-churn).
   */
  contactDown (peer: PeerId): boolean {
    if (peer !== this.contactValue || this.downReported === peer) return false
    this.downReported = peer
    return true
  }
}
