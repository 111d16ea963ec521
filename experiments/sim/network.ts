/**
 * The simulated network. A message (already a chunk: it is never segmented further)
 * from peer `a` to peer `b` passes store-and-forward through FIFO servers in sequence:
 *
 * 1. `a`'s uplink at `peerLinkBytesPerSec`. With `uplinkQueueing: 'fair'` (the default) a
 *    busy uplink serves the flows (lanes of directed peer pairs) with queued messages in
 *    turn, one message each, as the kernel's TCP connections share a NIC: a 128 KB probe
 *    reply waits for one chunk of each other backlogged flow, not for the 78 MB a root
 *    queued to re-send a broadcast to 19 peers after a mass leave. A message sent while
 *    the uplink is idle and nothing waits departs at `now + size/rate`, computed at send
 *    time; a queued one is picked by an event when the uplink frees. With 'fifo' it departs
 *    at `max(now, uplinkFree[a]) + size/rate`, computed at send time (exact because `a`'s
 *    sends come in time order).
 * 2. Only between clusters: the one WAN link of the cluster pair, in direction a→b, at the
 *    pair's rate. The message joins it when it reaches it (an event at the uplink
 *    departure). With `wanQueueing: 'fair'` (the default) the link serves the flows
 *    (lanes of directed peer pairs: the node's streams) with queued messages in turn, one
 *    message each, as TCP connections share a bottleneck and yamux interleaves the streams
 *    of one: a 128 KB probe reply does not wait behind megabytes of broadcast chunks queued
 *    on the same or another pair. With 'fifo' it serves messages in arrival order.
 * 3. Propagation: half the pair's RTT, folded into the arrival time of the next stage.
 * 4. `b`'s downlink at `peerLinkBytesPerSec`, reserved when the message arrives (an event).
 * 5. `b`'s CPU: `max(downlinkDone, cpuFree[b]) + perMessageCostMs + size * perByteCostMs`,
 *    computed in the same event as the downlink (exact: downlink completions come in
 *    reservation order, so the CPU sees messages in that order); `onArrive` is then
 *    scheduled for that time.
 *
 * So a message costs at most three scheduled events, plus one if it queued on a fair
 * uplink (its turn) and one with fair WAN queueing (its turn on the link ends in an
 * event): WAN entry (cross-cluster only), arrival at `b`, and delivery. Zero-size messages still pay propagation and the
 * per-message cost; a loopback message (`a === b`) is delivered `perMessageCostMs` after
 * the send and touches no link, CPU queue or statistic.
 *
 * Lanes. Each pair has ordered lanes (like the streams of one connection): bulk messages
 * of every lane go through the FIFO stages below in send order, and a small message (see
 * `sendSmall`) waits only for the earlier bulk messages of its own lane, so it may
 * overtake another lane's. Why messages of one lane are never reordered: take m1 sent from `a` to
 * `b` before m2 (both not loopback). (1) Both are of one flow: 'fair' queues a flow's
 * messages in order and lets one depart directly only when nothing waits, and 'fifo'
 * serves all in order; `uplinkFree[a]` never decreases and is set to each departure, so m2
 * starts after m1 departs, and m1's onward event is scheduled first (when m1 is served).
 * (2) Cross-cluster, both WAN-entry events are
 * scheduled at those departures; the driver's queue pops ties in scheduling order, and m1's
 * was scheduled first, so m1 reserves the WAN link first and, as `wanFree` never
 * decreases, finishes it no later than m2. (3) Both then add the same propagation delay;
 * floating-point addition is monotonic, so m1 arrives no later, and its arrival event was
 * scheduled before m2's (during an earlier event, or earlier in the same send order for
 * intra-cluster messages), so ties again favour m1. (4)-(5) The downlink and CPU are each
 * reserved in that order with never-decreasing free times, so m1's delivery time is no
 * later than m2's and m1's `onArrive` is scheduled first. Every stage is FIFO and ties
 * are broken by scheduling order, hence delivery order equals send order. This relies on
 * `schedule` being FIFO among equal times (as `EventQueue` is) and on events being
 * run in time order. Loopback messages are FIFO as long as their send times do not
 * decrease.
 */
import type { Topology } from './topology.ts'
import { LaneOrders, type LaneOrder } from './lane-orders.ts'

