/**
 * Header-routed streams: broadcasts, point-to-point messages and reduction starts
 * (003 §IV-D). A stream's first chunk carries the set of virtual nodes to reach through
 * the receiver. The receiver (I) delivers for the ones it owns, (II) forwards along the
 * tree the parts reachable through its children, and (III) sends the rest point-to-point
 * to their owners. Later chunks follow the routes the first one set (pipelining: chunk i is
 * forwarded as soon as it arrives).
 *
 * Reliability is hop-by-hop custody: a peer keeps what it forwarded until the receiver
 * acknowledges that its whole part is delivered and forwarded with acknowledgement. When a
 * receiver dies, its part is routed again from here. Owners remember which virtual nodes
 * had which stream delivered (and hand that record over with their ranges), so a re-sent
 * part is never delivered twice.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { ChunkMessage, StreamOpen, StripeRelay } from './messages.ts'
import { createIncoming, createTransfer, type Incoming, type Route, type StreamHost, type Transfer } from './stream-state.ts'
import { HOLD_EVERY_FRACTION, isIdle, noteHeld, sendHolds } from './stream-holds.ts'
export type { Incoming, Route, StreamHost, Transfer } from './stream-state.ts'
import { childrenByReach } from '../trees/tree-state.ts'
import { DedupeCache } from './dedupe-cache.ts'
import { EarlyChunks } from './early-chunks.ts'
import { fallbackGroups } from './fallback-groups.ts'
import { chunksNeeded, hasChunks, openOf, validStripes, type StripePlan } from './stripes.ts'

/** Incoming streams one collective may have at a peer (re-routes after failures add some). */
export const MAX_INCOMING_PER_TRANSFER = 256

/**
 * Senders whose empty stream maps are kept (a parent sends stream after stream; a new map
 * per stream was a fifth of the stream engine's allocations at 2,000 peers). Past it an
 * empty map is dropped at once, so idle senders never hold more than this many.
 */
export const MAX_IDLE_SENDERS = 64

/** Limits of the stream engine. */
export interface StreamLimits { maxActiveTransfers: number, maxHops: number, maxPayloadBytes: number, dedupeCapacity: number, transferIdleMs: number, fallbackFanout: number, stripeResendMs: number }

/** The stream engine of one peer. */
export class Streams {
  private readonly transfers = new Map<string, Transfer>()
  /** Incoming streams by sender, then the sender's stream number (no string key per chunk). */
  private readonly incomingBy = new Map<PeerId, Map<number, Incoming>>()
  private readonly outgoing = new Map<number, Route>()
  private readonly early = new EarlyChunks()
  private nextStream = 1
  readonly delivered: DedupeCache

  constructor (private readonly host: StreamHost, private readonly limits: StreamLimits) {
    this.delivered = new DedupeCache(limits.dedupeCapacity)
  }

  /**
   * Numbers the streams sent from now on from `first` (overlay/incarnation-numbers.ts): the core
   * calls it when it joins, before any stream, with its incarnation's first number.
   */
  numberFrom (first: number): void { this.nextStream = first }

  /** Number of collectives in flight here. */
  get activeCount (): number { return this.transfers.size }

  /** Collectives in flight once, at the cap, those idle past transferIdleMs are dropped (tick runs only while something is parked). */
  roomCount (now: number): number {
    if (this.transfers.size >= this.limits.maxActiveTransfers) for (const t of [...this.transfers.values()]) if (isIdle(t, now, this.limits.transferIdleMs)) this.drop(t)
    return this.transfers.size
  }

