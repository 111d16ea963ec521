/**
 * Routes the chunks of long payloads (more than one chunk) onto one bulk stream per
 * (receiver, transfer), and applies backpressure upstream: while a bulk stream's queue
 * is above the high-water mark, the inbound bulk streams its chunks came from are paused.
 * A single-chunk transfer, and any payload shorter than `bulkMinBytes` (the latency tree's,
 * by default) while the control stream has less than `bulkHighWaterBytes` queued, stays on
 * the control stream, where it pays no stream set-up.
 */
import { streamChunkCount } from '../overlay/stripes.ts'
import type { Logger, Stream } from '@libp2p/interface'
import type { ChunkMessage } from '../overlay/messages.ts'
import { encodeChunkFrame } from './chunk-frame.ts'
import { FrameChannel, FrameKind } from './frame-channel.ts'
import type { ResolvedNodeConfig } from './config.ts'

/** What the router needs from the link manager. */
export interface BulkHost {
  open (peer: string): Promise<Stream>
  /** This peer's hello frame body. */
  hello (): Uint8Array
  /** A bulk stream to `peer` could not be opened or failed. */
  failed (peer: string): void
  /** Sends a chunk on the control stream to `peer` (the fallback when bulk streams fail). */
  sendControl (peer: string, msg: ChunkMessage): void
  /** A bulk stream's queue emptied. */
  drained (): void
  /** Bytes queued for `peer` on its control stream (and waiting for it to open). */
  controlQueuedBytes (peer: string): number
  /** Bytes handed to a bulk stream. */
  onSent (bytes: number): void
  clock (): number
  /** Debug log (`treecast:bulk`). */
  readonly log?: Logger
}

interface BulkOut {
  readonly key: string
  readonly to: string
  channel: FrameChannel | undefined
  /** Chunks waiting for the stream to open. */
  waiting: ChunkMessage[]
  waitingBytes: number
  /** Chunks the stream carries in all (the last one written closes it). */
  readonly chunks: number
  readonly upstreams: Set<FrameChannel>
  above: boolean
  lastUsedAt: number
  done: boolean
  /** Every chunk routed here, in order, to send again on a new stream if this one fails. */
  readonly history: ChunkMessage[]
  /** Streams opened for this transfer so far. */
  attempts: number
  /** After repeated stream failures the rest of the transfer goes on the control stream. */
  onControl: boolean
}

/** Streams tried per (child, transfer) before the child is checked for a crash. */
export const MAX_BULK_ATTEMPTS = 3

/** Bulk streams out of this peer. */
export class BulkRouter {
  private readonly out = new Map<string, BulkOut>()
  /** How many downstream bulk streams hold each paused upstream. */
  private readonly blocked = new Map<FrameChannel, number>()
  /** `peakQueuedBytes`: the most one bulk stream held queued for a transfer this peer forwards (not originates). */
  readonly stats = { opened: 0, pauses: 0, retries: 0, peakQueuedBytes: 0 }

  constructor (private readonly cfg: ResolvedNodeConfig, private readonly host: BulkHost) {}

  /** Takes the chunk if it belongs on a bulk stream; false leaves it to the control stream. */
  route (to: string, msg: ChunkMessage, upstream: FrameChannel | undefined): boolean {
    const key = `${to}\n${msg.stream}`
    let b = this.out.get(key)
    if (b === undefined) {
      if (msg.open === undefined || msg.open.chunkCount <= 1) return false
      // A short payload takes the control stream, unless that stream is backed up: then a
      // bulk stream, whose queue pauses the upstream, keeps a fast sender from piling
      // short payloads onto a slow link until the control queue overflows.
      if (msg.open.totalBytes < this.cfg.bulkMinBytes && this.host.controlQueuedBytes(to) < this.cfg.bulkHighWaterBytes) return false
      if (this.out.size >= this.cfg.maxBulkStreams) return false
      b = { key, to, channel: undefined, waiting: [], waitingBytes: 0, chunks: streamChunkCount(msg.open), upstreams: new Set(), above: false, lastUsedAt: this.host.clock(), done: false, history: [], attempts: 0, onControl: false }
      this.out.set(key, b)
      void this.open(b)
    }
    if (b.onControl) return false
    b.lastUsedAt = this.host.clock()
    if (upstream !== undefined && !b.upstreams.has(upstream)) {
      b.upstreams.add(upstream)
      if (b.above) this.block(upstream)
    }
    const bytes = msg.data.byteLength + 128
    b.history.push(msg)
    if (b.channel === undefined) {
      b.waiting.push(msg)
      b.waitingBytes += bytes
    } else {
      this.write(b, msg, bytes)
    }
    this.check(b)
    return true
  }