export {
  DEFAULT_INTER_RTT_MS,
  DEFAULT_INTRA_RTT_MS,
  DEFAULT_PEER_LINK_BYTES_PER_SEC,
  DEFAULT_PER_BYTE_COST_MS,
  DEFAULT_PER_MESSAGE_COST_MS,
  DEFAULT_WAN_LINK_BYTES_PER_SEC,
  resolveTopology
} from './topology.ts'
export type { ClusterInit, ResolvedCluster, Topology, TopologyInit } from './topology.ts'
export { InvalidTopologyError } from './errors.ts'

const MS_PER_SEC = 1000

/** Traffic counted by a {@link Network} (loopback messages excluded), at send time. */
export interface NetworkStats {
  /** Messages sent. */
  readonly messages: number
  /** Bytes sent. */
  readonly bytes: number
  /** Bytes sent between different clusters (over WAN links). */
  readonly wanBytes: number
  /**
   * Bytes sent between clusters `a` and `b` in either direction; `bytesBetween(c, c)` is
   * the traffic inside cluster `c`.
   */
  bytesBetween(a: number, b: number): number
  /** Bytes sent from cluster `from` to cluster `to` (directed). */
  bytesFromTo(from: number, to: number): number
}

/**
 * Queues `event` for virtual time `timeMs`; must run equal times in call order. An event is
 * either one of the network's own steps (a function: call it) or an arrival `A` a sender
 * handed to `send` (whatever the driver does when a message arrives). With the default
 * `A`, an arrival is a function too; a driver with another `A` tells them apart with
 * `typeof event === 'function'`, so its `A` must not be a function type unless it is
 * called like the network's steps. Why not always a callback: the simulator sends a
 * message per event, and a closure per message (and its context) was a tenth of the
 * collector's work.
 */
export type ScheduleFn<A = () => void> = (timeMs: number, event: (() => void) | A) => void

/**
 * Link, WAN and CPU queues of a {@link Topology}, driven by the simulator's event queue.
 * `A`: what a sender hands to `send` and gets back through `schedule` when the message
 * arrives (see {@link ScheduleFn}).
 */
export class Network<A = () => void> {
  private readonly k: number
  private readonly clusterIndex: Uint32Array
  private readonly uplinkFreeAtMs: Float64Array
  private readonly downlinkFreeAtMs: Float64Array
  private readonly cpuFreeAtMs: Float64Array
  /** WAN link busy-until per ordered cluster pair `from * k + to` ('fifo'). */
  private readonly wanFreeAtMs: Float64Array
  /** 'fair': per ordered cluster pair, the queued messages of each flow and the flows' turn order. */
  private readonly wanFlows: Array<Map<number, WanMessage[]>> = []
  private readonly wanTurns: number[][] = []
  private readonly wanBusy: Uint8Array
  /** 'fair' uplinks: per busy peer, the queued messages of each flow (`to * 16 + lane`) and the flows' turn order; undefined while nothing waits. */
  private readonly upFlows: Array<Map<number, Array<UplinkMessage<A>>> | undefined>
  private readonly upTurns: Array<number[] | undefined>
  private readonly wanBytesPerSec: Float64Array
  private readonly oneWayMs: Float64Array
  private readonly pairBytes: Float64Array
  /** Per lane of a directed peer pair: ordering state for the small-message fast path (lane-orders.ts). */
  private readonly lanes: LaneOrders<A>
  /** Per peer, its current life: a crash ends it (see `crash`), and a message remembers the life that sent it. */
  private readonly lives: Life[]
  /** Set by a partitioned run (experiments/sim/parallel/): messages to peers another thread simulates leave through it. */
  border: NetworkBorder<A> | null = null
  /** The latest send time: sends come in time order (FIFO uplinks and the sweep rely on it). */
  private lastSendMs = -Infinity
  private messages = 0
  private bytes = 0
  private wanBytes = 0

