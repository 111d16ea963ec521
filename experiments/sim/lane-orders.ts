/**
 * The order of every lane of a directed peer pair (network.ts, "Lanes"): bulk messages are
 * resolved (given their delivery time) in send order, and a small message waits only for
 * the earlier bulk messages of its own lane, and is never delivered before an earlier
 * message of the lane.
 *
 * Idle entries (nothing queued, last delivery past) are swept out once the map has doubled
 * since the last sweep: a fresh entry behaves the same, and a map of the lanes in use, not
 * of every pair that ever spoke, keeps each message's lookup cheap.
 *
 * A partitioned run (experiments/sim/parallel/) keeps the order of a lane between two
 * partitions at its receiver's side: the same operations, in the same order, fed by what
 * the sender's side exported.
 */

/** The ordering map of lanes is first swept of idle lanes at this size. */
const MIN_SWEEP = 4096

/** A small message held back by an earlier bulk message of its lane. */
export interface SmallWaiting<A> { seq: number, fastMs: number, onArrive: A }

/** One lane's order: the next sequence number, the bulk messages not resolved yet, the small ones they hold back. */
export interface LaneOrder<A> { nextSeq: number, bulk: number[], waiting: Array<SmallWaiting<A>>, lastMs: number }

/** The lanes of one network. */
export class LaneOrders<A> {
  private readonly lanes = new Map<number, LaneOrder<A>>()
  private sweepAt = MIN_SWEEP

  /**
   * @param peerCount - peers of the topology (lane keys are `(from * peerCount + to) * 16 + lane`)
   * @param schedule - queues a delivery at a virtual time; equal times must run in call order
   */
  constructor (private readonly peerCount: number, private readonly schedule: (timeMs: number, onArrive: A) => void) {}

  /** The order of lane `lane` from `from` to `to` (made if new; idle ones are swept first when the map is full). */
  of (nowMs: number, from: number, to: number, lane: number): LaneOrder<A> {
    if (!Number.isInteger(lane) || lane < 0 || lane > 15) throw new RangeError(`send: lane must be an integer in 0..15, got ${lane}`)
    const key = (from * this.peerCount + to) * 16 + lane
    let o = this.lanes.get(key)
    if (o === undefined) {
      if (this.lanes.size >= this.sweepAt) this.sweep(nowMs)
      o = { nextSeq: 0, bulk: [], waiting: [], lastMs: 0 }
      this.lanes.set(key, o)
    }
    return o
  }

  /** A small message `seq` that would arrive at `fastMs` unhindered: delivered then, or held by an earlier bulk message. */
  small (order: LaneOrder<A>, seq: number, fastMs: number, onArrive: A): void {
    if (order.bulk.length === 0) {
      const at = Math.max(fastMs, order.lastMs)
      order.lastMs = at
      this.schedule(at, onArrive)
    } else {
      order.waiting.push({ seq, fastMs, onArrive })
    }
  }

  /** Bulk message `seq` will be delivered at `doneMs`. */
  resolved (order: LaneOrder<A>, seq: number, doneMs: number): void {
    if (order.bulk[0] === seq) order.bulk.shift()
    else order.bulk.splice(order.bulk.indexOf(seq), 1)
    if (doneMs > order.lastMs) order.lastMs = doneMs
    this.release(order)
  }

  /** Bulk message `seq` is lost (its sender crashed): it leaves its lane, and so do the small messages that followed it. */
  lost (order: LaneOrder<A>, seq: number): void {
    const i = order.bulk.indexOf(seq)
    if (i >= 0) order.bulk.splice(i, 1)
    order.waiting = order.waiting.filter((w) => w.seq < seq)
    this.release(order)
  }

  /** Forgets every lane `peer` sends on (it crashed: a later life has new connections). */
  forgetSender (peer: number): void {
    for (const key of [...this.lanes.keys()]) if (Math.floor(key / (16 * this.peerCount)) === peer) this.lanes.delete(key)
  }

  /** Lanes in the map (for tests of the sweep). */
  get size (): number { return this.lanes.size }

  /** Schedules the small messages of `order` that no earlier bulk message holds back any more. */
  private release (order: LaneOrder<A>): void {
    const next = order.bulk[0] ?? Infinity
    while (order.waiting.length > 0 && (order.waiting[0] as SmallWaiting<A>).seq < next) {
      const w = order.waiting.shift() as SmallWaiting<A>
      const at = Math.max(w.fastMs, order.lastMs)
      order.lastMs = at
      this.schedule(at, w.onArrive)
    }
  }

  /** Forgets lanes with nothing queued whose last delivery is not after `nowMs` (no message refers to them). */
  private sweep (nowMs: number): void {
    for (const [key, o] of this.lanes) if (o.bulk.length === 0 && o.waiting.length === 0 && o.lastMs <= nowMs) this.lanes.delete(key)
    this.sweepAt = Math.max(MIN_SWEEP, 2 * this.lanes.size)
  }
}
