/**
 * One libp2p stream carrying length-prefixed frames, with a bounded send queue that
 * respects the stream's backpressure and a reader that can be paused.
 *
 * Every frame is `varint(length) | kind | body`: `kind` is a {@link FrameKind}, `body` the
 * core's codec bytes for a core message, or the driver's own small records. Queued
 * entries may be lazy (encoded only when the stream can take them), so a sender that
 * queues a whole payload's chunks holds references to the payload, not copies of it.
 *
 * Backpressure (see shared/notes/libp2p-v3.md, pitfalls 2 and 5): writing stops while
 * `stream.writableNeedsDrain` and resumes on the `'drain'` event; reading uses the
 * `'message'` listener with `pause()`/`resume()`, never `for await`.
 */
import type { Stream } from '@libp2p/interface'
import { LengthPrefixedDecoder } from '@libp2p/utils'
import { frameLengthDecoder } from './frame-length.ts'
import { Uint8ArrayList } from 'uint8arraylist'
import * as varint from 'uint8-varint'
import { ChannelClosedError, QueueFullError } from './errors.ts'

/** What a frame carries. */
export const FrameKind = {
  /** A core message (overlay/codec.ts bytes). */
  Core: 0,
  /** The sender's identity: the first frame on every stream, both ways. */
  Hello: 1,
  /** A liveness beacon. */
  Heartbeat: 2,
  /** The sender closes this connection on purpose (pruning): not a crash. */
  Bye: 3,
  /** A chunk message with its payload raw after a CBOR header (node/chunk-frame.ts). */
  Chunk: 4,
  /** Bulk streams: the transfer whose id follows (a varint) has sent its last chunk. */
  End: 5,
  /** Bulk streams, back to the sender: every chunk before that End was taken in. */
  EndAck: 6
} as const
/** One of {@link FrameKind}'s values. */
export type FrameKind = typeof FrameKind[keyof typeof FrameKind]

/**
 * Bytes written together per `send` at most (a frame larger than this goes alone): the
 * largest Noise message (65,535 bytes less its 16-byte tag) less Yamux's 12-byte frame
 * header, so that a batch crosses as one Yamux frame in one Noise message. Batches of
 * 64 KiB "plus the frame that crossed it" were split by Noise into a full message and a
 * small one: a second encryption, decryption and socket write per bulk chunk.
 */
export const BATCH_BYTES = 65_535 - 16 - 12
/** A frame's length prefix and kind byte, at most (a varint of a length < 2^35, plus 1). */
const FRAME_OVERHEAD_BYTES = 6

/** Frame channel options. */
export interface FrameChannelInit {
  /** Largest frame accepted from the remote, in bytes (kind byte included). */
  readonly maxFrameBytes: number
  /** Bytes queued (encoded or not) past which `send` throws {@link QueueFullError}. */
  readonly maxQueuedBytes: number
  /** Told the size of every frame handed to the stream (for byte counters). */
  readonly onSent?: (bytes: number) => void
  /**
   * A stream whose first frame (a hello) is due: it must come within `withinMs` and hold
   * at most `maxBytes`, or the stream is aborted. Without it a stream that never said hello
   * held up to two frames' worth of buffer (2.2 MiB) for good, 512 such per connection.
   * @default none
   */
  readonly firstFrame?: { readonly maxBytes: number, readonly withinMs: number }
  /**
   * Close this side once the remote closed its writing side (bulk streams: the sender is
   * done). Control streams keep the old half-open behaviour: with their closes answered,
   * 3 of 3 cold starts of 24 in-process peers at seeds 3 and 4 did not settle in 90 s,
   * and 2 of 2 did without (EXPERIMENTS.md, sixteenth round).
   * @default false
   */
  readonly closeOnRemoteClose?: boolean
}

/** What a channel reports to its owner. */
export interface FrameChannelHandlers {
  frame (kind: number, body: Uint8ArrayList): void
  /** Everything queued has been handed to the stream. */
  drained (): void
  /** The stream is gone (closed by either side, reset or aborted). Called once. */
  closed (err?: Error): void
}

/** A frame body: bytes, or parts written one after the other (no copy to join them). */
export type FrameBody = Uint8Array | readonly Uint8Array[]

interface Entry { readonly kind: number, readonly bytes: number, readonly body: FrameBody | (() => FrameBody) }

function bodyLength (b: FrameBody): number {
  if (b instanceof Uint8Array) return b.byteLength
  let n = 0
  for (const p of b) n += p.byteLength
  return n
}