  /**
   * @param topology - a resolved topology (see `resolveTopology`)
   * @param schedule - queues a callback at a virtual time; equal times must run in call order
   */
  constructor(readonly topology: Topology, private readonly schedule: ScheduleFn<A>) {
    const n = topology.peerCount
    const k = topology.clusters.length
    this.k = k
    this.lanes = new LaneOrders<A>(n, (t, a) => { this.schedule(t, a) })
    this.clusterIndex = new Uint32Array(n)
    for (let p = 0; p < n; p++) this.clusterIndex[p] = topology.clusterOf(p)
    this.uplinkFreeAtMs = new Float64Array(n)
    this.downlinkFreeAtMs = new Float64Array(n)
    this.cpuFreeAtMs = new Float64Array(n)
    this.upFlows = new Array<undefined>(n).fill(undefined)
    this.upTurns = new Array<undefined>(n).fill(undefined)
    this.lives = Array.from({ length: n }, () => ({ endedAtMs: Infinity }))
    this.wanFreeAtMs = new Float64Array(k * k)
    this.wanBusy = new Uint8Array(k * k)
    for (let i = 0; i < k * k; i++) { this.wanFlows.push(new Map()); this.wanTurns.push([]) }
    this.wanBytesPerSec = new Float64Array(k * k)
    this.oneWayMs = new Float64Array(k * k)
    this.pairBytes = new Float64Array(k * k)
    for (let i = 0; i < k; i++) {
      for (let j = 0; j < k; j++) {
        this.wanBytesPerSec[i * k + j] = topology.wanLinkBytesPerSec[i]?.[j] as number
        this.oneWayMs[i * k + j] = (topology.interRttMs[i]?.[j] as number) / 2
      }
    }
  }

  /**
   * Sends `sizeBytes` from peer `from` to peer `to` at virtual time `nowMs`; `onArrive` is
   * scheduled (passed to `schedule`) for when `to` has received and processed it. `lane` (a small integer, default
   * 0) names an ordered lane of the pair: messages of one lane are never reordered, those of
   * different lanes may be (like two streams of one connection). Throws a `RangeError` on a peer
   * outside the topology, a non-finite `nowMs`, a `nowMs` before the previous send's (sends
   * come in time order, as a discrete-event loop makes them) or a size that is not a finite
   * number >= 0.
   */
  send(nowMs: number, from: number, to: number, sizeBytes: number, onArrive: A, lane = 0): void {
    const n = this.topology.peerCount
    if (!Number.isInteger(from) || from < 0 || from >= n) throw new RangeError(`send: from must be a peer in 0..${n - 1}, got ${from}`)
    if (!Number.isInteger(to) || to < 0 || to >= n) throw new RangeError(`send: to must be a peer in 0..${n - 1}, got ${to}`)
    if (!Number.isFinite(nowMs)) throw new RangeError(`send: nowMs must be finite, got ${nowMs}`)
    if (!Number.isFinite(sizeBytes) || sizeBytes < 0) throw new RangeError(`send: sizeBytes must be a finite number >= 0, got ${sizeBytes}`)
    if (nowMs < this.lastSendMs) throw new RangeError(`send: nowMs must not decrease (the lanes' order depends on it), got ${nowMs} after ${this.lastSendMs}`)
    this.lastSendMs = nowMs
    if (from === to) {
      this.schedule(nowMs + this.topology.perMessageCostMs, onArrive)
      return
    }
    const ca = this.clusterIndex[from] as number
    const cb = this.clusterIndex[to] as number
    const pair = ca * this.k + cb
    this.messages++
    this.bytes += sizeBytes
    this.pairBytes[pair] = (this.pairBytes[pair] as number) + sizeBytes
    if (this.topology.smallMessageBytes > 0 && sizeBytes <= this.topology.smallMessageBytes) {
      this.sendSmall(nowMs, from, to, sizeBytes, ca !== cb, onArrive, lane)
      return
    }
    if (ca !== cb) this.wanBytes += sizeBytes
    let order: LaneOrder<A> | null = null
    let seq: number
    const border = this.border
    if (border !== null && border.isRemote(to)) {
      // The receiver's side keeps this lane's order (lane-orders.ts): it learns of the message now.
      seq = border.nextSeq()
      border.announce(from, to, lane, seq)
    } else {
      order = this.lanes.of(nowMs, from, to, lane)
      seq = order.nextSeq++
      order.bulk.push(seq)
    }
    const m: UplinkMessage<A> = { from, to, lane, flow: to * 16 + lane, sizeBytes, onArrive, order, seq, life: this.lives[from] as Life }
    if (this.topology.uplinkQueueing === 'fifo') {
      this.depart(Math.max(nowMs, this.uplinkFreeAtMs[from] as number), from, m)
      return
    }
    const flows = this.upFlows[from]
    if (flows === undefined && (this.uplinkFreeAtMs[from] as number) <= nowMs) {
      this.depart(nowMs, from, m)
      return
    }
    this.upEnqueue(from, m)
  }

