/**
 * The core's deadlines. Each entry is a tagged kind with a key, never a callback, so the
 * set of timers a core can have is fixed and inspectable; the driver keeps one real timer
 * armed at `nextAt()` and calls the core's `handleTimeout(now)` when it fires.
 */

/** The kinds of deadline the core sets. */
export type TimerKind = 'probe' | 'liveness' | 'reduce' | 'leave' | 'park' | 'gc' | 'lock' | 'suspect' | 'steady' | 'tree' | 'claim' | 'ask'

/** One deadline. */
export interface TimerEntry { readonly at: number, readonly kind: TimerKind, readonly key: string, readonly seq: number }

/** A min-heap of deadlines ordered by (at, seq): deterministic for equal times. */
export class TimerQueue {
  private heap: TimerEntry[] = []
  private seq = 0
  /**
   * The number of entries and the earliest deadline (valid while there is one), kept beside
   * the heap: the driver asks after every input, and reading them here spares loading the
   * heap array and its top entry.
   */
  private count = 0
  private firstAt = 0

  add (at: number, kind: TimerKind, key = ''): void {
    const e: TimerEntry = { at, kind, key, seq: this.seq++ }
    const h = this.heap
    h.push(e)
    this.count++
    let i = h.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      const pe = h[p] as TimerEntry
      if (less(pe, e)) break
      h[i] = pe
      i = p
    }
    h[i] = e
    if (i === 0) this.firstAt = at
  }

  nextAt (): number | undefined {
    return this.count === 0 ? undefined : this.firstAt
  }

  /** Removes and returns the earliest entry due at or before `now`. */
  popDue (now: number): TimerEntry | undefined {
    const h = this.heap
    const top = h[0]
    if (top === undefined || top.at > now) return undefined
    const last = h.pop() as TimerEntry
    this.count--
    if (h.length > 0) {
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        let me = last
        const le = h[l]
        const re = h[r]
        if (le !== undefined && less(le, me)) { m = l; me = le }
        if (re !== undefined && less(re, me)) { m = r; me = re }
        if (m === i) break
        h[i] = me
        i = m
      }
      h[i] = last
      this.firstAt = (h[0] as TimerEntry).at
    }
    return top
  }

  get size (): number { return this.heap.length }
}

function less (a: TimerEntry, b: TimerEntry): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq)
}