  /**
   * Starts a stream at its origin, reaching `header`; with a stripe plan (a striped
   * broadcast; overlay/stripes.ts), the plan's local part goes along the tree and each
   * stripe to its cluster entry.
   */
  originate (now: number, open: Omit<StreamOpen, 'hops' | 'fallback' | 'header' | 'stripes'>, header: IntervalSet, chunks: Uint8Array[], plan?: StripePlan): Transfer {
    const t = this.newTransfer(now, plan === undefined ? open : { ...open, stripes: plan.stripes.length })
    chunks.forEach((c, i) => { t.chunks[i] = c; t.bytesReceived += c.length })
    t.received = chunks.length
    const inc = createIncoming(now, t, null, 0, 0)
    t.incoming.push(inc)
    if (plan === undefined) {
      this.route(t, inc, header, undefined)
    } else {
      this.route(t, inc, plan.local, undefined)
      plan.stripes.forEach((s, j) => this.addRoute(t, inc, s.to, s.header, false, j, s.relay))
    }
    this.pump(t)
    this.complete(t)
    return t
  }

  /** Handles a chunk from `from`. */
  onChunk (now: number, from: PeerId, msg: ChunkMessage): void {
    let inc = this.incomingBy.get(from)?.get(msg.stream)
    let t: Transfer | undefined
    let early: ChunkMessage[] = []
    if (msg.open !== undefined) {
      if (inc !== undefined) { this.host.reject('duplicate-open'); return }
      const o = msg.open
      if (o.totalBytes > this.limits.maxPayloadBytes || o.chunkCount < 1 || o.chunkCount > o.totalBytes + 1) { this.host.reject('bad-stream'); return }
      if (o.reduce !== undefined && !this.host.knowsOp(o.reduce.op)) { this.host.reject('unknown-op'); return }
      if (!validStripes(o)) { this.host.reject('bad-stream'); return }
      t = this.transfers.get(o.id)
      if (t === undefined) {
        if (this.roomCount(now) >= this.limits.maxActiveTransfers) { this.host.reject('too-many-transfers'); return }
        t = this.newTransfer(now, o)
      } else if (t.chunkCount !== o.chunkCount || t.totalBytes !== o.totalBytes || t.origin !== o.origin || t.tree !== (o.tree ?? o.origin) || t.reduce?.op !== o.reduce?.op || t.reduce?.length !== o.reduce?.length || t.stripes !== (o.stripes ?? 1)) {
        this.host.reject('stream-mismatch')
        return
      } else if (t.incoming.length >= MAX_INCOMING_PER_TRANSFER) {
        this.host.reject('too-many-streams')
        return
      }
      inc = createIncoming(now, t, from, msg.stream, o.hops, o.combine, o.stripe, o.relay)
      t.incoming.push(inc)
      let byStream = this.incomingBy.get(from)
      if (byStream === undefined) { byStream = new Map(); this.incomingBy.set(from, byStream) }
      byStream.set(msg.stream, inc)
      this.route(t, inc, o.header, inc.stripe)
      // Chunks of this stream that overtook its opening one (early-chunks.ts), after this one.
      if (this.early.streams > 0) early = this.early.take(`${from}#${msg.stream}`)
    } else {
      if (inc === undefined) {
        if (this.early.hold(now, `${from}#${msg.stream}`, msg)) this.host.wantPark()
        else this.host.reject('unknown-stream')
        return
      }
      t = inc.transfer
    }
    if (msg.index >= t.chunkCount || (inc.stripe !== undefined && msg.index % t.stripes !== inc.stripe)) { this.host.reject('bad-chunk-index'); return }
    t.lastActivity = now
    if (t.chunks[msg.index] === undefined) {
      if (t.bytesReceived + msg.data.length > t.totalBytes) { this.host.reject('payload-overrun'); return }
      t.chunks[msg.index] = msg.data
      t.bytesReceived += msg.data.length
      t.received++
      if (t.stripeReceived !== null) { const k = msg.index % t.stripes; t.stripeReceived[k] = (t.stripeReceived[k] ?? 0) + 1 }
      // Every chunk is in but the bytes fall short of what the opening chunk announced: a
      // faulty sender. Delivering it would hand the application a truncated payload.
      if (t.received === t.chunkCount && t.bytesReceived !== t.totalBytes) { this.host.reject('payload-short'); this.drop(t); return }
    }
    this.pump(t)
    this.complete(t)
    sendHolds(t, now, this.limits.transferIdleMs * HOLD_EVERY_FRACTION, this.host)
    for (const m of early) this.onChunk(now, from, m)
  }

