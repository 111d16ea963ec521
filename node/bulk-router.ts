/**
 * Routes the chunks of long payloads (more than one chunk) onto one bulk stream per
 * (receiver, transfer), and applies backpressure upstream: while a bulk stream's queue
 * is above the high-water mark, the inbound bulk streams its chunks came from are paused.
 * A single-chunk transfer, and any payload shorter than `bulkMinBytes` (the latency tree's,
 * by default) while the control stream has less than `bulkHighWaterBytes` queued, stays on
 * the control stream, where it pays no stream set-up.
 *
 * A stream carries one transfer at a time. After its last chunk the sender writes an `End`
 * frame; the receiver answers `EndAck` once it has taken in everything before it, and only
 * then is the transfer done and the stream free for the next transfer to that peer (kept
 * idle up to `bulkIdleMs`). A stream that fails before the answer sends its transfer again.
 * Reusing streams saves the set-up of one per transfer and hop (a multistream-select round
 * trip and 2-3 ms of CPU), which back-to-back long broadcasts paid at every hop.
 */
import { streamChunkCount } from '../overlay/stripes.ts'
import type { Logger, Stream } from '@libp2p/interface'
import type { Uint8ArrayList } from 'uint8arraylist'
import * as varint from 'uint8-varint'
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
  /** Which idle streams it may take: the peer's, for the same stripe number. */
  readonly poolKey: string
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
  /** When the `End` frame was queued (while done and not acknowledged). */
  endAt: number
  /** Every chunk routed here, in order, to send again on a new stream if this one fails. */
  readonly history: ChunkMessage[]
  /** Streams opened for this transfer so far. */
  attempts: number
  /** After repeated stream failures the rest of the transfer goes on the control stream. */
  onControl: boolean
}

/** Streams tried per (child, transfer) before the child is checked for a crash. */
export const MAX_BULK_ATTEMPTS = 3

/** Idle bulk streams kept per peer and stripe number for the next transfers (more are closed). */
export const MAX_IDLE_BULK_STREAMS = 4

/** The body of an `End` or `EndAck` frame: the transfer's stream id. */
export function encodeTransferEnd (stream: number): Uint8Array {
  return varint.encode(stream)
}

/** The transfer id of an `End` or `EndAck` body; undefined when malformed. */
export function decodeTransferEnd (body: Uint8ArrayList | Uint8Array): number | undefined {
  try {
    const bytes = body.subarray()
    const n = varint.decode(bytes)
    return varint.encodingLength(n) === bytes.byteLength && Number.isSafeInteger(n) ? n : undefined
  } catch {
    return undefined
  }
}

interface IdleStream { readonly channel: FrameChannel, readonly since: number }