  /** True while a bulk stream to `peer` carries or waits to carry data. */
  busyWith (peer: string): boolean {
    for (const b of this.out.values()) if (b.to === peer && !b.done) return true
    return false
  }

  /** The state of each bulk stream, for debugging and the node's counters. */
  describe (): Array<Record<string, unknown>> {
    const outs = [...this.out.values()].map((b) => ({ to: b.to.slice(-6), key: b.key.split('\n')[1], waiting: b.waitingBytes, queued: b.channel?.queuedBytes, above: b.above, done: b.done, status: b.channel?.stream.status, needsDrain: b.channel?.stream.writableNeedsDrain }))
    const blocked = [...this.blocked.entries()].map(([u, n]) => ({ n, status: u.stream.status, read: u.stream.readStatus, buf: u.stream.readBufferLength }))
    return [...outs, ...blocked]
  }

  /**
   * A test that turns true once every chunk queued so far has been handed to its stream
   * (or its stream is gone).
   */
  sentMark (): () => boolean {
    // A stream still opening will get its hello, then the chunks waiting now.
    const marks = [...this.out.values()].map((b) => ({ b, n: b.channel?.enqueuedCount ?? 1 + b.waiting.length }))
    return () => marks.every(({ b, n }) => {
      if (this.out.get(b.key) !== b) return true
      if (b.channel === undefined) return false
      return b.channel.closed || b.channel.writtenCount >= n
    })
  }

  forget (peer: string): void {
    for (const b of [...this.out.values()]) if (b.to === peer) this.drop(b)
  }

  /** Forgets finished transfers idle for longer than `bulkIdleMs`, closing their streams gracefully. */
  sweep (now: number): void {
    for (const b of [...this.out.values()]) {
      const queued = b.waitingBytes + (b.channel?.queuedBytes ?? 0)
      if (queued > 0 || now - b.lastUsedAt <= this.cfg.bulkIdleMs) continue
      if (b.onControl || b.done) { this.drop(b); continue }
      // Not finished (the upstream is slow): close gracefully, never abort, so nothing sent
      // is lost; later chunks of the transfer take the control stream, in any order (the
      // receiver knows the transfer from its first chunk, which this stream carried).
      const ch = b.channel
      b.channel = undefined
      b.onControl = true
      if (ch !== undefined) void ch.close()
      this.release(b)
    }
  }

  closeAll (): void {
    for (const b of [...this.out.values()]) this.drop(b)
  }

  private async open (b: BulkOut): Promise<void> {
    b.attempts++
    let stream: Stream
    try {
      stream = await this.host.open(b.to)
    } catch {
      if (this.out.get(b.key) === b) this.retry(b)
      return
    }
    if (this.out.get(b.key) !== b) { stream.abort(new Error('not needed')); return }
    this.stats.opened++
    const ch = new FrameChannel(stream, { maxFrameBytes: this.cfg.maxFrameBytes, maxQueuedBytes: this.cfg.maxBulkQueuedBytes, onSent: this.host.onSent }, {
      frame: () => {},
      drained: () => { this.check(b); this.host.drained() },
      closed: (err) => {
        if (this.out.get(b.key) !== b || b.channel !== ch) return
        if (b.done && err === undefined) this.drop(b)
        else this.retry(b)
      }
    }, this.host.clock)
    b.channel = ch
    ch.send(FrameKind.Hello, this.host.hello())
    const waiting = b.waiting
    b.waiting = []
    b.waitingBytes = 0
    for (const m of waiting) this.write(b, m, m.data.byteLength + 128)
    this.check(b)
  }