  /** The receiver of one of our streams still holds it, with progress `ageMs` ago (overlay/stream-holds.ts): passed on up, where due. */
  onHold (now: number, from: PeerId, stream: number, ageMs: number): void {
    const r = this.outgoing.get(stream)
    if (r === undefined || r.to !== from) return // crossed our drop or re-route of it: nothing to keep
    noteHeld(r.transfer, now, ageMs)
    sendHolds(r.transfer, now, this.limits.transferIdleMs * HOLD_EVERY_FRACTION, this.host)
  }

  /** The receiver of one of our streams acknowledged it. */
  onAck (from: PeerId, stream: number, away = false): void {
    const r = this.outgoing.get(stream)
    if (r === undefined || r.to !== from) { this.host.reject('unknown-ack'); return }
    r.acked = true
    this.outgoing.delete(stream)
    // A receiver combining for siblings covers their parts as well.
    this.host.routeAcked(r.transfer, r.to, r.combine === undefined ? r.header : r.header.union(r.combine.extra), away)
    this.complete(r.transfer)
  }

  /** `peer` is gone: route again whatever it had not acknowledged. */
  peerGone (peer: PeerId): void {
    const lost: Route[] = []
    for (const r of this.outgoing.values()) if (r.to === peer) lost.push(r)
    for (const r of lost) {
      this.outgoing.delete(r.stream)
      r.acked = true
      // The same chunks, another way: the receiver's part of the stripe it was sent.
      this.route(r.transfer, r.incoming, r.header, r.stripe)
    }
    const touched = new Set(lost.map((r) => r.transfer))
    for (const t of touched) { this.pump(t); this.complete(t) }
  }

  /** Own ranges changed: route again what waited, and pass on pending parts no longer ours. */
  ownershipChanged (): void {
    const owned = this.host.owned()
    for (const t of [...this.transfers.values()]) {
      let touched = false
      for (const inc of t.incoming) {
        const gone = inc.pending.difference(owned)
        if (!gone.isEmpty) {
          inc.pending = inc.pending.difference(gone)
          // Whoever delivers them needs every chunk, whatever stripe brought them here.
          this.route(t, inc, gone, undefined)
          touched = true
        }
      }
      if (this.retryWaits(t)) touched = true
      if (touched) { this.pump(t); this.complete(t) }
    }
  }

  /** Periodic retry of parked parts and garbage collection of idle transfers. */
  tick (now: number): boolean {
    for (let n = this.early.expire(now); n > 0; n--) this.host.reject('unknown-stream')
    // Held early chunks keep the timer armed until claimed or expired.
    let parked = this.early.heldBytes > 0 || this.early.streams > 0
    for (const t of [...this.transfers.values()]) {
      if (this.retryWaits(t)) { this.pump(t); this.complete(t) }
      if (t.incoming.some((i) => !i.wait.isEmpty)) parked = true
      if (this.starving(t)) {
        parked = true
        if (!t.resendAsked && now - t.lastActivity >= this.limits.stripeResendMs && this.host.reachable(t.origin)) {
          t.resendAsked = true
          this.host.send(t.origin, { t: 'resend', id: t.id }) // a leaving origin drains first and answers while connected (reachable)
        }
      }
      if (isIdle(t, now, this.limits.transferIdleMs)) this.drop(t)
    }
    return parked
  }

  /**
   * A peer asks for every chunk of a striped broadcast started here (it waits with virtual
   * nodes of its own for stripes that no stream brings it: their custody ended at a peer
   * that crashed after delivering them, and it took the virtual nodes over). Answered with
   * a stream of every chunk and an empty header, unless one is still unacknowledged to the
   * asker; anything else is rejected. An asker that acknowledged an answer has forgotten the
   * transfer, and asks again when a later crash gives it more virtual nodes (once per asker left it starving).
   */
  onResend (from: PeerId, id: string): void {
    const t = this.transfers.get(id)
    const inc = t?.incoming.find((i) => i.from === null)
    if (t === undefined || inc === undefined || t.origin !== this.host.self || t.stripes < 2) { this.host.reject('unknown-resend'); return }
    if (inc.routes.some((r) => r.to === from && r.header.isEmpty && !r.acked)) return
    // Bounded like the streams a collective may have coming in (a member asking in a loop).
    if (inc.routes.filter((r) => r.header.isEmpty).length >= MAX_INCOMING_PER_TRANSFER) { this.host.reject('too-many-resends'); return }
    this.addRoute(t, inc, from, IntervalSet.EMPTY, false, undefined)
    this.pump(t)
  }

