/**
 * The node's connections to other peers: one long-lived control stream per neighbour for
 * control and short messages, one bulk stream per (peer, long transfer) for the chunks of
 * a payload on the bandwidth tree, heartbeats, crash detection and a bound on how many
 * peers stay connected.
 *
 * End-to-end backpressure: chunks of a long payload arrive on their own bulk stream, so when
 * the bulk stream to a child holds more than `bulkHighWaterBytes` the node pauses only the
 * stream they came in on; the parent's sends to it then stall (the muxer window fills), up
 * the tree to the root, whose queue holds references to its payload, not copies. Other
 * transfers and control traffic are not held up: opposite flows cannot deadlock. A
 * reduction's partials go to the control stream as it drains (node/held-partials.ts).
 */
import type { ComponentLogger, Connection, Logger, Stream } from '@libp2p/interface'
import type { ConnectionManager, Registrar } from '@libp2p/interface-internal'
import type { Uint8ArrayList } from 'uint8arraylist'
import { decodeMessage, encodeMessage, type CodecLimits } from '../overlay/codec.ts'
import type { ChunkMessage, Message } from '../overlay/messages.ts'
import { WireError } from '../overlay/wire-errors.ts'
import { decodeChunkFrame, encodeChunkFrame } from './chunk-frame.ts'
import { FrameChannel, FrameKind, type FrameChannelInit } from './frame-channel.ts'
import { decodeHello, encodeHello, MAX_HELLO_BYTES, peerIdPart, type Hello } from './hello.ts'
import { BulkRouter, decodeTransferEnd, encodeTransferEnd } from './bulk-router.ts'
import type { ResolvedNodeConfig } from './config.ts'
import { componentLog } from './log.ts'
import { DialFailure, openStreamTo } from './dial-failure.ts'
import { Fence, factsIn } from './fence.ts'
import { estimateBytes, pruneTo, type Peer } from './link-peer.ts'
import { HeldPartials } from './held-partials.ts'

/** Protocol of the per-neighbour control stream. */
export const CONTROL_PROTOCOL = '/treecast/overlay/1.1.0'
/** Protocol of a bulk stream: one long transfer at a time, reused for the next (node/bulk-router.ts). */
export const BULK_PROTOCOL = '/treecast/bulk/1.2.0'

/** What the link manager needs from the node around it. */
export interface LinksHost {
  /** This peer's hello. */
  hello (): Hello
  /** A valid core message arrived from `from` (`bulk` when on a bulk stream). */
  message (from: string, msg: Message, bulk: FrameChannel | undefined): void
  /** Remote input was dropped, with the reason. */
  reject (reason: string): void
  /** `peer` is unreachable (its connection closed and a redial failed, or it went silent). */
  peerDown (peer: string, incarnation: number | undefined): void
  /** True for peers whose connection must stay open (tree neighbours). */
  keep (peer: string): boolean
  /** `peer` opened a control stream to us. */
  connected (peer: string): void
  /** After a stall: ask members whether this peer is still one (node/fence.ts); false when not a member. */
  fenceBegin (): boolean
  /** What membership facts say of this peer at its current incarnation. */
  fenceVerdict (facts: Message): 'dead' | 'alive' | 'unknown'
}

/** Most bytes of frames held after a stall (node/fence.ts): past it they are replayed. */
export const FENCE_MAX_HELD_BYTES = 256 * 1024 * 1024

/** Connections, streams, heartbeats and crash detection. */
export class Links {
  private readonly peers = new Map<string, Peer>()
  private readonly bulk: BulkRouter
  /** Inbound bulk streams whose last frame was an `End` (no chunk since). */
  private readonly endedBulk = new WeakSet<FrameChannel>()
  private heartbeatTimer: ReturnType<typeof setInterval> | undefined
  private running = false
  /** Bumped when every peer is forgotten (eviction): frames on streams of an older epoch are dropped. */
  private epoch = 0
  private sentWaiters: Array<() => void> = []
  private lastHeartbeatAt = 0
  private readonly fence: Fence
  /** The incarnation each control channel's hello named. */
  private readonly helloIncarnation = new WeakMap<FrameChannel, number>()
  private readonly closing = new Set<FrameChannel>() // pruned peers' channels, closing gracefully
  private readonly onSent = (n: number): void => { this.stats.bytesSent += n }
  readonly stats = { dials: 0, dialFailures: 0, dialRetries: 0, pruned: 0, heartbeatsSent: 0, heartbeatsMissed: 0, queueOverflows: 0, bytesSent: 0, stalls: 0 }
  private readonly log: Logger

