/**
 * Answers to a reduction's pulls (overlay/reduction.ts): the root asks the owners of the
 * virtual nodes it is still missing. This peer answers for what it owns of them and
 * passes the rest on to their owners in its view (at most `maxHops` hops).
 *
 * A long reduction is pulled segment by segment, while the application's `contribute`
 * gives the whole array. Each answer computed is kept, up to {@link PULL_CACHE_BYTES}, so
 * that the next segments of the same pull are sliced from it: computing the whole array
 * again per segment made a 2^24-element reduction (2,048 segments) cost 2,048 whole
 * contributions per owner pulled (found by a reductions review). The answer just computed
 * is kept even when it alone is larger than the budget (then alone, until the pull's last
 * segment or the next answer computed): until 2026-11-28 such an answer was not kept at
 * all, and a pull of 10^7 elements (80 MB, 1,221 segments) cost each owner 1,221 whole
 * contributions, 2.5 minutes in one synchronous run, and the owners were declared dead.
 */
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipMap } from '../virtual-nodes/ownership-map.ts'
import type { Message, PullMessage, ReduceStart } from './messages.ts'
import { MAX_UNSEGMENTED_LENGTH } from './reduction-state.ts'

/** Bytes of whole-array answers kept for the next segments of their pulls (least recently used go first). */
export const PULL_CACHE_BYTES = 64 * 1024 * 1024

/** What answering pulls needs from the peer around it. */
export interface PullHost {
  readonly self: PeerId
  readonly view: OwnershipMap
  owned (): IntervalSet
  isAlive (peer: PeerId): boolean
  send (to: PeerId, msg: Message): void
  contribute (id: string, start: ReduceStart, vnodes: IntervalSet): Float64Array
  /** Of `vnodes`, those no owner contributed to collective reduction `id` yet, now marked contributed. */
  claim (id: string, vnodes: IntervalSet): IntervalSet
  reject (reason: string): void
}

export class PullAnswers {
  /** Whole arrays answered, by reduction, length and virtual nodes, in use order. */
  private readonly cache = new Map<string, Float64Array>()
  private bytes = 0
  /** Contributions computed for pulls (a test counts them). */
  computed = 0

  /** `cacheBytes`: the budget of answers kept (tests shrink it). */
  constructor (private readonly host: PullHost, private readonly cacheBytes = PULL_CACHE_BYTES) {}

  /** The root of `msg` asks for contributions of virtual nodes it is missing. */
  answer (msg: PullMessage, maxHops: number): void {
    // An unsegmented answer is one partial: it must fit one frame.
    if ((msg.seg === undefined || msg.segment === undefined) && msg.length > MAX_UNSEGMENTED_LENGTH) { this.host.reject('bad-pull'); return }
    const mine = msg.want.intersection(this.host.owned())
    if (!mine.isEmpty) {
      // Answered whatever was contributed before (it may be lost); a later call of a
      // collective reduction here does not contribute these again.
      if (msg.coll === true) this.host.claim(msg.id, mine)
      const { seg, segment } = msg
      if (seg === undefined || segment === undefined) this.host.send(msg.root, { t: 'partial', id: msg.id, root: msg.root, op: msg.op, covered: mine, value: this.whole(msg, mine, false) })
      else {
        const value = this.whole(msg, mine, true).slice(seg * segment, (seg + 1) * segment)
        // The last segment: an answer kept over the budget is not needed any more.
        if ((seg + 1) * segment >= msg.length && this.bytes > this.cacheBytes) this.drop(this.keyOf(msg, mine))
        this.host.send(msg.root, { t: 'partial', id: msg.id, root: msg.root, op: msg.op, covered: mine, value, seg })
      }
    }
    const rest = msg.want.difference(mine)
    if (rest.isEmpty || msg.hops >= maxHops) return
    for (const [owner, part] of this.host.view.partition(rest)) {
      if (owner === this.host.self || !this.host.isAlive(owner)) continue
      this.host.send(owner, { ...msg, want: part, hops: msg.hops + 1 })
    }
  }

  /** This peer's whole contribution to `msg` for `mine`; `keep`: kept for the pull's other segments. */
  private whole (msg: PullMessage, mine: IntervalSet, keep: boolean): Float64Array {
    const key = this.keyOf(msg, mine)
    const hit = this.cache.get(key)
    if (hit !== undefined) {
      this.cache.delete(key)
      this.cache.set(key, hit)
      return hit
    }
    const start: ReduceStart = { op: msg.op, rootVnode: 0, length: msg.length }
    const value = this.host.contribute(msg.id, start, mine)
    this.computed++
    if (!keep) return value
    this.cache.set(key, value)
    this.bytes += value.byteLength
    // Least recently used first, but never this one (the last in the map).
    for (const k of this.cache.keys()) {
      if (this.bytes <= this.cacheBytes || k === key) break
      this.drop(k)
    }
    return value
  }

  private keyOf (msg: PullMessage, mine: IntervalSet): string {
    return `${msg.id}\u0000${msg.op}\u0000${msg.length}\u0000${mine.toString()}`
  }

  private drop (key: string): void {
    const v = this.cache.get(key)
    if (v === undefined) return
    this.cache.delete(key)
    this.bytes -= v.byteLength
  }
}
