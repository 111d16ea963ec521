/**
 * A stand-in for a libp2p stream (or a raw connection) in unit tests: it records what is
 * sent and can be fed bytes as if they arrived, with the events FrameChannel listens to.
 */
import type { Uint8ArrayList } from 'uint8arraylist'

export class FakeStream<T = Uint8ArrayList> extends EventTarget {
  writeStatus = 'writable'
  readStatus = 'readable'
  readonly writableNeedsDrain: boolean = false
  /** Everything passed to `send`, in order. */
  readonly sent: T[] = []
  aborted: Error | undefined
  send (data: T): boolean { this.sent.push(data); return true }
  /** Delivers `data` as if it had arrived from the remote end. */
  feed (data: T): void { this.dispatchEvent(Object.assign(new Event('message'), { data })) }
  pause (): void {}
  resume (): void {}
  abort (err: Error): void { this.aborted = err }
  async close (): Promise<void> {}
}