  /**
   * The stream failed (reset, refused, closed early) while the child may well be alive: the
   * core counts these chunks as sent and waits for the child's acknowledgement, so send
   * them all again on a new stream (the child keeps the chunks it already has and drops the
   * repeated opening). After {@link MAX_BULK_ATTEMPTS} the child is checked for a crash.
   */
  private retry (b: BulkOut): void {
    const old = b.channel
    b.channel = undefined
    if (old !== undefined && !old.closed) old.abort(new Error('bulk stream replaced'))
    this.host.log?.('bulk stream %s failed (attempt %d)%s', b.key, b.attempts, b.attempts >= MAX_BULK_ATTEMPTS ? ': sending the transfer on the control stream' : ': retrying')
    if (b.attempts >= MAX_BULK_ATTEMPTS) {
      // Streams keep failing while the peer may be alive: send everything again on the
      // control stream (the child keeps what it has and drops the repeated opening); if the
      // peer is dead, the check finds it and the core routes the transfer elsewhere.
      b.onControl = true
      b.waiting = []
      b.waitingBytes = 0
      this.release(b)
      for (const m of b.history) this.host.sendControl(b.to, m)
      this.host.failed(b.to)
      return
    }
    this.stats.retries++
    b.done = false
    b.waiting = [...b.history]
    b.waitingBytes = b.waiting.reduce((n, m) => n + m.data.byteLength + 128, 0)
    this.check(b)
    void this.open(b)
  }

  private write (b: BulkOut, msg: ChunkMessage, bytes: number): void {
    const ch = b.channel
    // Replaced meanwhile: the new stream sends the whole history.
    if (ch === undefined) return
    try {
      ch.send(FrameKind.Chunk, () => encodeChunkFrame(msg), bytes)
    } catch {
      this.retry(b)
      return
    }
    // Its last chunk: the stream carries `chunks` of them, in index order or, for every
    // chunk of a striped transfer, as its stripes come (overlay/stripes.ts).
    if (b.history.length === b.chunks && msg === b.history[b.history.length - 1]) {
      b.done = true
      void ch.close().finally(() => { if (this.out.get(b.key) === b) this.drop(b) })
    }
  }

  /** Pauses or resumes the upstreams as the queue crosses the high-water mark. */
  private check (b: BulkOut): void {
    const queued = b.waitingBytes + (b.channel?.queuedBytes ?? 0)
    if (b.upstreams.size > 0 && queued > this.stats.peakQueuedBytes) this.stats.peakQueuedBytes = queued
    if (!b.above && queued > this.cfg.bulkHighWaterBytes) {
      b.above = true
      for (const u of b.upstreams) this.block(u)
    } else if (b.above && queued === 0) {
      b.above = false
      for (const u of b.upstreams) this.unblock(u)
    }
  }

  private block (u: FrameChannel): void {
    const n = this.blocked.get(u) ?? 0
    this.blocked.set(u, n + 1)
    if (n === 0) { this.stats.pauses++; u.pause() }
  }

  private unblock (u: FrameChannel): void {
    const n = this.blocked.get(u) ?? 0
    if (n <= 1) { this.blocked.delete(u); u.resume() } else this.blocked.set(u, n - 1)
  }

  /** Stops holding the upstreams back for `b`. */
  private release (b: BulkOut): void {
    if (b.above) { b.above = false; for (const u of b.upstreams) this.unblock(u) }
    b.upstreams.clear()
  }

  private drop (b: BulkOut): void {
    if (this.out.get(b.key) !== b) return
    this.out.delete(b.key)
    this.release(b)
    b.waiting = []
    if (b.channel !== undefined && !b.channel.closed && !b.done) b.channel.abort(new Error('bulk stream dropped'))
  }
}
