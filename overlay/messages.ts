/**
 * Wire messages between cores. Every message carries the wire version; the codec
 * (codec.ts) encodes them and validates whatever a remote peer sends before the core
 * sees it. Field names are short because they travel in every frame.
 */
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { DeliveredState } from '../virtual-nodes/handoff.ts'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import type { TreeKind } from '../trees/tree-kind.ts'
import type { ProbeTreeEntry, TreeEntry, TreeOp } from '../trees/tree-ops.ts'
import type { NearHint } from './near-peers.ts'

export type { ProbeTreeEntry, TreeEntry, TreeOp } from '../trees/tree-ops.ts'
export type { NearHint } from './near-peers.ts'

/** The wire version this core speaks; messages of any other version are rejected. */
export const WIRE_VERSION = 5

/** A member's status as one peer knows it. */
export type MemberStatus = 'alive' | 'left' | 'dead'

/** A membership fact: `peer` in incarnation `incarnation` is `status`. */
export interface MemberFact {
  readonly peer: PeerId
  readonly incarnation: number
  readonly status: MemberStatus
}

/** A peer asks to join, optionally asking for exact ranges (a rejoining peer's old ones). */
/**
 * A join. `want`: exact ranges asked for (a rejoining peer's old ones); `of`: the virtual
 * node count of the overlay they were owned in, so that a contact of another overlay (a
 * saved state reused elsewhere) ignores them instead of giving what they name.
 */
export interface JoinMessage { readonly t: 'join', readonly incarnation: number, readonly want?: IntervalSet, readonly of?: number }

/**
 * A contact that cannot take a join now (it is leaving) names a member to join through
 * instead; the joiner sends its join there (a bounded number of times).
 */
export interface JoinElsewhereMessage { readonly t: 'join-elsewhere', readonly to: PeerId }

/** Membership and ownership facts: disseminated on every change, and as a joiner's snapshot. */
export interface FactsMessage {
  readonly t: 'facts'
  readonly vnodeCount: number
  readonly members: readonly MemberFact[]
  readonly records: readonly OwnershipRecord[]
  /** True when this is the full snapshot sent to a joiner. */
  readonly welcome: boolean
  /**
   * True when the records are the sender's own crash take-over (a claim): the sender owns
   * their ranges only once every member it knows alive answered with `claim-ack`, after
   * sending it any record of its own that names another owner there (overlay/pending-claims.ts).
   */
  readonly claim?: boolean
}

/** Asks for the receiver's membership and ownership facts (a joiner re-syncing its view). */
export interface SyncMessage { readonly t: 'sync' }

/**
 * Asks the receiver to hand `ranges` (what of them it owns) to `to`. `share`: a joiner's
 * share under `joinPolicy: 'most-loaded'`, not ranges it wants; if the receiver owns none of
 * `ranges` any more (another contact's joiner got them first), it gives half of what it
 * owns instead. An older peer ignores the flag and gives what it still owns of `ranges`.
 */
export interface GiveMessage { readonly t: 'give', readonly to: PeerId, readonly ranges: IntervalSet, readonly share?: true }

/** Ranges moving to the receiver, with their per-range collective state. */
export interface HandoffMessage {
  readonly t: 'handoff'
  readonly record: OwnershipRecord
  readonly delivered: readonly DeliveredState[]
  /**
   * The sender never held these virtual nodes' state: a claimer yielding ranges a crashed
   * peer owned (overlay/pending-claims.ts). The receiver starts a new lineage there (reason
   * 'takeover'), as the crash semantics say.
   */
  readonly lost?: true
}

/** The receiver of a hand-off confirms it. */
export interface HandoffAckMessage { readonly t: 'handoff-ack', readonly version: number, readonly ranges: IntervalSet }

/** The receiver of a claim (facts with `claim`) has applied it; any record it holds there naming another owner went just before. */
export interface ClaimAckMessage { readonly t: 'claim-ack', readonly version: number, readonly ranges: IntervalSet }

/** 1-byte latency probe and its answer; also used as a liveness check. */
export interface PingMessage { readonly t: 'ping', readonly nonce: number }
export interface PongMessage { readonly t: 'pong', readonly nonce: number }