  /** Whether some peer has unacknowledged data from here (awaitedPeers not empty). */
  get awaiting (): boolean { return this.outgoing.size > 0 }

  /** Peers with unacknowledged data from here. */
  awaitedPeers (): Set<PeerId> {
    const out = new Set<PeerId>()
    for (const r of this.outgoing.values()) out.add(r.to)
    return out
  }

  /**
   * The parts of collective `id` routed from here to live receivers that have not
   * acknowledged them yet (with what a combining receiver collects): still on their way down.
   */
  inFlight (id: string): IntervalSet {
    const t = this.transfers.get(id)
    let out = IntervalSet.EMPTY
    if (t === undefined) return out
    for (const inc of t.incoming) {
      for (const r of inc.routes) {
        if (r.acked || !this.host.isAlive(r.to)) continue
        out = out.union(r.combine === undefined ? r.header : r.header.union(r.combine.extra))
      }
    }
    return out
  }

  /** Looks up a collective in flight. */
  get (id: string): Transfer | undefined { return this.transfers.get(id) }

  private newTransfer (now: number, o: Omit<StreamOpen, 'hops' | 'fallback' | 'header'>): Transfer {
    const t = createTransfer(now, o)
    this.transfers.set(t.id, t)
    return t
  }

  /**
   * Rules I, II and III for `set`, arriving through `inc`; the routes carry the chunks of
   * `stripe` (undefined: all of them). A striped stream's relay parts go to their cluster
   * entries first.
   */
  private route (t: Transfer, inc: Incoming, set: IntervalSet, stripe: number | undefined): void {
    const owned = this.host.owned()
    const mine = set.intersection(owned)
    let pendingAll = IntervalSet.EMPTY
    for (const i of t.incoming) pendingAll = pendingAll.union(i.pending)
    const undelivered = mine.difference(this.delivered.get(t.id))
    const fresh = undelivered.difference(pendingAll)
    inc.pending = inc.pending.union(fresh)
    // Waiting for the other stripes: the park timer watches that they come (tick, `resend`).
    if (!fresh.isEmpty && t.stripes > 1 && t.received < t.chunkCount) this.host.wantPark()
    // Already pending through another stream: this one is not acknowledged before they are
    // delivered (or handed on), or a crash here would lose its chunks (another stripe's).
    const held = undelivered.intersection(pendingAll)
    if (!held.isEmpty) inc.held = inc.held.union(held)
    let rest = set.difference(mine)
    let forwarded = IntervalSet.EMPTY
    // (Nothing left, as at a leaf: no need to ask for the claims.)
    const claimed = rest.isEmpty ? IntervalSet.EMPTY : this.host.claimed()
    if (!claimed.isEmpty && rest.intersects(claimed)) {
      // Named this peer's own in its view, not owned until the claim settles: held here,
      // not sent down a tree whose reach sets may still list them (they would come back).
      const held = this.host.view.partition(rest.intersection(claimed)).get(this.host.self)
      if (held !== undefined) {
        inc.wait = inc.wait.union(held)
        this.host.wantPark()
        rest = rest.difference(held)
      }
    }
    if (inc.relay !== undefined) {
      for (const r of inc.relay) {
        const part = rest.intersection(r.header)
        if (part.isEmpty || r.to === this.host.self || !this.host.isAlive(r.to)) continue
        // Nested relays (the others of r.to's cluster) travel on a stripe only (validStripes).
        this.addRoute(t, inc, r.to, part, false, stripe, stripe === undefined ? undefined : r.relay)
        forwarded = forwarded.union(part)
        rest = rest.difference(part)
      }
    }
    if (t.mode !== 'direct' && !rest.isEmpty) {
      const st = this.host.tree(t.mode, t.tree)
      if (st !== undefined) {
        const children = childrenByReach(st)
        const routes: Route[] = []
        for (const [child, reach] of children) {
          // Never back to the peer it came from: a child sends up only what its subtree
          // does not reach, and knows that better than this peer's reach set for it.
          if (child === inc.from || !this.host.isAlive(child)) continue
          const part = rest.intersection(reach)
          if (part.isEmpty) continue
          routes.push(this.addRoute(t, inc, child, part, false, stripe))
          forwarded = forwarded.union(part)
          rest = rest.difference(part)
          if (rest.isEmpty) break
        }
        if (t.reduce !== undefined && routes.length > 1) {
          const plans = this.host.planCombine(t, routes.map((r) => ({ peer: r.to, header: r.header })))
          for (const r of routes) r.combine = plans.get(r.to)
        }
        // A stream from an origin that is no tree root starts mid-tree (overlay/tree-roots.ts):
        // what this subtree does not reach goes up, unless it came down from the parent
        // (then reach sets were stale, and rule III sends it; a stale child entry naming the
        // parent must not send it back either).
        const up = st.parent
        if (!rest.isEmpty && t.tree !== t.origin && up !== null && up !== inc.from && (inc.from === null || st.children.has(inc.from)) && this.host.isAlive(up)) {
          this.addRoute(t, inc, up, rest, false, stripe)
          forwarded = forwarded.union(rest)
          rest = IntervalSet.EMPTY
        }
      }
    }
    if (!rest.isEmpty) {
      if (inc.hops >= this.limits.maxHops) {
        inc.wait = inc.wait.union(rest)
        this.host.wantPark()
      } else {
        const sendable: Array<[PeerId, IntervalSet]> = []
        for (const [owner, part] of this.host.view.partition(rest)) {
          if (owner === this.host.self || !this.host.reachable(owner)) {
            inc.wait = inc.wait.union(part)
            this.host.wantPark()
            continue
          }
          sendable.push([owner, part])
        }
        const fanout = t.mode === 'bw' && t.reduce === undefined ? this.limits.fallbackFanout : 0
        for (const [to, part] of fallbackGroups(sendable, fanout)) {
          this.addRoute(t, inc, to, part, t.mode !== 'direct', stripe)
          forwarded = forwarded.union(part)
        }
      }
    }
    this.host.routed(t, inc, fresh, forwarded)
  }

