/**
 * Per-stream delivered sets, bounded: the oldest streams are forgotten first once the
 * capacity is reached (a Map keeps insertion order).
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'

/** Which virtual nodes had which stream delivered here. */
export class DedupeCache {
  private readonly map = new Map<string, IntervalSet>()
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

  /** Every entry (for hand-off records). */
  entries (): IterableIterator<[string, IntervalSet]> {
    return this.map.entries()
  }

  get size (): number { return this.map.size }
}