  constructor (
    private readonly components: { registrar: Registrar, connectionManager: ConnectionManager, logger?: ComponentLogger },
    private readonly cfg: ResolvedNodeConfig,
    private readonly codecLimits: CodecLimits,
    private readonly host: LinksHost,
    private readonly clock: () => number
  ) {
    this.log = componentLog(components, 'treecast:links')
    this.fence = new Fence({
      begin: () => this.host.fenceBegin(),
      facts: (f) => factsIn(f, this.codecLimits),
      verdict: (m) => this.host.fenceVerdict(m),
      replay: (f) => { this.onFrame(f.from, f.kind, f.body, f.bulk as FrameChannel | undefined) },
      log: this.log
    }, {
      // Others declare a peer dead after failureDetectionTimeoutMs without a frame; our last heartbeat may be one interval older.
      afterMs: Math.max(cfg.failureDetectionTimeoutMs - cfg.heartbeatIntervalMs, cfg.failureDetectionTimeoutMs / 2),
      waitMs: 2 * cfg.failureDetectionTimeoutMs,
      maxHeldBytes: FENCE_MAX_HELD_BYTES
    }, clock())
    this.bulk = new BulkRouter(cfg, {
      open: async (peer) => await this.openStream(peer, BULK_PROTOCOL),
      hello: () => encodeHello(this.host.hello()),
      failed: (peer) => { void this.verify(peer); this.notifySent() },
      sendControl: (peer, msg) => { this.sendControl(peer, msg) },
      drained: () => { this.notifySent() },
      controlQueuedBytes: (peer) => { const p = this.peers.get(peer); return p === undefined ? 0 : (p.channels[0]?.queuedBytes ?? 0) + p.pendingBytes + p.held.bytes },
      onSent: this.onSent,
      clock,
      log: componentLog(components, 'treecast:bulk')
    })
  }

  async start (): Promise<void> {
    const limits = { maxInboundStreams: this.cfg.maxStreamsPerConnection, maxOutboundStreams: this.cfg.maxStreamsPerConnection }
    await this.components.registrar.handle(CONTROL_PROTOCOL, (stream, conn) => { this.accept(stream, conn, false) }, limits)
    await this.components.registrar.handle(BULK_PROTOCOL, (stream, conn) => { this.accept(stream, conn, true) }, limits)
    this.running = true
    this.lastHeartbeatAt = this.clock()
    this.heartbeatTimer = setInterval(() => { this.heartbeat() }, this.cfg.heartbeatIntervalMs)
  }

  async stop (): Promise<void> {
    this.running = false
    if (this.heartbeatTimer !== undefined) clearInterval(this.heartbeatTimer)
    this.heartbeatTimer = undefined
    this.fence.drop('node stopping') // its replay timer would outlive the node
    for (const p of this.peers.values()) for (const ch of p.channels) ch.abort(new Error('node stopping'))
    for (const ch of this.closing) ch.abort(new Error('node stopping'))
    this.closing.clear()
    this.bulk.closeAll()
    this.peers.clear()
    this.notifySent()
    await this.components.registrar.unhandle(CONTROL_PROTOCOL).catch(() => {})
    await this.components.registrar.unhandle(BULK_PROTOCOL).catch(() => {})
  }

  /** Peers with an open control stream. */
  connectedPeers (): string[] { return [...this.peers.values()].filter((p) => p.channels.length > 0).map((p) => p.id) }

  /** Link statistics of the bulk streams. */
  get bulkStats (): { opened: number, pauses: number, retries: number, peakQueuedBytes: number } { return this.bulk.stats }

  describeBulk (): Array<Record<string, unknown>> { return this.bulk.describe() }