  private addRoute (t: Transfer, inc: Incoming, to: PeerId, header: IntervalSet, fallback: boolean, stripe: number | undefined, relay?: readonly StripeRelay[]): Route {
    const r: Route = { to, stream: this.nextStream++, header, fallback, transfer: t, incoming: inc, next: stripe ?? 0, cursors: stripe === undefined && t.stripes > 1 ? Array.from({ length: t.stripes }, (_, s) => s) : null, opened: false, acked: false, combine: undefined, stripe, relay }
    if (fallback) t.fallbackSends++
    inc.routes.push(r)
    this.outgoing.set(r.stream, r)
    return r
  }

  private retryWaits (t: Transfer): boolean {
    let any = false
    for (const inc of t.incoming) {
      if (inc.wait.isEmpty) continue
      const w = inc.wait
      inc.wait = IntervalSet.EMPTY
      this.route(t, inc, w, inc.stripe)
      any = true
    }
    return any
  }

  /** Sends every chunk each route can take now, in order. */
  private pump (t: Transfer): void {
    for (const inc of t.incoming) {
      for (const r of inc.routes) {
        if (r.acked) continue
        if (r.cursors === null) {
          r.next = this.sendFrom(t, r, r.next, r.stripe === undefined ? 1 : t.stripes, inc.hops + 1)
        } else {
          for (let s = 0; s < r.cursors.length; s++) r.cursors[s] = this.sendFrom(t, r, r.cursors[s] as number, t.stripes, inc.hops + 1)
        }
      }
    }
  }

