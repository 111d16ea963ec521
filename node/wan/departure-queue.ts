/**
 * The wire of a pipe: pieces in departure order, which is also arrival order (the delay is
 * constant and departures are monotonic), so a FIFO is all that is needed.
 */

/** A piece of a flow on the wire, and when it arrives. */
export interface Departure<F, D> {
  readonly at: number
  readonly flow: F
  readonly data: D
}

/** FIFO with amortised O(1) shift. */
export class DepartureQueue<F, D> {
  private items: Departure<F, D>[] = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  push(d: Departure<F, D>): void {
    this.items.push(d)
  }

  peekAt(): number {
    return this.items[this.head]?.at ?? Infinity
  }

  shift(): Departure<F, D> | undefined {
    const d = this.items[this.head]
    if (d === undefined) return undefined
    this.head++
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return d
  }
}