  /** 'fair': `m` waits for its flow's turn on `from`'s busy uplink. */
  private upEnqueue(from: number, m: UplinkMessage<A>): void {
    let flows = this.upFlows[from]
    if (flows === undefined) {
      flows = new Map()
      this.upFlows[from] = flows
      this.upTurns[from] = []
      this.scheduleUpServe(from)
    }
    const q = flows.get(m.flow)
    if (q !== undefined) q.push(m)
    else {
      flows.set(m.flow, [m])
      ;(this.upTurns[from] as number[]).push(m.flow)
    }
  }

  /** 'fair': `from`'s uplink is free at `nowMs`: it sends the head message of the next flow in turn. */
  private upServe(nowMs: number, from: number): void {
    const flows = this.upFlows[from] as Map<number, Array<UplinkMessage<A>>>
    const turns = this.upTurns[from] as number[]
    const flow = turns.shift() as number
    const q = flows.get(flow) as Array<UplinkMessage<A>>
    const m = q.shift() as UplinkMessage<A>
    if (q.length > 0) turns.push(flow)
    else flows.delete(flow)
    this.depart(nowMs, from, m)
    if (turns.length === 0) {
      this.upFlows[from] = undefined
      this.upTurns[from] = undefined
      return
    }
    this.scheduleUpServe(from)
  }

  /** 'fair': `from`'s uplink serves its next queued message when it frees (unless `from` crashes first). */
  private scheduleUpServe (from: number): void {
    const freeMs = this.uplinkFreeAtMs[from] as number
    const life = this.lives[from] as Life
    this.schedule(freeMs, () => { if (life === this.lives[from]) this.upServe(freeMs, from) })
  }

  /**
   * Peer `peer` crashes at `nowMs`: what it had not finished putting on the wire is lost
   * (its queued messages, the one it was serializing, and in each lane every later message,
   * which would follow them on the same stream), and its uplink is free for whatever a
   * later incarnation sends, on lanes of its own (new connections). Messages that left its
   * uplink before the crash still arrive.
   */
  crash (nowMs: number, peer: number): void {
    const n = this.topology.peerCount
    if (!Number.isInteger(peer) || peer < 0 || peer >= n) throw new RangeError(`crash: peer must be in 0..${n - 1}, got ${peer}`)
    const life = this.lives[peer] as Life
    life.endedAtMs = nowMs
    this.lives[peer] = { endedAtMs: Infinity }
    const flows = this.upFlows[peer]
    if (flows !== undefined) for (const q of flows.values()) for (const m of q) this.lost(m)
    this.upFlows[peer] = undefined
    this.upTurns[peer] = undefined
    if ((this.uplinkFreeAtMs[peer] as number) > nowMs) this.uplinkFreeAtMs[peer] = nowMs
    this.lanes.forgetSender(peer)
  }

  /** Whether `m`, which finished leaving its sender's uplink at `departMs`, was lost in a crash of its sender before that. */
  private cut (m: UplinkMessage<A>, departMs: number): boolean {
    if (departMs <= m.life.endedAtMs) return false
    this.lost(m)
    return true
  }

  /** `m` is lost: it leaves its lane, and so do the small messages that followed it there. */
  private lost (m: UplinkMessage<A>): void {
    if (m.order === null) (this.border as NetworkBorder<A>).lost(m.from, m.to, m.lane, m.seq)
    else this.lanes.lost(m.order, m.seq)
  }