  /** A striped transfer here whose own virtual nodes wait for chunks. */
  private starving (t: Transfer): boolean {
    return t.stripes > 1 && t.received < t.chunkCount && t.incoming.some((i) => !i.pending.isEmpty)
  }

  /** Sends `r` the chunks held from index `from` on, `step` apart, up to the first gap; returns where it stopped. */
  private sendFrom (t: Transfer, r: Route, from: number, step: number, hops: number): number {
    let i = from
    for (; i < t.chunkCount; i += step) {
      const data = t.chunks[i]
      if (data === undefined) break
      const msg: ChunkMessage = r.opened
        ? { t: 'chunk', stream: r.stream, index: i, data }
        : { t: 'chunk', stream: r.stream, index: i, data, open: openOf(t, r, hops) }
      r.opened = true
      this.host.send(r.to, msg)
    }
    return i
  }

  /** Delivers what is complete, acknowledges finished incoming streams, forgets finished transfers. */
  private complete (t: Transfer): void {
    if (t.received === t.chunkCount) {
      let deliver = IntervalSet.EMPTY
      for (const inc of t.incoming) {
        if (inc.pending.isEmpty) continue
        deliver = deliver.union(inc.pending)
        inc.pending = IntervalSet.EMPTY
      }
      if (!deliver.isEmpty) {
        this.delivered.set(t.id, this.delivered.get(t.id).union(deliver))
        this.host.deliver(t, deliver)
      }
    }
    let all = true
    for (const inc of t.incoming) {
      if (inc.acked) continue
      // Acknowledged once its own virtual nodes are delivered (which takes every chunk) or
      // handed on, everything it sent on is acknowledged, and the chunks it carries are
      // here, unless nothing here needs them any more (no virtual node waits, no route that
      // takes them is open: the rest of a part a peer holding one stripe handed on, say,
      // whose new owner got the payload another way). A route of every chunk from another
      // stream draws on them too: acknowledging early would end their custody. A route back to
      // the sender does not: it needs only chunks the sender has. (A leaver hands a part back
      // to the peer that sent it; had the sender's route to it waited for chunks that never
      // come, each would wait for the other until the leave timed out: swarm-striped-5274.)
      if (inc.pending.isEmpty && inc.wait.isEmpty && inc.routes.every((r) => r.acked) && !this.stillPending(t, inc) && (hasChunks(t, inc.stripe) || !chunksNeeded(t, inc.stripe, inc.from))) {
        inc.acked = true
        if (inc.from === null) this.host.originDone(t)
        else if (t.reduce !== undefined && this.host.partialAway(t, inc.from)) {
          this.host.send(inc.from, { t: 'ack', stream: inc.stream, away: true })
          this.host.ackedAway(t, inc.from)
        }
        else this.host.send(inc.from, { t: 'ack', stream: inc.stream })
      } else {
        all = false
      }
    }
    if (all) this.drop(t)
  }

  /** Whether virtual nodes `inc` brought here again are still waiting to be delivered through another stream. */
  private stillPending (t: Transfer, inc: Incoming): boolean {
    if (inc.held.isEmpty) return false
    for (const i of t.incoming) if (i.pending.intersects(inc.held)) return true
    inc.held = IntervalSet.EMPTY
    return false
  }

  private drop (t: Transfer): void {
    this.transfers.delete(t.id)
    for (const inc of t.incoming) {
      if (inc.from !== null) {
        const byStream = this.incomingBy.get(inc.from)
        byStream?.delete(inc.stream)
        // A sender's empty map is kept for its next stream, up to MAX_IDLE_SENDERS of them.
        if (byStream?.size === 0 && this.incomingBy.size > MAX_IDLE_SENDERS) this.incomingBy.delete(inc.from)
      }
      for (const r of inc.routes) this.outgoing.delete(r.stream)
    }
  }
}
