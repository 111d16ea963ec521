/**
 * What the ownership engine (overlay/ownership-engine.ts) needs from the peer around it:
 * the member list and view it changes, the trees and streams it tells of changes, sends,
 * outputs and the timers and limits it reads. The core is the host.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipMap } from '../virtual-nodes/ownership-map.ts'
import type { TreeTable } from '../trees/tree-table.ts'
import type { Membership } from './membership.ts'
import type { Message } from './messages.ts'
import type { Output } from './outputs.ts'
import type { Streams } from './streams.ts'

/** What the ownership engine needs from the peer around it. */
export interface OwnershipHost {
  readonly self: PeerId
  readonly members: Membership
  readonly view: OwnershipMap
  readonly trees: Pick<TreeTable, 'ensureRoot' | 'removeRoot' | 'peerGone' | 'ownedChanged'>
  readonly streams: Pick<Streams, 'delivered' | 'peerGone' | 'ownershipChanged'>
  /** How a contact picks the peer that gives a joiner its share. */
  readonly joinPolicy: 'contact' | 'most-loaded'
  vnodeCount (): number
  /** This peer's own incarnation. */
  incarnation (): number
  isRunning (): boolean
  isLeaving (): boolean
  send (to: PeerId, msg: Message): void
  /** Sends to every other alive member but `except`. */
  fanout (msg: Message, except?: PeerId): void
  emit (out: Output): void
  /** A membership change may have made other parents better: probe. */
  triggerProbing (now: number): void
  /**
   * `peer` left or died: a probe waiting for its answer is given up at once, and reductions
   * stop waiting for its partials (what it had not sent is pulled from the new owners; a
   * later incarnation of it starts with no state).
   */
  memberGone (now: number, peer: PeerId): void
  /** Something a leaving peer waits for went away: it may be done. */
  checkLeft (): void
  /**
   * `peer`'s connection closed while it was alive here and it is waited on (overlay/suspects.ts):
   * the incarnation whose connection closed, and the wait ends (undefined when none).
   */
  closedEarly (peer: PeerId): number | undefined
  /** This peer's own incarnation was declared gone by another peer. */
  evicted (): void
  reject (reason: string): void
  /** How long a take-over claim waits for answers at most (overlay/pending-claims.ts). */
  claimTimeoutMs (): number
  /** How long a leaving peer drains at most (`leaveTimeoutMs`). */
  leaveTimeoutMs (): number
  /** Calls `onClaimTimer` at `at`. */
  setClaimTimer (at: number): void
}
