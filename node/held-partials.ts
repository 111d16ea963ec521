/**
 * Reduction partials on their way to one peer (node/links.ts), fed to its control stream
 * as the stream drains instead of queued there all at once.
 *
 * A peer sends every segment of its partial as soon as the segment covers its part, so a
 * leaf of a long reduction emits the whole array in one event, and a pulled owner answers
 * every segment pulled in one event too: 80 MB for 10^7 elements. Queued on the control
 * stream whole, that passed the stream's `maxQueuedBytes` (32 MiB), the stream was reset as
 * stuck, and the partials it still held were lost: the root pulled them again after 4 s,
 * and their answers overflowed the same way (until 2026-11-28).
 *
 * So partials wait here while the control stream holds `highWaterBytes` or more, or while
 * earlier partials wait (they keep their order), and go to the stream as it drains, at most
 * up to that mark at a time. Other control messages and heartbeats go straight to the
 * stream: they wait behind at most about `highWaterBytes` of partials, not behind the
 * whole array. A held partial is the core's message, unencoded: it references the
 * segment's array (no copy), so what waits here is bounded by the reductions in flight,
 * which the core bounds (`maxReduceLength`, `maxActiveTransfers`), not by the stuck-peer
 * limit; a peer that stops reading is still found by its silence, and what it was sent
 * goes with its record when it is forgotten.
 */
import type { Message } from '../overlay/messages.ts'
import type { FrameChannel } from './frame-channel.ts'

/** Bytes a partial is counted for here (its array plus its header, about). */
export function partialBytes (msg: Message): number {
  return msg.t === 'partial' ? msg.value.byteLength + 256 : 0
}

/** The partials waiting for one peer's control stream, in order. */
export class HeldPartials {
  private queue: Message[] = []
  private head = 0
  /** Bytes waiting here (see {@link partialBytes}). */
  bytes = 0

  get size (): number { return this.queue.length - this.head }

  /** Whether `msg` must wait here rather than go to `ch` now (`ch` undefined: no stream yet). */
  mustHold (msg: Message, ch: FrameChannel | undefined, highWaterBytes: number): boolean {
    return msg.t === 'partial' && (this.size > 0 || ch === undefined || ch.queuedBytes >= highWaterBytes)
  }

  hold (msg: Message): void {
    this.queue.push(msg)
    this.bytes += partialBytes(msg)
  }

  /** Hands partials to `write` (for `ch`) while `ch` holds less than `highWaterBytes`. */
  feed (ch: FrameChannel, highWaterBytes: number, write: (msg: Message) => void): void {
    while (this.head < this.queue.length && !ch.closed && ch.queuedBytes < highWaterBytes) {
      const msg = this.queue[this.head] as Message
      this.queue[this.head] = undefined as unknown as Message
      this.head++
      this.bytes -= partialBytes(msg)
      write(msg)
    }
    if (this.head === this.queue.length) {
      this.queue = []
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head)
      this.head = 0
    }
  }
}