  /** Resolves once everything queued before the call has been handed to the streams (or its stream closed). */
  async whenSent (): Promise<void> {
    const marks: Array<[FrameChannel, number]> = []
    const waiting: Peer[] = []
    for (const p of this.peers.values()) {
      for (const ch of p.channels) marks.push([ch, ch.enqueuedCount])
      if (p.pending.length > 0 || p.held.size > 0) waiting.push(p)
    }
    const bulkSent = this.bulk.sentMark()
    const done = (): boolean => !this.running || (bulkSent() && marks.every(([ch, n]) => ch.closed || ch.writtenCount >= n) &&
      waiting.every((p) => (p.pending.length === 0 && p.held.size === 0) || this.peers.get(p.id) !== p))
    while (!done()) await new Promise<void>((resolve) => { this.sentWaiters.push(resolve) })
  }

  private notifySent (): void {
    const w = this.sentWaiters
    if (w.length > 0) { this.sentWaiters = []; for (const r of w) r() }
  }

  /** Sends a core message: chunks of long payloads on their bulk stream, the rest on the control stream. */
  send (to: string, msg: Message, upstream: FrameChannel | undefined): void {
    if (!this.running) return
    if (msg.t === 'chunk' && this.bulk.route(to, msg as ChunkMessage, upstream)) return
    this.sendControl(to, msg)
  }

  private sendControl (to: string, msg: Message): void {
    if (!this.running) return
    const p = this.peer(to)
    p.lastUsedAt = this.clock()
    const ch = p.channels[0]
    if (p.held.mustHold(msg, ch, this.cfg.bulkHighWaterBytes)) {
      p.held.hold(msg)
      if (ch !== undefined) this.feedHeld(p)
      else if (!p.dialing) void this.dial(p)
      return
    }
    if (ch !== undefined) { this.write(p, ch, msg); return }
    const bytes = estimateBytes(msg)
    if (p.pendingBytes + bytes > this.cfg.maxQueuedBytes) { this.stats.queueOverflows++; return }
    p.pending.push(msg)
    p.pendingBytes += bytes
    if (!p.dialing) void this.dial(p)
  }

  /**
   * Forgets every peer, as after this peer's eviction: the others forgot it, and a new
   * incarnation starts afresh. Every stream of the old incarnation is reset (not closed:
   * a closed one still reads), bulk transfers are dropped, and a frame that still comes
   * in on a stream opened before is dropped (the epoch), so nothing meant for the old
   * incarnation reaches the new one.
   */
  forgetAll (): void {
    this.epoch++
    this.fence.drop('this peer was evicted')
    for (const p of this.peers.values()) for (const ch of p.channels) ch.abort(new Error('this peer was evicted'))
    this.peers.clear()
    this.bulk.closeAll()
    this.notifySent()
  }

  /** Disconnects from a peer that left or was declared dead. */
  forget (peer: string): void {
    const p = this.peers.get(peer)
    this.bulk.forget(peer)
    if (p === undefined) return
    this.peers.delete(peer)
    for (const ch of p.channels) void ch.close()
  }

  private write (p: Peer, ch: FrameChannel, msg: Message): void {
    try {
      if (msg.t === 'chunk') ch.send(FrameKind.Chunk, encodeChunkFrame(msg))
      else ch.send(FrameKind.Core, encodeMessage(msg))
    } catch {
      // The remote does not read (queue at its limit) or the stream just closed.
      this.stats.queueOverflows++
      ch.abort(new Error('send queue overflow'))
      void this.verify(p.id)
    }
  }

  private peer (id: string): Peer {
    let p = this.peers.get(id)
    if (p === undefined) {
      p = { id, incarnation: undefined, channels: [], pending: [], pendingBytes: 0, held: new HeldPartials(), dialing: false, lastUsedAt: this.clock(), byeReceived: false }
      this.peers.set(id, p)
      this.prune()
    }
    return p
  }

  /** Dials `peer` (an overlay id), opens a stream of `protocol`; a DialFailure says if it timed out, how far it got. */
  async openStream (peer: string, protocol: string): Promise<Stream> {
    this.stats.dials++
    return await openStreamTo(this.components.connectionManager, peer, protocol, this.cfg.dialTimeoutMs, this.clock)
  }