  /** `m` starts on `from`'s uplink at `startMs`: it departs once serialized, then crosses the WAN link (if any) and reaches its receiver. */
  private depart(startMs: number, from: number, m: UplinkMessage<A>): void {
    const { to, sizeBytes, onArrive, order, seq } = m
    const n = this.topology.peerCount
    const resolve = (doneMs: number): void => { if (order !== null) this.lanes.resolved(order, seq, doneMs) }
    const departMs = startMs + sizeBytes * MS_PER_SEC / this.topology.peerLinkBytesPerSec
    this.uplinkFreeAtMs[from] = departMs
    const ca = this.clusterIndex[from] as number
    const cb = this.clusterIndex[to] as number
    const pair = ca * this.k + cb
    const oneWayMs = this.oneWayMs[pair] as number
    if (ca === cb) {
      const arriveMs = departMs + oneWayMs
      this.schedule(arriveMs, () => { if (!this.cut(m, departMs)) this.receive(arriveMs, to, sizeBytes, onArrive, resolve) })
      return
    }
    const crossed = (wanDoneMs: number): void => {
      const arriveMs = wanDoneMs + oneWayMs
      if (order === null) (this.border as NetworkBorder<A>).bulk(arriveMs, from, to, m.lane, seq, sizeBytes, onArrive)
      else this.schedule(arriveMs, () => this.receive(arriveMs, to, sizeBytes, onArrive, resolve))
    }
    if (this.topology.wanQueueing === 'fair') {
      this.schedule(departMs, () => { if (!this.cut(m, departMs)) this.wanEnqueue(departMs, pair, from * n * 16 + m.flow, { sizeBytes, crossed }) })
      return
    }
    this.schedule(departMs, () => {
      if (this.cut(m, departMs)) return
      const wanDoneMs = Math.max(departMs, this.wanFreeAtMs[pair] as number) + sizeBytes * MS_PER_SEC / (this.wanBytesPerSec[pair] as number)
      this.wanFreeAtMs[pair] = wanDoneMs
      crossed(wanDoneMs)
    })
  }

  /** 'fair': a message of flow `flow` (a lane of a directed peer pair) joins WAN link `pair` at `nowMs`. */
  private wanEnqueue(nowMs: number, pair: number, flow: number, m: WanMessage): void {
    const flows = this.wanFlows[pair] as Map<number, WanMessage[]>
    const q = flows.get(flow)
    if (q !== undefined) q.push(m)
    else {
      flows.set(flow, [m])
      ;(this.wanTurns[pair] as number[]).push(flow)
    }
    if (this.wanBusy[pair] === 0) this.wanServe(nowMs, pair)
  }

  /** 'fair': WAN link `pair` is free at `nowMs`: it sends the head message of the next flow in turn. */
  private wanServe(nowMs: number, pair: number): void {
    const turns = this.wanTurns[pair] as number[]
    const flow = turns.shift()
    if (flow === undefined) { this.wanBusy[pair] = 0; return }
    const flows = this.wanFlows[pair] as Map<number, WanMessage[]>
    const q = flows.get(flow) as WanMessage[]
    const m = q.shift() as WanMessage
    if (q.length > 0) turns.push(flow)
    else flows.delete(flow)
    this.wanBusy[pair] = 1
    const doneMs = nowMs + m.sizeBytes * MS_PER_SEC / (this.wanBytesPerSec[pair] as number)
    this.schedule(doneMs, () => {
      m.crossed(doneMs)
      this.wanServe(doneMs, pair)
    })
  }

  /** A snapshot of the traffic counted so far. */
  stats(): NetworkStats {
    const k = this.k
    const pairBytes = this.pairBytes.slice()
    const cluster = (c: number): number => {
      if (!Number.isInteger(c) || c < 0 || c >= k) throw new RangeError(`cluster must be an integer in 0..${k - 1}, got ${c}`)
      return c
    }
    const fromTo = (a: number, b: number): number => pairBytes[cluster(a) * k + cluster(b)] as number
    return {
      messages: this.messages,
      bytes: this.bytes,
      wanBytes: this.wanBytes,
      bytesBetween: (a, b) => a === b ? fromTo(a, a) : fromTo(a, b) + fromTo(b, a),
      bytesFromTo: fromTo
    }
  }

  /** The message reaches `to` at `arriveMs`: its downlink, then its CPU. */
  private receive(arriveMs: number, to: number, sizeBytes: number, onArrive: A, resolve: (doneMs: number) => void): void {
    const t = this.topology
    const downDoneMs = Math.max(arriveMs, this.downlinkFreeAtMs[to] as number) + sizeBytes * MS_PER_SEC / t.peerLinkBytesPerSec
    this.downlinkFreeAtMs[to] = downDoneMs
    const doneMs = Math.max(downDoneMs, this.cpuFreeAtMs[to] as number) + t.perMessageCostMs + sizeBytes * t.perByteCostMs
    this.cpuFreeAtMs[to] = doneMs
    this.schedule(doneMs, onArrive)
    resolve(doneMs)
  }

