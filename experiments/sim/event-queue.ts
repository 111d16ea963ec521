/**
 * The simulator's event queue: a binary min-heap over virtual time. Ties are broken by
 * insertion order, so a run is fully determined by the order of `push` calls.
 *
 * Times, sequence numbers and items live in three parallel arrays: no wrapper object or
 * closure is allocated per queued event, and the sift loops move a hole instead of
 * swapping.
 */

/** One event taken off an {@link EventQueue}. */
export interface QueuedEvent<T> {
  /** The virtual time the event was pushed for, in milliseconds. */
  readonly timeMs: number
  /** The pushed item. */
  readonly item: T
}

/**
 * A min-priority queue ordered by `(timeMs, seq)`, where `seq` counts `push` calls:
 * items with equal times pop in the order they were pushed.
 */
export class EventQueue<T> {
  private readonly times: number[] = []
  private readonly seqs: number[] = []
  private readonly items: T[] = []
  private nextSeq = 0

  /** Number of queued items. */
  get size(): number {
    return this.times.length
  }

  /**
   * Queues `item` for virtual time `timeMs` (milliseconds; `±Infinity` allowed).
   * Throws a `RangeError` when `timeMs` is NaN.
   */
  push(timeMs: number, item: T): void {
    if (Number.isNaN(timeMs)) throw new RangeError('EventQueue.push: timeMs is NaN')
    const times = this.times
    const seqs = this.seqs
    const items = this.items
    const seq = this.nextSeq++
    let i = times.length
    times.push(timeMs)
    seqs.push(seq)
    items.push(item)
    // Sift up. `seq` is larger than every queued seq, so a parent with an equal time
    // already comes first.
    while (i > 0) {
      const p = (i - 1) >>> 1
      const pt = times[p] as number
      if (pt <= timeMs) break
      times[i] = pt
      seqs[i] = seqs[p] as number
      items[i] = items[p] as T
      i = p
    }
    times[i] = timeMs
    seqs[i] = seq
    items[i] = item
  }

  /** Removes and returns the earliest event (first pushed among equal times), or undefined when empty. */
  pop(): QueuedEvent<T> | undefined {
    const timeMs = this.times[0]
    if (timeMs === undefined) return undefined
    return { timeMs, item: this.popItem() }
  }

  /**
   * Removes the earliest event and returns its item, without the `{ timeMs, item }` record
   * `pop` makes: a driver that read the time with `peekTime` first (as the simulator's
   * loop does for every event) allocates nothing per event. Call it only on a non-empty
   * queue; throws a `RangeError` on an empty one.
   */
  popItem(): T {
    const times = this.times
    const seqs = this.seqs
    const items = this.items
    const n = times.length
    if (n === 0) throw new RangeError('EventQueue.popItem: the queue is empty')
    const topItem = items[0] as T
    const lastTime = times.pop() as number
    const lastSeq = seqs.pop() as number
    const lastItem = items.pop() as T
    const m = n - 1
    if (m > 0) {
      // Sift the former last element down from the root.
      const half = m >>> 1
      let i = 0
      while (i < half) {
        let c = 2 * i + 1
        let ct = times[c] as number
        let cs = seqs[c] as number
        const r = c + 1
        if (r < m) {
          const rt = times[r] as number
          const rs = seqs[r] as number
          if (rt < ct || (rt === ct && rs < cs)) {
            c = r
            ct = rt
            cs = rs
          }
        }
        if (lastTime < ct || (lastTime === ct && lastSeq < cs)) break
        times[i] = ct
        seqs[i] = cs
        items[i] = items[c] as T
        i = c
      }
      times[i] = lastTime
      seqs[i] = lastSeq
      items[i] = lastItem
    }
    return topItem
  }

  /** The time of the earliest queued event, or undefined when empty. */
  peekTime(): number | undefined {
    return this.times[0]
  }

  /** Drops every queued item. The insertion counter keeps running. */
  clear(): void {
    this.times.length = 0
    this.seqs.length = 0
    this.items.length = 0
  }
}