  /**
   * Opens the control stream to `p`. Attempts that time out are made again, up to
   * `dialAttempts`; a peer that refuses, or keeps timing out, is reported down.
   */
  private async dial (p: Peer): Promise<void> {
    p.dialing = true
    try {
      for (let attempt = 1; ; attempt++) {
        let stream: Stream
        try {
          stream = await this.openStream(p.id, CONTROL_PROTOCOL)
        } catch (err) {
          this.stats.dialFailures++
          if (this.peers.get(p.id) !== p || !this.running) return
          // The peer dialled us meanwhile (both sides dial under load): it is alive.
          if (p.channels.length > 0) { this.log('dial to %s failed (%s), but it connected to us meanwhile', p.id, (err as Error).message); return }
          const timedOut = err instanceof DialFailure && err.timedOut
          if (timedOut && attempt < this.cfg.dialAttempts) {
            this.stats.dialRetries++
            this.log('dial to %s timed out (%s): attempt %d of %d', p.id, (err as Error).message, attempt + 1, this.cfg.dialAttempts)
            continue
          }
          this.peers.delete(p.id)
          this.notifySent()
          this.log('dial to %s failed (%s): reporting it down', p.id, (err as Error).message)
          this.host.peerDown(p.id, p.incarnation)
          return
        }
        if (!this.running || this.peers.get(p.id) !== p) { stream.abort(new Error('not needed')); return }
        const ch = this.channel(stream, p.id)
        ch.send(FrameKind.Hello, encodeHello(this.host.hello()))
        this.attach(p, ch)
        return
      }
    } finally {
      p.dialing = false
    }
  }

  private attach (p: Peer, ch: FrameChannel): void {
    p.channels.push(ch)
    const pending = p.pending
    p.pending = []
    p.pendingBytes = 0
    for (const m of pending) this.write(p, ch, m)
    this.feedHeld(p)
    this.notifySent()
  }

  /** Partials held for `p` go to its first control channel while that holds less than the high-water mark. */
  private feedHeld (p: Peer | undefined): void {
    const ch = p?.channels[0]
    if (p !== undefined && ch !== undefined && p.held.size > 0) p.held.feed(ch, this.cfg.bulkHighWaterBytes, (m) => { this.write(p, ch, m) })
  }

  /** An inbound stream: its first frame must be a hello whose id matches the connection's peer. */
  private accept (stream: Stream, conn: Connection, bulk: boolean): void {
    let from: string | undefined
    const remote = conn.remotePeer.toString()
    const epoch = this.epoch
    // The hello is due first, small and soon (a stream that never said one held 2.2 MiB for good).
    const ch = new FrameChannel(stream, { ...this.channelInit(bulk), firstFrame: { maxBytes: MAX_HELLO_BYTES + 1, withinMs: this.cfg.failureDetectionTimeoutMs } }, {
      frame: (kind, body) => {
        if (epoch !== this.epoch) { ch.abort(new Error('opened before this peer was evicted')); return }
        if (from === undefined) {
          const h = kind === FrameKind.Hello ? decodeHello(body) : undefined
          if (h === undefined || peerIdPart(h.id) !== remote) { this.host.reject('bad-hello'); ch.abort(new Error('bad hello')); return }
          from = h.id
          if (!bulk) {
            const p = this.peer(from)
            this.helloFrom(p, h.incarnation, ch)
            p.byeReceived = false
            ch.send(FrameKind.Hello, encodeHello(this.host.hello()))
            this.attach(p, ch)
            this.host.connected(from)
          }
          return
        }
        this.onFrame(from, kind, body, bulk ? ch : undefined)
      },
      drained: () => { if (from !== undefined && !bulk) this.feedHeld(this.peers.get(from)); this.notifySent() },
      closed: () => { if (from !== undefined && !bulk) this.channelClosed(from, ch); this.notifySent() }
    }, this.clock)
  }

  /**
   * `p` said hello on `ch` as `incarnation`. A newer process makes the channels whose hello
   * named an older one stale, whoever opened them (one whose hello is still to come may
   * reach the new process). They leave the list before they are aborted, so their closing
   * neither redials nor forgets the peer. The incarnation never goes back; a late channel
   * of an older process is kept: refused, its dialler would redial at once, for ever.
   */
  private helloFrom (p: Peer, incarnation: number, ch: FrameChannel): void {
    this.helloIncarnation.set(ch, incarnation)
    if (p.incarnation !== undefined && incarnation <= p.incarnation) return
    if (p.incarnation !== undefined) {
      p.byeReceived = false
      const older = (c: FrameChannel): boolean => c !== ch && (this.helloIncarnation.get(c) ?? incarnation) < incarnation
      const stale = p.channels.filter(older)
      p.channels.splice(0, p.channels.length, ...p.channels.filter((c) => !older(c)))
      for (const old of stale) old.abort(new Error('restarted'))
    }
    p.incarnation = incarnation
  }

