/**
 * The events a treecast node emits (as `CustomEvent`s whose `detail` is given here).
 */
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { MemberStatus, StreamMode } from '../overlay/messages.ts'
import type { OwnershipReason } from '../overlay/outputs.ts'
import type { TreeKind } from '../trees/tree-kind.ts'

/** A broadcast or point-to-point payload delivered here for the virtual nodes `vnodes`. */
export interface DeliveryEvent {
  readonly id: string
  /** Overlay id of the peer that sent it. */
  readonly origin: string
  /** 'lat' or 'bw' for broadcasts (the tree used), 'direct' for point-to-point. */
  readonly mode: StreamMode
  /** The virtual nodes this copy is for: every one of them is delivered exactly once. */
  readonly vnodes: IntervalSet
  /** The payload in the chunks it travelled in (no copy). */
  readonly chunks: readonly Uint8Array[]
  /** The whole payload (assembled from `chunks` on first access). */
  readonly payload: Uint8Array
}

/** A reduction rooted here completed. */
export interface ReducedEvent {
  readonly id: string
  readonly value: Float64Array
  /** Every virtual node, each counted once. */
  readonly covered: IntervalSet
  readonly durationMs: number
}

/** A reduction rooted here gave up after the core's `reduceMaxDurationMs`. */
export interface ReduceFailedEvent { readonly id: string, readonly missing: IntervalSet }

/** The owned set changed. */
export interface OwnershipEvent {
  readonly owned: IntervalSet
  readonly added: IntervalSet
  readonly removed: IntervalSet
  readonly reason: OwnershipReason
}

/** A member's status changed in this peer's view. */
export interface MemberEvent { readonly peer: string, readonly status: MemberStatus }

/** This peer's parent in one tree changed. */
export interface TreeEvent { readonly kind: TreeKind, readonly root: string, readonly parent: string | null }

/** The node's event map. */
export interface TreecastEvents {
  'deliver': CustomEvent<DeliveryEvent>
  'broadcast-done': CustomEvent<{ readonly id: string }>
  'reduced': CustomEvent<ReducedEvent>
  'reduce-failed': CustomEvent<ReduceFailedEvent>
  'ownership': CustomEvent<OwnershipEvent>
  'member': CustomEvent<MemberEvent>
  'tree': CustomEvent<TreeEvent>
  /** The join completed. */
  'joined': CustomEvent<null>
  /** A graceful leave finished (`drained`: every hand-off was acknowledged). */
  'left': CustomEvent<{ readonly drained: boolean }>
  /**
   * Others declared this peer dead while it was alive: it is out, its pending operations
   * fail with EvictedError, and it rejoins by itself (`rejoinAttempts`; 'joined' again
   * when it is back, 'rejoin-failed' when every attempt failed).
   */
  'evicted': CustomEvent<null>
  /** Every rejoin attempt after an eviction failed: the peer stays out (`join()` may be called). */
  'rejoin-failed': CustomEvent<{ readonly attempts: number, readonly errors: readonly string[] }>
}