  /**
   * A message that fits in one packet: it pays serialization and propagation but does not
   * wait behind other flows' queued bulk data (packet-level interleaving), and it takes no
   * measurable capacity. It is never delivered before an earlier message of the same pair:
   * it waits until every earlier bulk message of the pair has its delivery time.
   */
  private sendSmall(nowMs: number, from: number, to: number, sizeBytes: number, wan: boolean, onArrive: A, lane: number): void {
    const t = this.topology
    const pair = (this.clusterIndex[from] as number) * this.k + (this.clusterIndex[to] as number)
    if (wan) this.wanBytes += sizeBytes
    let fastMs = nowMs + 2 * sizeBytes * MS_PER_SEC / t.peerLinkBytesPerSec + (this.oneWayMs[pair] as number) + t.perMessageCostMs + sizeBytes * t.perByteCostMs
    if (wan) fastMs += sizeBytes * MS_PER_SEC / (this.wanBytesPerSec[pair] as number)
    const border = this.border
    if (border !== null && border.isRemote(to)) { border.small(fastMs, from, to, lane, border.nextSeq(), onArrive); return }
    const order = this.lanes.of(nowMs, from, to, lane)
    this.lanes.small(order, order.nextSeq++, fastMs, onArrive)
  }

  /**
   * Partitioned runs: what another partition's border exported to a peer of this one,
   * taken in the order it was exported. A bulk message of lane `lane` was sent: later small
   * messages of the lane wait for it.
   */
  importAnnounce(nowMs: number, from: number, to: number, lane: number, seq: number): void {
    this.lanes.of(nowMs, from, to, lane).bulk.push(seq)
  }

  /** Partitioned runs: a bulk message reaches `to`'s downlink at `arriveMs` (after `importAnnounce`). */
  importBulk(nowMs: number, arriveMs: number, from: number, to: number, lane: number, seq: number, sizeBytes: number, onArrive: A): void {
    const order = this.lanes.of(nowMs, from, to, lane)
    this.schedule(arriveMs, () => this.receive(arriveMs, to, sizeBytes, onArrive, (doneMs) => this.lanes.resolved(order, seq, doneMs)))
  }

  /** Partitioned runs: a small message that would arrive at `fastMs` unhindered. */
  importSmall(nowMs: number, fastMs: number, from: number, to: number, lane: number, seq: number, onArrive: A): void {
    this.lanes.small(this.lanes.of(nowMs, from, to, lane), seq, fastMs, onArrive)
  }

  /** Partitioned runs: an announced bulk message was lost in its sender's crash. */
  importLost(nowMs: number, from: number, to: number, lane: number, seq: number): void {
    this.lanes.lost(this.lanes.of(nowMs, from, to, lane), seq)
  }

  /** Lanes in the ordering map (for tests of the sweep). */
  get pairLanes(): number { return this.lanes.size }
}


/** A bulk message on its sender's uplink: `flow` is `to * 16 + lane`; `order`/`seq` place it in its lane. */
interface UplinkMessage<A> { from: number, to: number, lane: number, flow: number, sizeBytes: number, onArrive: A, order: LaneOrder<A> | null, seq: number, life: Life }

/** One life of a peer, between its start and its crash (`endedAtMs`: Infinity while it lives). */
interface Life { endedAtMs: number }

/** A message waiting for a fair-queued WAN link; `crossed` runs when it has crossed. */
interface WanMessage { sizeBytes: number, crossed: (wanDoneMs: number) => void }

/**
 * The edge of one partition of a partitioned run (experiments/sim/parallel/): messages to
 * peers another thread simulates leave the network here, after their sender's uplink and
 * the wide-area link, as what the receiver's side needs to go on (`Network.import*`).
 * Sequence numbers are the border's own, increasing: a lane needs only their order.
 */
export interface NetworkBorder<A> {
  isRemote (peer: number): boolean
  nextSeq (): number
  /** A bulk message was sent (its lane's later small messages wait for it). */
  announce (from: number, to: number, lane: number, seq: number): void
  /** That bulk message reaches `to`'s downlink at `arriveMs`. */
  bulk (arriveMs: number, from: number, to: number, lane: number, seq: number, sizeBytes: number, onArrive: A): void
  /** A small message, delivered at `fastMs` unless an earlier bulk message of its lane holds it. */
  small (fastMs: number, from: number, to: number, lane: number, seq: number, onArrive: A): void
  /** An announced bulk message was lost in its sender's crash. */
  lost (from: number, to: number, lane: number, seq: number): void
}