  private channel (stream: Stream, peer: string): FrameChannel {
    let helloSeen = false
    const epoch = this.epoch
    const ch: FrameChannel = new FrameChannel(stream, this.channelInit(false), {
      frame: (kind, body) => {
        if (epoch !== this.epoch) { ch.abort(new Error('opened before this peer was evicted')); return }
        if (!helloSeen) {
          const h = kind === FrameKind.Hello ? decodeHello(body) : undefined
          if (h === undefined || h.id !== peer) { this.host.reject('bad-hello'); this.answeredByAnother(peer, ch); return }
          helloSeen = true
          const p = this.peers.get(peer)
          if (p !== undefined && p.channels.includes(ch)) this.helloFrom(p, h.incarnation, ch) // not a record made since a forget
          return
        }
        this.onFrame(peer, kind, body, undefined)
      },
      drained: () => { this.feedHeld(this.peers.get(peer)); this.notifySent() },
      closed: () => { this.channelClosed(peer, ch); this.notifySent() }
    }, this.clock)
    return ch
  }

  /** Counters of the fence (node/fence.ts). */
  get fenceStats (): Readonly<Fence['stats']> { return this.fence.stats }

  private channelInit (bulk: boolean): FrameChannelInit {
    // An inbound bulk stream sends only EndAcks back (its own queue limit was maxBulkQueuedBytes, 1 GiB, for 2-byte frames).
    return { maxFrameBytes: this.cfg.maxFrameBytes, maxQueuedBytes: bulk ? 64 * 1024 : this.cfg.maxQueuedBytes, onSent: this.onSent, closeOnRemoteClose: bulk }
  }

  private onFrame (from: string, kind: number, body: Uint8ArrayList, bulk: FrameChannel | undefined): void {
    if (kind !== FrameKind.Heartbeat && kind !== FrameKind.Bye) {
      this.fence.tick(this.clock())
      if (this.fence.take({ from, kind, body, bulk })) return
    }
    switch (kind) {
      case FrameKind.Core:
      case FrameKind.Chunk: {
        let msg: Message
        try {
          msg = kind === FrameKind.Chunk ? decodeChunkFrame(body, this.codecLimits) : decodeMessage(body.subarray(), this.codecLimits)
        } catch (err) {
          this.host.reject(err instanceof WireError ? `wire-${err.reason}` : 'wire-malformed')
          this.log('rejected a frame from %s: %s', from, (err as Error).message)
          return
        }
        const p = this.peers.get(from)
        if (p !== undefined) p.lastUsedAt = this.clock()
        if (bulk !== undefined) this.endedBulk.delete(bulk)
        this.host.message(from, msg, bulk)
        return
      }
      case FrameKind.Heartbeat: return
      case FrameKind.Bye: { const p = this.peers.get(from); if (p !== undefined) p.byeReceived = true; return }
      case FrameKind.End: {
        // Every chunk before it went to the core, in order: tell the sender, whose stream is then free for its next
        // transfer (node/bulk-router.ts). One End per transfer: an End with no chunk since is a peer flooding answers.
        const id = decodeTransferEnd(body)
        if (bulk === undefined || id === undefined || this.endedBulk.has(bulk)) {
          this.host.reject('bad-end')
          if (bulk !== undefined) bulk.abort(new Error('bad End frame'))
          return
        }
        this.endedBulk.add(bulk)
        this.bulk.upstreamEnded(bulk)
        // Counted at 64 bytes each against the stream's small queue: a sender that never reads its answers is cut off.
        try { bulk.send(FrameKind.EndAck, encodeTransferEnd(id), 64) } catch (err) { bulk.abort(err as Error) }
        return
      }
      default: this.host.reject('unknown-frame')
    }
  }