/** Bulk streams out of this peer. */
export class BulkRouter {
  private readonly out = new Map<string, BulkOut>()
  /** The transfer each open outbound stream carries now (none while idle). */
  private readonly owners = new Map<FrameChannel, BulkOut>()
  /**
   * Open streams with no transfer, per peer and stripe number, oldest first. Per stripe:
   * a relay pauses an inbound stream while the stripe it feeds is backed up downstream, and
   * the next transfer on that stream would wait too; stripe i of successive broadcasts
   * takes the same path anyway.
   */
  private readonly idle = new Map<string, IdleStream[]>()
  /** How many downstream bulk streams hold each paused upstream. */
  private readonly blocked = new Map<FrameChannel, number>()
  /**
   * `opened`: streams opened; `reused`: transfers that took an idle stream instead;
   * `peakQueuedBytes`: the most one bulk stream held queued for a transfer this peer
   * forwards (not originates).
   */
  readonly stats = { opened: 0, reused: 0, pauses: 0, retries: 0, peakQueuedBytes: 0 }

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
      b = { key, to, poolKey: `${to}\n${msg.open.stripe ?? ''}`, channel: undefined, waiting: [], waitingBytes: 0, chunks: streamChunkCount(msg.open), upstreams: new Set(), above: false, lastUsedAt: this.host.clock(), done: false, endAt: 0, history: [], attempts: 0, onControl: false }
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
    for (const [key, list] of [...this.idle]) {
      if (!key.startsWith(`${peer}\n`)) continue
      for (const s of list) s.channel.abort(new Error('peer forgotten'))
      this.idle.delete(key)
    }
  }

  /** Open streams with no transfer (for tests and counters). */
  get idleStreams (): number {
    let n = 0
    for (const list of this.idle.values()) n += list.length
    return n
  }

  /**
   * Forgets finished transfers idle for longer than `bulkIdleMs`, closing their streams
   * gracefully, and closes streams idle that long.
   */
  sweep (now: number): void {
    for (const [key, list] of [...this.idle]) {
      const keep = list.filter((s) => now - s.since <= this.cfg.bulkIdleMs && !s.channel.closed)
      for (const s of list) if (!keep.includes(s)) void s.channel.close()
      if (keep.length > 0) this.idle.set(key, keep)
      else this.idle.delete(key)
    }
    for (const b of [...this.out.values()]) {
      const queued = b.waitingBytes + (b.channel?.queuedBytes ?? 0)
      // a finished transfer waits for its acknowledgement from when its End left, not
      // from its last chunk (a long queue may take longer than bulkIdleMs to drain)
      const since = b.done && !b.onControl ? b.endAt : b.lastUsedAt
      if (queued > 0 || now - since <= this.cfg.bulkIdleMs) continue
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
    for (const list of this.idle.values()) for (const s of list) s.channel.abort(new Error('closing'))
    this.idle.clear()
  }

  private async open (b: BulkOut): Promise<void> {
    b.attempts++
    const reused = this.takeIdle(b.poolKey)
    if (reused !== undefined) {
      this.stats.reused++
      this.attach(b, reused)
      return
    }
    let stream: Stream
    try {
      stream = await this.host.open(b.to)
    } catch {
      if (this.out.get(b.key) === b) this.retry(b)
      return
    }
    if (this.out.get(b.key) !== b) { stream.abort(new Error('not needed')); return }
    this.stats.opened++
    // The handlers outlive this transfer (the stream is reused): they see only the pool key.
    const poolKey = b.poolKey
    const ch: FrameChannel = new FrameChannel(stream, { maxFrameBytes: this.cfg.maxFrameBytes, maxQueuedBytes: this.cfg.maxBulkQueuedBytes, onSent: this.host.onSent, closeOnRemoteClose: true }, {
      frame: (kind, body) => { if (kind === FrameKind.EndAck) this.acknowledged(ch, body) },
      drained: () => {
        const owner = this.owners.get(ch)
        if (owner !== undefined) this.check(owner)
        this.host.drained()
      },
      closed: () => {
        this.removeIdle(poolKey, ch)
        const owner = this.owners.get(ch)
        this.owners.delete(ch)
        // closed before the receiver acknowledged the transfer's end: send it again
        if (owner !== undefined && this.out.get(owner.key) === owner && owner.channel === ch) this.retry(owner)
      }
    }, this.host.clock)
    ch.send(FrameKind.Hello, this.host.hello())
    this.attach(b, ch)
  }

  /** Gives `ch` (open, hello sent) to transfer `b` and writes what waited for it. */
  private attach (b: BulkOut, ch: FrameChannel): void {
    b.channel = ch
    this.owners.set(ch, b)
    const waiting = b.waiting
    b.waiting = []
    b.waitingBytes = 0
    for (const m of waiting) {
      // a failed send retries, possibly on another stream, with the whole history
      if (b.channel !== ch) break
      this.write(b, m, m.data.byteLength + 128)
    }
    this.check(b)
  }

  /**
   * Everything inbound stream `u` carried for its transfer has been read (its `End` came):
   * it no longer feeds any transfer here, so no backpressure of theirs may hold it. Its
   * next transfer (the sender reuses it) would otherwise wait behind an unrelated one, and
   * two such waits across opposite flows would wait on each other.
   */
  upstreamEnded (u: FrameChannel): void {
    for (const b of this.out.values()) {
      if (b.upstreams.delete(u) && b.above) this.unblock(u)
    }
  }

  /** An idle stream of pool `key` still open, if any (the most recently used). */
  private takeIdle (key: string): FrameChannel | undefined {
    const list = this.idle.get(key)
    while (list !== undefined && list.length > 0) {
      const s = list.pop() as IdleStream
      if (!s.channel.closed) {
        if (list.length === 0) this.idle.delete(key)
        return s.channel
      }
    }
    this.idle.delete(key)
    return undefined
  }

  private removeIdle (key: string, ch: FrameChannel): void {
    const list = this.idle.get(key)
    if (list === undefined) return
    const i = list.findIndex((s) => s.channel === ch)
    if (i >= 0) list.splice(i, 1)
    if (list.length === 0) this.idle.delete(key)
  }

  /** The receiver took in the whole transfer: it is done, and its stream free for the next. */
  private acknowledged (ch: FrameChannel, body: Uint8ArrayList): void {
    const b = this.owners.get(ch)
    const id = decodeTransferEnd(body)
    // a late answer on a stream this side is closing (its transfer was given up): nothing to do
    if (b === undefined && ch.stream.writeStatus !== 'writable') return
    if (b === undefined || !b.done || b.channel !== ch || id === undefined || `${b.to}\n${id}` !== b.key) {
      this.host.log?.('unexpected end acknowledgement on a bulk stream to %s: closing it', b?.to)
      ch.abort(new Error('unexpected end acknowledgement'))
      return
    }
    this.owners.delete(ch)
    b.channel = undefined
    if (this.out.get(b.key) === b) this.drop(b)
    const list = this.idle.get(b.poolKey) ?? []
    if (ch.closed || list.length >= MAX_IDLE_BULK_STREAMS) { void ch.close(); return }
    list.push({ channel: ch, since: this.host.clock() })
    this.idle.set(b.poolKey, list)
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
    if (old !== undefined) {
      this.owners.delete(old)
      if (!old.closed) old.abort(new Error('bulk stream replaced'))
    }
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
      b.endAt = this.host.clock()
      try {
        ch.send(FrameKind.End, encodeTransferEnd(msg.stream))
      } catch {
        this.retry(b)
      }
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
    b.history.length = 0
    const ch = b.channel
    if (ch === undefined) return
    this.owners.delete(ch)
    // unfinished: nothing more will come; finished but never acknowledged: close gracefully
    if (!ch.closed) {
      if (b.done) void ch.close()
      else ch.abort(new Error('bulk stream dropped'))
    }
  }
}