/** A framed, backpressured stream. */
export class FrameChannel {
  private readonly queue: Entry[] = []
  private head = 0
  private queued = 0
  private waitingDrain = false
  private isClosed = false
  private aborted = false
  framesIn = 0
  private resuming = false
  private flushScheduled = false
  private pauseWanted = false
  private readonly decoder: LengthPrefixedDecoder
  /** close() calls waiting for the queue to be handed to the stream (or the stream to end). */
  private drainWaiters: Array<() => void> = []
  /** Bytes received before the first frame was whole (see `firstFrame`). */
  private bytesBeforeFirst = 0
  private firstFrameTimer: ReturnType<typeof setTimeout> | undefined
  /** When last a frame arrived (driver clock). */
  lastReceivedAt = 0
  /** Bytes written to the stream so far. */
  bytesSent = 0
  /** Entries queued so far, and handed to the stream so far (a queue position clock). */
  enqueuedCount = 0
  writtenCount = 0

  constructor (
    readonly stream: Stream,
    private readonly init: FrameChannelInit,
    private readonly handlers: FrameChannelHandlers,
    private readonly clock: () => number
  ) {
    this.decoder = new LengthPrefixedDecoder({ maxDataLength: init.maxFrameBytes, maxBufferSize: 2 * init.maxFrameBytes + 16, lengthDecoder: frameLengthDecoder(init.maxFrameBytes) })
    this.lastReceivedAt = clock()
    // Attach synchronously (pitfall 6): data arriving before a listener piles up.
    stream.addEventListener('message', (evt) => { this.onData(evt.data) })
    stream.addEventListener('drain', () => { this.waitingDrain = false; this.flush() })
    stream.addEventListener('close', (evt) => { this.finish(evt.error) })
    // libp2p closes a stream only once both ends closed their writing side: answer the
    // remote's close with ours (after what is queued), or the stream stays half open, counts
    // against the per-connection stream limit and never reports 'close' here.
    if (init.closeOnRemoteClose === true) stream.addEventListener('remoteCloseWrite', () => { void this.close() })
    if (init.firstFrame !== undefined) {
      this.firstFrameTimer = setTimeout(() => { if (this.framesIn === 0) this.abort(new Error(`no first frame within ${init.firstFrame?.withinMs} ms`)) }, init.firstFrame.withinMs)
      this.firstFrameTimer.unref?.()
    }
  }

  get closed (): boolean { return this.isClosed }
  /** Bytes queued and not yet handed to the stream. */
  get queuedBytes (): number { return this.queued }

  /**
   * Queues a frame. `body` may be a function producing the bytes when the stream can take
   * them; `bytes` is then its (estimated) size for the queue's accounting.
   */
  send (kind: number, body: FrameBody | (() => FrameBody), bytes = typeof body === 'function' ? 0 : bodyLength(body)): void {
    if (this.isClosed) throw new ChannelClosedError('the stream is closed')
    if (this.queued + bytes > this.init.maxQueuedBytes && this.queued > 0) {
      throw new QueueFullError(`send queue holds ${this.queued} bytes, limit ${this.init.maxQueuedBytes}`)
    }
    this.queue.push({ kind, bytes, body })
    this.enqueuedCount++
    this.queued += bytes
    this.pump()
  }

  /** Stops reading: the remote's sends to us stall once the muxer window fills. */
  pause (): void {
    // libp2p's resume() hands over the buffered data and only then tells the muxer to send
    // window updates again: a pause asked for while that data is handled would be undone.
    if (this.resuming) { this.pauseWanted = true; return }
    if (this.aborted || this.stream.readStatus !== 'readable') return
    // The connection may be gone under a stream that still looks open: libp2p then throws.
    try { this.stream.pause() } catch (err) { this.abort(err instanceof Error ? err : new Error(String(err))) }
  }

  resume (): void {
    this.pauseWanted = false
    if (this.aborted || this.stream.readStatus !== 'paused') return
    this.resuming = true
    try {
      this.stream.resume()
    } catch (err) {
      this.abort(err instanceof Error ? err : new Error(String(err)))
      return
    } finally {
      this.resuming = false
    }
    if (this.pauseWanted) { this.pauseWanted = false; this.pause() }
  }

  /** Closes gracefully after the queue drains (bounded by the stream's own close). */
  async close (): Promise<void> {
    if (this.isClosed) return
    await this.whenDrained()
    if (!this.isClosed) await this.stream.close().catch((err: Error) => { this.stream.abort(err) })
  }

  abort (err: Error): void {
    this.aborted = true
    if (this.isClosed) return
    try { this.stream.abort(err) } catch { /* already closed underneath */ }
    this.finish(err)
  }

  /**
   * Until everything queued is handed to the stream, or the stream ends. The queue empties
   * in flush(), on a microtask or after the stream's 'drain': waiting for a 'drain' event
   * alone never ended when the frames had gone out without backpressure, so a frame sent
   * just before close() kept the stream open for good (relay streams leaked, and a root
   * refused relayed broadcasts after 16).
   */
  private async whenDrained (): Promise<void> {
    while (!this.isClosed && (this.head < this.queue.length || this.waitingDrain)) {
      await new Promise<void>((resolve) => { this.drainWaiters.push(resolve) })
    }
  }