  /** A dialled id answered by another (its address now serves another id of that key): down, not redialled at once for ever. */
  private answeredByAnother (peer: string, ch: FrameChannel): void {
    const p = this.peers.get(peer)
    if (p !== undefined && p.channels.includes(ch)) { this.peers.delete(peer); this.notifySent(); this.host.peerDown(peer, p.incarnation) }
    ch.abort(new Error('bad hello'))
  }

  private channelClosed (peer: string, ch: FrameChannel): void {
    const p = this.peers.get(peer)
    if (p === undefined) return
    const i = p.channels.indexOf(ch)
    if (i >= 0) p.channels.splice(i, 1)
    this.feedHeld(p) // held partials wait for a drain of the first channel: it may be another now
    if (i < 0) return // not this peer's (one from before an eviction, or a stale one)
    if (p.channels.length > 0 || !this.running) return
    if (p.byeReceived) { this.peers.delete(peer); return }
    void this.verify(peer)
  }

  /**
   * The connection to `peer` closed without a goodbye, or a send failed: redial. A crashed
   * peer refuses the connection and is reported down at once; a hung one after
   * `dialAttempts` timed-out dials.
   */
  private async verify (peer: string): Promise<void> {
    const p = this.peers.get(peer) ?? this.peer(peer)
    if (!p.dialing && p.channels.length === 0 && this.running) await this.dial(p)
  }

  private heartbeat (): void {
    const now = this.clock()
    this.fence.tick(now)
    // This process itself stalled (stopped, swapped, a long synchronous task): the silence is ours, not the peers'.
    const sinceLastMs = now - this.lastHeartbeatAt
    const stalled = sinceLastMs > this.cfg.heartbeatIntervalMs + this.cfg.failureDetectionTimeoutMs / 2
    this.lastHeartbeatAt = now
    if (stalled) {
      this.stats.stalls++
      this.log('this process stalled for %d ms: liveness counts restart', Math.round(sinceLastMs))
      for (const p of this.peers.values()) for (const ch of p.channels) ch.lastReceivedAt = now
    }
    for (const p of [...this.peers.values()]) {
      if (p.channels.length === 0) continue
      // Liveness is the peer's, not a stream's: after a simultaneous dial the other side may use one of two streams.
      const heard = Math.max(...p.channels.map((c) => c.lastReceivedAt))
      if (now - heard > this.cfg.failureDetectionTimeoutMs) {
        // Silent for too long: drop its streams and redial. A hung or partitioned peer does not finish `dialAttempts`
        // handshakes of dialTimeoutMs each and is reported down; one that was only slow answers and stays. One that
        // said bye (it pruned us) is silent on purpose: forgotten, not redialled (it was every 15 s).
        this.stats.heartbeatsMissed++
        this.log('%s silent for %d ms: dropping its streams and redialling', p.id, Math.round(now - heard))
        for (const c of [...p.channels]) c.abort(new Error('heartbeats missed'))
        p.channels.length = 0
        if (p.byeReceived) this.peers.delete(p.id)
        else void this.verify(p.id)
        continue
      }
      // A beacon on every control stream, whatever else it carried. One per peer, none on a stream that just carried a frame, saved a
      // fifth of 24 in-process peers' idle CPU, but 3 of 13 cold starts did not settle (missed heartbeats; cause unproven): reverted.
      for (const ch of [...p.channels]) {
        try { ch.send(FrameKind.Heartbeat, new Uint8Array(0)); this.stats.heartbeatsSent++ } catch { /* closed meanwhile: its close handler runs */ }
      }
    }
    this.bulk.sweep(now)
    this.prune()
  }

  /** Keeps at most `maxPeers` peers connected: the least recently used idle non-neighbours go (quiet for `pruneIdleMs`). */
  private prune (): void {
    pruneTo(this.peers, this.cfg.maxPeers, this.clock(), this.cfg.pruneIdleMs, (p) => this.host.keep(p.id) || this.bulk.busyWith(p.id), (p) => {
      this.stats.pruned++
      this.log('pruned idle %s (%d peers connected now, maxPeers %d)', p.id, this.peers.size, this.cfg.maxPeers)
      for (const ch of p.channels) {
        try { ch.send(FrameKind.Bye, new Uint8Array(0)) } catch { /* already closed */ }
        // Until the other side closes too; stop() cuts what is still closing.
        this.closing.add(ch)
        void ch.close().finally(() => this.closing.delete(ch))
      }
    })
  }
}
