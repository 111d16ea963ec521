/**
 * The state of the stream engine (overlay/streams.ts): incoming and outgoing streams, the
 * transfers they belong to, and what the engine needs from the peer around it.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipMap } from '../virtual-nodes/ownership-map.ts'
import type { TreeState } from '../trees/tree-table.ts'
import type { TreeKind } from '../trees/tree-kind.ts'
import type { CombinePlan, Message, ReduceStart, StreamMode, StreamOpen, StripeRelay } from './messages.ts'
import type { CombineChild } from './combine-plan.ts'

/** One incoming stream (or the local origin's own). */
export interface Incoming {
  /** The collective it brings (a field, not a map from streams to transfers: one lookup less per chunk). */
  readonly transfer: Transfer
  readonly from: PeerId | null
  readonly stream: number
  readonly hops: number
  readonly routes: Route[]
  /** Own virtual nodes waiting for the payload to complete. */
  pending: IntervalSet
  /**
   * Own virtual nodes this stream brought again while they were pending through another
   * one: it is acknowledged only once they are delivered or handed on.
   */
  held: IntervalSet
  /** Virtual nodes that cannot be routed right now (hand-off not arrived yet, loops). */
  wait: IntervalSet
  acked: boolean
  /** A reduction start's sibling-combining plan for this peer, as the sender gave it. */
  readonly combine: CombinePlan | undefined
  /** The stripe whose chunks this stream carries (undefined: all; overlay/stripes.ts). */
  readonly stripe: number | undefined
  /** Parts of the header to send straight to other cluster entries first (a striped broadcast's). */
  readonly relay: readonly StripeRelay[] | undefined
  /** When this peer last told the sender it still holds the stream, and the progress it reported then (overlay/stream-holds.ts). */
  holdSentAtMs: number
  holdProgressMs: number
}

/** One outgoing stream. */
export interface Route {
  readonly to: PeerId
  readonly stream: number
  readonly header: IntervalSet
  readonly fallback: boolean
  readonly transfer: Transfer
  readonly incoming: Incoming
  /** The next chunk index to send (steps by the stripe count on a striped route). */
  next: number
  /**
   * A route of every chunk of a striped transfer: the next index per stripe. Its sender may
   * hold only some stripes (a part it passes on with its virtual nodes, which it had
   * through one stripe): it sends what it has, in any order, not waiting at a gap.
   */
  readonly cursors: number[] | null
  opened: boolean
  acked: boolean
  /** The sibling-combining plan sent to the receiver (reduction starts only). */
  combine: CombinePlan | undefined
  /** The stripe whose chunks go this way (undefined: all). */
  readonly stripe: number | undefined
  /** What the receiver relays to other cluster entries (sent in the open). */
  readonly relay: readonly StripeRelay[] | undefined
}

/** Everything this peer holds of one collective. */
export interface Transfer {
  readonly id: string
  readonly origin: PeerId
  /** The root whose trees route it: the origin, or the tree root it chose (overlay/tree-roots.ts). */
  readonly tree: PeerId
  readonly mode: StreamMode
  readonly chunkCount: number
  readonly totalBytes: number
  readonly reduce: ReduceStart | undefined
  readonly chunks: Array<Uint8Array | undefined>
  received: number
  readonly incoming: Incoming[]
  /** When a chunk last arrived here (or the transfer started). */
  lastActivity: number
  /** The latest progress receivers reported downstream (`hold`; -Infinity: none): with lastActivity, what keeps the transfer from being dropped as idle. */
  heldAtMs: number
  fallbackSends: number
  bytesReceived: number
  /** Stripes the chunks are dealt into (1: not striped). */
  readonly stripes: number
  /** Chunks received per stripe (striped transfers only). */
  readonly stripeReceived: number[] | null
  /** This peer asked the origin for every chunk (overlay/stripes.ts: `resend`). */
  resendAsked: boolean
}

/** What the stream engine needs from the peer around it. */
export interface StreamHost {
  readonly self: PeerId
  readonly view: OwnershipMap
  owned (): IntervalSet
  /** Virtual nodes this peer has claimed (crash take-overs) and does not own yet (overlay/pending-claims.ts). */
  claimed (): IntervalSet
  isAlive (peer: PeerId): boolean
  /**
   * Whether point-to-point data for a virtual node this peer's view assigns to `peer` can
   * be sent there: `peer` is alive, or it is leaving gracefully and still connected. A
   * leaving peer forwards what it no longer owns along its own hand-off (the peer it gave
   * the virtual nodes to), so a part need not wait for the hand-off record to arrive here;
   * leaving peers never receive the records of later hand-offs at all (facts go to alive
   * members only), so parts they parked for a leaving owner waited for a leave timeout.
   */
  reachable (peer: PeerId): boolean
  tree (kind: TreeKind, root: PeerId): TreeState | undefined
  send (to: PeerId, msg: Message): void
  deliver (t: Transfer, vnodes: IntervalSet): void
  routed (t: Transfer, inc: Incoming, fresh: IntervalSet, forwarded: IntervalSet): void
  /**
   * `to` acknowledged its part `header` of `t`: delivered there and forwarded with
   * acknowledgement; `away` when its reduction partial goes to another peer.
   */
  routeAcked (t: Transfer, to: PeerId, header: IntervalSet, away: boolean): void
  /** Whether this peer's partial of reduction `t` goes to a peer other than `from`. */
  partialAway (t: Transfer, from: PeerId): boolean
  /** This peer acknowledged `t`'s start as `away`: tell the peer its partial goes to. */
  ackedAway (t: Transfer, from: PeerId): void
  /** Sibling-combining plans for the tree children a reduction start is routed to. */
  planCombine (t: Transfer, children: readonly CombineChild[]): Map<PeerId, CombinePlan>
  originDone (t: Transfer): void
  wantPark (): void
  reject (reason: string): void
  /** Whether a reduction start names an operation this peer knows. */
  knowsOp (op: string): boolean
}

/** A transfer with nothing received yet (`o` is its stream open). */
export function createTransfer (now: number, o: Omit<StreamOpen, 'hops' | 'fallback' | 'header'>): Transfer {
  const stripes = o.stripes ?? 1
  return {
    id: o.id,
    origin: o.origin,
    tree: o.tree ?? o.origin,
    mode: o.mode,
    chunkCount: o.chunkCount,
    totalBytes: o.totalBytes,
    reduce: o.reduce,
    chunks: new Array<Uint8Array | undefined>(o.chunkCount),
    received: 0,
    incoming: [],
    lastActivity: now,
    heldAtMs: -Infinity,
    fallbackSends: 0,
    bytesReceived: 0,
    stripes,
    stripeReceived: stripes > 1 ? new Array<number>(stripes).fill(0) : null,
    resendAsked: false
  }
}

/** An incoming stream opened at `now` (`from` null: the origin's own). */
export function createIncoming (now: number, transfer: Transfer, from: PeerId | null, stream: number, hops: number, combine?: CombinePlan, stripe?: number, relay?: readonly StripeRelay[]): Incoming {
  return { transfer, from, stream, hops, routes: [], pending: IntervalSet.EMPTY, held: IntervalSet.EMPTY, wait: IntervalSet.EMPTY, acked: false, combine, stripe, relay, holdSentAtMs: now, holdProgressMs: -Infinity }
}