/**
 * Asks for the probe download. `light`: the prober still knows its bandwidth to us from a
 * recent probe and wants only the tree state (a reply without padding).
 */
export interface ProbeRequestMessage { readonly t: 'probe-req', readonly nonce: number, readonly light?: true }

/**
 * The probe download: the candidate's state for every tree, padded to the probe size, and
 * the candidate's nearest peers (hints for picking the next candidates; absent from peers
 * that send none).
 */
export interface ProbeReplyMessage {
  readonly t: 'probe-rep'
  readonly nonce: number
  readonly trees: readonly ProbeTreeEntry[]
  readonly padding: number
  readonly near?: readonly NearHint[]
}

/**
 * The sender's trees got much better (trees/tree-news.ts): a near peer probes it to see
 * whether it makes a better parent. Sent to a few of the sender's near peers, picked at random.
 */
export interface OfferMessage { readonly t: 'offer' }

export interface TreeMessage { readonly t: 'tree', readonly ops: readonly TreeOp[] }

/** How a stream is routed: along one of the root's trees, or directly to owners. */
export type StreamMode = TreeKind | 'direct'

/** Present when a stream is a reduction's start. */
export interface ReduceStart {
  readonly op: string
  readonly rootVnode: number
  /** Number of elements of the reduced array. */
  readonly length: number
  /**
   * Elements per partial-result segment, when partials travel in segments (absent: whole
   * arrays). Segment k covers elements [k * segment, min((k + 1) * segment, length)); a
   * peer combines and forwards each segment on its own, so long partials are pipelined up
   * the tree instead of stored and forwarded whole at every hop.
   */
  readonly segment?: number
}

/** The first chunk of a stream carries where it goes. */
export interface StreamOpen {
  /** Collective id, unique per origin: `${origin}/${seq}`. */
  readonly id: string
  readonly origin: PeerId
  /**
   * The root whose tree routes the stream, when not the origin's own (overlay/tree-roots.ts:
   * an origin that is no tree root). Absent: the origin.
   */
  readonly tree?: PeerId
  readonly mode: StreamMode
  /** The virtual nodes to reach through the receiver. */
  readonly header: IntervalSet
  readonly chunkCount: number
  readonly totalBytes: number
  /** True when this hop was a point-to-point fallback (rule III), for statistics. */
  readonly fallback: boolean
  readonly reduce?: ReduceStart
  readonly hops: number
  /** On a reduction's start only: how the receiver combines with its siblings. */
  readonly combine?: CombinePlan
  /**
   * A striped broadcast (overlay/stripes.ts): the payload's chunks are dealt into this many
   * stripes, chunk i into stripe i mod `stripes`. Absent: one.
   */
  readonly stripes?: number
  /** This stream carries only the chunks of this stripe (absent: all of them). */
  readonly stripe?: number
  /**
   * Striped broadcasts: parts of the header the receiver sends straight to other cluster
   * entries of the origin's bandwidth tree, before routing the rest along the tree.
   */
  readonly relay?: readonly StripeRelay[]
}

/** A part of a stream's header that goes to `to` directly (a striped broadcast's cluster entry). */
export interface StripeRelay {
  readonly to: PeerId
  readonly header: IntervalSet
  /**
   * What `to` relays in turn (one level only): the parts of the other entries of its
   * cluster, which it passes on inside the cluster (overlay/stripes.ts, cluster tags).
   */
  readonly relay?: readonly StripeRelay[]
}

/**
 * Sibling combining of a long reduction (overlay/combine-plan.ts). A peer with many near
 * children would receive one whole partial from each; instead it tells each receiver to
 * send its partial to a sibling (`to`) and to collect `extra`, the parts of the siblings
 * that send to it, so partials meet in a binomial tree among siblings and the parent
 * receives one. Absent `to`: the partial goes to the sender of the start, as usual.
 */
export interface CombinePlan {
  readonly to?: PeerId
  readonly extra: IntervalSet
}