  private wakeDrainWaiters (): void {
    if (this.drainWaiters.length === 0) return
    const waiters = this.drainWaiters
    this.drainWaiters = []
    for (const w of waiters) w()
  }

  /**
   * Writes queued frames. Frames queued in the same synchronous run (one input to the core,
   * say) are written
   * together, as many as fit in {@link BATCH_BYTES} per `send`: one muxer frame, one
   * encryption and one socket write for a burst of small messages instead of one each.
   */
  private pump (): void {
    if (this.flushScheduled || this.isClosed || this.waitingDrain || this.head >= this.queue.length) return
    this.flushScheduled = true
    queueMicrotask(() => { this.flushScheduled = false; this.flush() })
  }

  private flush (): void {
    while (!this.isClosed && !this.waitingDrain && this.head < this.queue.length) {
      const batch = new Uint8ArrayList()
      while (this.head < this.queue.length) {
        const e = this.queue[this.head] as Entry
        // a lazy entry's size is an estimate: a batch may then exceed the bound a little
        if (batch.byteLength > 0 && batch.byteLength + e.bytes + FRAME_OVERHEAD_BYTES > BATCH_BYTES) break
        this.queue[this.head] = undefined as unknown as Entry
        this.head++
        this.writtenCount++
        this.queued -= e.bytes
        const body = typeof e.body === 'function' ? e.body() : e.body
        const length = bodyLength(body)
        const prefix = new Uint8Array(varint.encodingLength(length + 1) + 1)
        varint.encode(length + 1, prefix)
        prefix[prefix.length - 1] = e.kind
        if (body instanceof Uint8Array) batch.append(prefix, body)
        else batch.append(prefix, ...body)
      }
      let ok: boolean
      try {
        // The stream may be closing before its 'close' event reached us: send() then throws.
        if (this.stream.writeStatus !== 'writable') throw new ChannelClosedError(`stream is ${this.stream.writeStatus}`)
        ok = this.stream.send(batch)
      } catch (err) {
        this.abort(err instanceof Error ? err : new Error(String(err)))
        return
      }
      this.bytesSent += batch.byteLength
      this.init.onSent?.(batch.byteLength)
      if (!ok || this.stream.writableNeedsDrain) this.waitingDrain = true
    }
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head)
      this.head = 0
    }
    if (this.head === this.queue.length) {
      this.queue.length = 0
      this.head = 0
      if (!this.waitingDrain) { this.handlers.drained(); this.wakeDrainWaiters() }
    }
  }

  private onData (data: Uint8Array | Uint8ArrayList): void {
    // Data may still arrive after 'close' (a paused stream emits what it buffered when
    // resumed): only a stream this side aborted drops it.
    if (this.aborted) return
    this.lastReceivedAt = this.clock()
    try {
      // A resumed stream may hand over megabytes at once: feed the decoder at most one
      // frame's worth at a time so its buffer stays within two frames.
      const step = this.init.maxFrameBytes
      if (data.byteLength <= step) this.decodeAll(data)
      else {
        for (let off = 0; off < data.byteLength && !this.aborted; off += step) {
          this.decodeAll(data.subarray(off, Math.min(off + step, data.byteLength)))
        }
      }
      // Still no first frame: what is buffered is all of it so far (a prefix and its bytes).
      if (this.framesIn === 0 && this.init.firstFrame !== undefined && (this.bytesBeforeFirst += data.byteLength) > this.init.firstFrame.maxBytes + 8) throw new RangeError('first frame too long')
    } catch (err) {
      this.abort(err instanceof Error ? err : new Error(String(err)))
    }
  }

  private decodeAll (data: Uint8Array | Uint8ArrayList): void {
    for (const frame of this.decoder.decode(data)) {
      if (frame.byteLength < 1) throw new RangeError('empty frame')
      const kind = frame.get(0)
      if (this.framesIn === 0 && this.init.firstFrame !== undefined) {
        if (frame.byteLength > this.init.firstFrame.maxBytes) throw new RangeError(`first frame of ${frame.byteLength} bytes, at most ${this.init.firstFrame.maxBytes}`)
        clearTimeout(this.firstFrameTimer)
      }
      this.framesIn++
      this.handlers.frame(kind, frame.sublist(1))
      if (this.aborted) return
    }
  }

  private finish (err?: Error): void {
    if (this.isClosed) return
    this.isClosed = true
    this.queue.length = 0
    this.head = 0
    this.queued = 0
    clearTimeout(this.firstFrameTimer)
    this.wakeDrainWaiters()
    this.handlers.closed(err)
  }
}
