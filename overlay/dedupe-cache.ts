/**
 * Per-stream delivered sets, bounded: the oldest streams are forgotten first once the
 * capacity is reached (a Map keeps insertion order).
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { DeliveredState } from '../virtual-nodes/handoff.ts'

/** Which virtual nodes had which stream delivered here. */
export class DedupeCache {
  private map = new Map<string, IntervalSet>()
  /** Entries forgotten to stay within capacity. */
  evicted = 0

  constructor (private readonly capacity: number) {}

  get (id: string): IntervalSet {
    return this.map.get(id) ?? IntervalSet.EMPTY
  }

  set (id: string, set: IntervalSet): void {
    if (!this.map.has(id)) {
      while (this.map.size >= this.capacity) {
        const oldest = this.map.keys().next().value
        if (oldest === undefined) break
        this.map.delete(oldest)
        this.evicted++
      }
    }
    this.map.set(id, set)
  }

  /**
   * Merges a hand-off's delivered sets (`states`, the sender's entries oldest first). Set
   * one by one as newest, a long list pushed out what this peer delivered itself just
   * before, however few streams it had seen since: a part of one of them routed again
   * (its sender's upstream crashed) was delivered twice (test/handoff-dedupe). So each of
   * the sender's streams unknown here takes its age from the sender's order: it goes
   * right after the entry here of the last stream before it that both know (first of all
   * when there is none), and the oldest entries of the merged order are forgotten.
   */
  merge (states: readonly DeliveredState[]): void {
    if (states.length === 0) return
    const mine = [...this.map.keys()]
    const next = new Map<string, IntervalSet>()
    let i = 0
    for (const s of states) {
      const cur = this.map.get(s.streamId)
      if (cur === undefined) {
        next.set(s.streamId, (next.get(s.streamId) ?? IntervalSet.EMPTY).union(s.vnodes))
        continue
      }
      // A stream known here: everything here up to it comes first, in this peer's order.
      while (i < mine.length && !next.has(s.streamId)) {
        const id = mine[i++] as string
        next.set(id, this.map.get(id) as IntervalSet)
      }
      next.set(s.streamId, (next.get(s.streamId) ?? cur).union(s.vnodes))
    }
    for (; i < mine.length; i++) {
      const id = mine[i] as string
      if (!next.has(id)) next.set(id, this.map.get(id) as IntervalSet)
    }
    for (const id of next.keys()) {
      if (next.size <= this.capacity) break
      next.delete(id)
      this.evicted++
    }
    this.map = next
  }

  /** Every entry (for hand-off records). */
  entries (): IterableIterator<[string, IntervalSet]> {
    return this.map.entries()
  }

  get size (): number { return this.map.size }
}