/** One chunk of a stream (broadcast, point-to-point message or reduction start). */
export interface ChunkMessage {
  readonly t: 'chunk'
  /** Sender-local stream number. */
  readonly stream: number
  readonly index: number
  readonly data: Uint8Array
  readonly open?: StreamOpen
}

/**
 * The receiver of a stream has delivered, and forwarded with acknowledgement, all of it.
 * `away`: the stream was a reduction's start and the receiver's partial result goes to
 * another peer (it had the start from there first), so do not wait for it.
 */
export interface AckMessage { readonly t: 'ack', readonly stream: number, readonly away?: true }

/**
 * The receiver of stream `stream` still holds it and, `ageMs` ago, saw progress on it: a
 * chunk arrived there, or its own receivers reported one. Sent at most every quarter of
 * `transferIdleMs` while the stream is unacknowledged, so the sender does not drop as idle
 * a transfer whose receivers are still busy (overlay/stream-holds.ts). Added within wire
 * version 5: an older peer rejects it as an unknown type and drops idle transfers as before.
 */
export interface HoldMessage { readonly t: 'hold', readonly stream: number, readonly ageMs: number }

/**
 * A partial reduction result covering exactly `covered`: the whole array, or with `seg`
 * only segment `seg` of it (see {@link ReduceStart.segment}).
 */
export interface PartialMessage {
  readonly t: 'partial'
  readonly id: string
  readonly root: PeerId
  readonly op: string
  readonly covered: IntervalSet
  readonly value: Float64Array
  readonly seg?: number
  /**
   * Present in a collective reduction (every peer called it, 003 §IV-E; no start stream):
   * the array's shape, so that a peer that has not called it yet can hold the partial.
   */
  readonly coll?: CollectiveShape
}

/** The shape of a collective reduction's array, carried by its partials. */
export interface CollectiveShape {
  readonly length: number
  /** Elements per segment, when partials travel in segments (as {@link ReduceStart.segment}). */
  readonly segment?: number
}

/**
 * The receiver of a reduction's start tells the peer its partial goes to, when that is not
 * the peer it had the start from (a sibling, see {@link CombinePlan}, or the root): `part`
 * is on the way, wait for it past the timeout while the sender is alive.
 */
export interface ReduceAckMessage {
  readonly t: 'reduce-ack'
  readonly id: string
  readonly root: PeerId
  readonly part: IntervalSet
}

/** The reduction root asks the owners of `want` for their contributions directly. */
export interface PullMessage {
  readonly t: 'pull'
  readonly id: string
  readonly root: PeerId
  readonly op: string
  readonly length: number
  readonly want: IntervalSet
  readonly hops: number
  /** Only segment `seg` of the array is wanted, segments being `segment` elements long. */
  readonly seg?: number
  readonly segment?: number
  /** A collective reduction's: what is answered counts as contributed here. */
  readonly coll?: true
}

/**
 * Asks the origin of striped broadcast `id` for every chunk of it: the sender owns virtual
 * nodes waiting for it and no chunk came for a while (overlay/stripes.ts).
 */
export interface ResendMessage { readonly t: 'resend', readonly id: string }

/**
 * Asks a tree root for the cluster entries of its bandwidth tree, to stripe long
 * broadcast `id` along that tree from the sender, which roots no trees (overlay/stripe-asks.ts).
 */
export interface EntriesRequestMessage { readonly t: 'entries-req', readonly id: string }

/** The answer to an `entries-req`: the cluster entries of the sender's own bandwidth tree (none if it roots no trees). */
export interface EntriesReplyMessage { readonly t: 'entries-rep', readonly id: string, readonly entries: readonly TreeEntry[] }

/** Every message a core sends or receives. */
export type Message =
  | JoinMessage | JoinElsewhereMessage | SyncMessage | FactsMessage | GiveMessage | HandoffMessage | HandoffAckMessage | ClaimAckMessage
  | PingMessage | PongMessage | ProbeRequestMessage | ProbeReplyMessage | OfferMessage
  | TreeMessage | ChunkMessage | AckMessage | HoldMessage | PartialMessage | PullMessage | ReduceAckMessage | ResendMessage
  | EntriesRequestMessage | EntriesReplyMessage

/** The message type tags. */
export type MessageType = Message['t']
