/**
 * What a core asks its driver to do or tells its application: plain data.
 */
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeKind } from '../trees/tree-kind.ts'
import type { MemberStatus, Message, StreamMode } from './messages.ts'

/**
 * Why the owned set changed. 'takeover': the virtual nodes' state went with a crashed peer
 * (a new lineage starts here, whether this peer claimed them or a claimer that yielded
 * handed them on); 'handoff-in': their state came with them.
 */
export type OwnershipReason = 'initial' | 'handoff-in' | 'handoff-out' | 'takeover' | 'conflict'

export type Output =
  /** Send a message to a peer. */
  | { readonly type: 'send', readonly to: PeerId, readonly message: Message }
  /** A broadcast (mode lat/bw) or point-to-point message (mode direct) for `vnodes` here. */
  | { readonly type: 'deliver', readonly id: string, readonly origin: PeerId, readonly mode: StreamMode, readonly vnodes: IntervalSet, readonly chunks: readonly Uint8Array[], readonly totalBytes: number }
  /** A broadcast started here reached every virtual node (all acknowledgements in). */
  | { readonly type: 'broadcast-done', readonly id: string }
  /** A reduction rooted here is complete. */
  | { readonly type: 'reduced', readonly id: string, readonly value: Float64Array, readonly covered: IntervalSet, readonly startedAt: number }
  /** A reduction rooted here gave up after its maximum duration. */
  | { readonly type: 'reduce-failed', readonly id: string, readonly missing: IntervalSet }
  /** This peer's owned set changed. */
  | { readonly type: 'ownership', readonly owned: IntervalSet, readonly added: IntervalSet, readonly removed: IntervalSet, readonly reason: OwnershipReason }
  /** A member's status changed in this peer's view. */
  | { readonly type: 'member', readonly peer: PeerId, readonly status: MemberStatus }
  /** This peer's parent in a tree changed. */
  | { readonly type: 'tree', readonly kind: TreeKind, readonly root: PeerId, readonly parent: PeerId | null }
  /** The join completed: this peer is a member with a view. */
  | { readonly type: 'joined' }
  /**
   * The connection to the contact closed before its welcome: the join will most likely
   * never complete. The driver gives it up now, as at its join timeout (the node drops the
   * core and its connections, so members that heard of this peer find it gone).
   */
  | { readonly type: 'join-failed', readonly contact: PeerId }
  /** A graceful leave finished: the driver may disconnect. */
  | { readonly type: 'left', readonly drained: boolean }
  /** This peer was declared dead by others while alive: it must rejoin. */
  | { readonly type: 'evicted' }
