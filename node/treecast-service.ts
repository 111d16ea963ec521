/**
 * treecast as a libp2p service: `services: { treecast: treecast(init) }` adds the overlay
 * to any libp2p node (TCP + Noise + a muxer). The service is the real-network driver of
 * the protocol core: it feeds the core decoded frames, closed connections and timer
 * deadlines with a monotonic clock and `Math.random` (or the injected `random`), and
 * carries out what the core outputs. Nothing in the core knows it runs on a network.
 */
import { performance } from 'node:perf_hooks'
import type { Logger, Startable } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import { TypedEventEmitter } from 'main-event'
import { TreecastCore } from '../overlay/core.ts'
import { DEFAULT_MAX_REDUCE_LENGTH, resolveCoreConfig, type CoreConfig, type CoreInit } from '../overlay/config.ts'
import type { Message } from '../overlay/messages.ts'
import type { CollectiveInit } from '../overlay/collective.ts'
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { TreeKind } from '../trees/tree-kind.ts'
import { MAX_TIMER_MS, resolveNodeConfig, type ResolvedNodeConfig } from './config.ts'
import { AlreadyMemberError, EvictedError, InvalidArgumentError, InvalidConfigError, JoinFailedError, NotStartedError, ReduceFailedError } from './errors.ts'
import { unknownKey } from '../overlay/unknown-keys.ts'
import { CREATE_OPTIONS } from './init-options.ts'
import type { TreecastEvents } from './events.ts'
import type { FrameChannel } from './frame-channel.ts'
import { Links, type LinksHost } from './links.ts'
import { Measurements, type LinkMeasurement } from './measurements.ts'
import { MAX_OVERLAY_ID_LENGTH, peerIdPart } from './hello.ts'
import type { TreecastComponents } from './components.ts'
import { Pending } from './pending.ts'
import { MAX_RELAYS, RELAY_FRAME_BYTES, RELAY_PROTOCOL, Relay } from './relay.ts'
import { SendStats } from './send-stats.ts'
import { componentLog } from './log.ts'
import { concatChunks } from './concat-chunks.ts'
import { rejoin, rejoinContacts } from './rejoin.ts'
import { NODE_CHUNK_BYTES, NODE_NEAR_SURVEY_COUNT, type BroadcastHandle, type BroadcastOptions, type ReduceResult, type TreecastInit, type TreeView } from './service-types.ts'

export { NODE_NEAR_SURVEY_COUNT, NODE_CHUNK_BYTES, type TreecastInit, type BroadcastOptions, type BroadcastHandle, type ReduceResult, type TreeView } from './service-types.ts'

/** The overlay service. Get it from `libp2p.services.treecast` or `createTreecast()`. */
export class TreecastService extends TypedEventEmitter<TreecastEvents> implements Startable {
  readonly [Symbol.toStringTag] = 'treecast'
  private readonly cfg: ResolvedNodeConfig
  private readonly links: Links
  private readonly relay: Relay
  private coreValue: TreecastCore | undefined
  private selfId = ''
  /** This peer's incarnation: a new one (larger) for every rejoin after an eviction. */
  private incarnation = Date.now()
  /** True while the automatic rejoin after an eviction runs. */
  private rejoining = false
  /** Counts evictions: a rejoin that is not the latest one stops. */
  private rejoinRun = 0
  private timer: ReturnType<typeof setTimeout> | undefined
  private timerAt = Infinity
  private started = false
  private readonly t0 = performance.now()
  private measurements: Measurements | undefined
  private readonly pending = new Pending()
  readonly stats = { rejected: {} as Record<string, number>, framesIn: 0 }
  private readonly sends = new SendStats()
  private readonly log: Logger

  constructor (private readonly components: TreecastComponents, private readonly init: TreecastInit = {}) {
    super()
    this.cfg = resolveNodeConfig(init)
    this.log = componentLog(components, 'treecast')
    if (init.joinTimeoutMs !== undefined && !(init.joinTimeoutMs > 0 && init.joinTimeoutMs <= MAX_TIMER_MS)) throw new InvalidArgumentError(`joinTimeoutMs must be positive and at most ${MAX_TIMER_MS}, got ${String(init.joinTimeoutMs)}`)
    if (init.rejoinAttempts !== undefined && !(Number.isInteger(init.rejoinAttempts) && init.rejoinAttempts >= 0)) throw new InvalidArgumentError('rejoinAttempts must be a non-negative integer')
    // Protocol options are checked now, not when the core is made at start.
    resolveCoreConfig({ failureDetectionTimeoutMs: this.cfg.failureDetectionTimeoutMs, ...init.core })
    const host: LinksHost = {
      hello: () => ({ id: this.selfId, incarnation: this.incarnation }),
      message: (from, msg, bulk) => { this.onMessage(from, msg, bulk) },
      reject: (reason) => { this.stats.rejected[reason] = (this.stats.rejected[reason] ?? 0) + 1; this.log('rejected remote input: %s', reason) },
      peerDown: (peer, inc) => { this.onPeerDown(peer, inc) },
      keep: (peer) => this.isNeighbour(peer),
      connected: (peer) => {
        if (!this.started || this.coreValue === undefined) return
        this.coreValue.peerConnected(this.now(), peer)
        this.afterInput()
      },
      fenceBegin: () => this.fenceBegin(),
      fenceVerdict: (facts) => this.fenceVerdict(facts)
    }
    this.links = new Links(components, this.cfg, { maxPeerIdLength: MAX_OVERLAY_ID_LENGTH, maxReduceLength: this.init.core?.maxReduceLength ?? DEFAULT_MAX_REDUCE_LENGTH }, host, () => this.now())
    this.relay = new Relay({
      hello: () => ({ id: this.selfId, incarnation: this.incarnation }),
      open: async (peer, protocol) => await this.links.openStream(peer, protocol),
      broadcast: (payload, mode) => this.startBroadcast(payload, { mode }),
      maxPayloadBytes: () => this.core().config.maxPayloadBytes,
      maxFrameBytes: RELAY_FRAME_BYTES,
      clock: () => this.now(),
      reject: host.reject
    })
  }

  // ---- lifecycle ---------------------------------------------------------------------

  async start (): Promise<void> {
    await this.links.start()
    await this.components.registrar.handle(RELAY_PROTOCOL, (stream, conn) => { this.relay.accept(stream, conn) }, { maxInboundStreams: MAX_RELAYS, maxOutboundStreams: MAX_RELAYS })
    this.started = true
  }

  /** Picks this peer's overlay id if libp2p already listens (else at first use). */
  afterStart (): void {
    try { this.activate() } catch { /* not listening yet: activated at first use */ }
  }

  /** Creates the core once this peer's listen address is known. */
  private activate (): TreecastCore {
    if (this.coreValue !== undefined) return this.coreValue
    const self = this.components.peerId.toString()
    // Announced addresses first (a daemon behind a mapping), else what libp2p listens on.
    const lists = [this.components.addressManager.getAnnounceAddrs(), this.components.addressManager.getAddresses(), this.components.transportManager.getAddrs()]
    const addrs = (lists.find((l) => l.length > 0) ?? []).map((a: Multiaddr) => a.toString())
    const id = addrs.find((a) => a.startsWith('/ip4/') && a.includes('/tcp/')) ?? addrs[0]
    if (id === undefined) throw new NotStartedError('libp2p has no listen address: treecast peers must be dialable')
    this.selfId = peerIdPart(id) === self ? id : `${id}/p2p/${self}`
    // Two pings per probe: the first to a new peer pays for the dial and the handshakes. A
    // small RTT survey (overlay/near-survey.ts): each ping may be a dial, and 24 peers in
    // one process surveying 32 each at once timed out and reported live peers down.
    const coreInit: CoreInit = { failureDetectionTimeoutMs: this.cfg.failureDetectionTimeoutMs, probePingCount: 2, nearSurveyCount: NODE_NEAR_SURVEY_COUNT, chunkBytes: NODE_CHUNK_BYTES, ...this.init.core }
    this.coreValue = new TreecastCore({
      self: this.selfId,
      random: this.init.random ?? Math.random,
      ...(this.init.contribute !== undefined ? { contribute: this.init.contribute } : {}),
      ...(this.init.ops !== undefined ? { ops: this.init.ops } : {}),
      config: coreInit
    })
    this.measurements = new Measurements(this.coreValue.config.probeBytes)
    return this.coreValue
  }

  async stop (): Promise<void> {
    this.started = false
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.pending.failAll(new NotStartedError('the node stopped'))
    await this.components.registrar.unhandle(RELAY_PROTOCOL).catch(() => {})
    await this.links.stop()
  }

  // ---- membership --------------------------------------------------------------------

  /** This peer's overlay id: its dialable multiaddr with /p2p/. */
  get id (): string { this.core(); return this.selfId }

  /** The core's state: idle, joining, running, leaving, left, evicted. */
  get state (): string { return this.core().state }

  /**
   * Founds a new overlay of `vnodeCount` virtual nodes. Alone by default (others join
   * through this peer); or, when every founder calls it with the same `founders` list of
   * overlay ids, with the virtual nodes spread evenly over them at once.
   */
  bootstrap (vnodeCount = 1024, founders: readonly string[] = [this.id]): void {
    const core = this.core()
    if (core.state !== 'idle') throw new AlreadyMemberError(`cannot bootstrap in state ${core.state}`)
    for (const f of founders) if (peerIdPart(f) === undefined) throw new InvalidArgumentError(`founder id must end in /p2p/<peer id>: ${f}`)
    core.bootstrap(this.now(), vnodeCount, founders)
    this.afterInput()
  }

  /**
   * Joins the overlay that `contact` (a multiaddr with /p2p/) belongs to. `want` asks for
   * specific virtual nodes (a rejoining peer asks for its old ones); with `wantOf`, the
   * number of virtual nodes of the overlay they were owned in, a contact of an overlay of
   * another size ignores them (a saved state reused elsewhere). Resolves once joined.
   */
  async join (contact: string | Multiaddr, opts: { want?: IntervalSet, wantOf?: number } = {}): Promise<void> {
    const to = contact.toString()
    if (peerIdPart(to) === undefined) throw new InvalidArgumentError(`contact must end in /p2p/<peer id>: ${to}`)
    if (to === this.id) throw new InvalidArgumentError('cannot join through oneself')
    if (this.core().state === 'evicted') {
      if (this.rejoining) throw new AlreadyMemberError('evicted, and rejoining by itself (rejoinAttempts)')
      this.freshCore() // joins again as a new incarnation
    }
    const core = this.core()
    if (core.state !== 'idle') throw new AlreadyMemberError(`cannot join in state ${core.state}`)
    const joined = this.pending.wait('joined', this.init.joinTimeoutMs ?? 30_000, () => new JoinFailedError(`no answer from ${to}`))
    try {
      core.join(this.now(), to, { incarnation: this.incarnation, ...(opts.want !== undefined ? { want: opts.want } : {}), ...(opts.wantOf !== undefined ? { wantOf: opts.wantOf } : {}) })
    } catch (err) {
      joined.catch(() => {})
      this.pending.reject('joined', err as Error)
      throw err
    }
    this.afterInput()
    try {
      await joined
    } catch (err) {
      // A join that failed leaves a core still joining (its contact may have crashed before
      // the welcome): it is dropped, with its connections, so that join() can be called again
      // (it threw AlreadyMemberError) and the members that heard of it find it gone.
      if (this.coreValue === core && (core.state as string) === 'joining') this.freshCore()
      throw err
    }
  }

  /** Leaves gracefully: hands every virtual node to a successor, then disconnects. */
  async leave (): Promise<{ drained: boolean }> {
    const core = this.core()
    core.leave(this.now()) // throws when not a member: no waiter is left behind
    const left = this.pending.wait<{ drained: boolean }>('left')
    this.afterInput()
    const r = await left
    // The "left" facts went out with the last input: the ones queued behind a dial would be
    // dropped by stop() (members not connected would then see this peer dead, not left).
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([this.links.whenSent(), new Promise<void>((resolve) => { timer = setTimeout(resolve, this.cfg.failureDetectionTimeoutMs) })])
    clearTimeout(timer)
    await this.links.stop()
    return r
  }

  // ---- collectives -------------------------------------------------------------------

  /**
   * Broadcasts `payload` to every virtual node from this peer's trees. Resolves when this
   * peer has handed its part to the network; `done` resolves when every virtual node has it.
   */
  async broadcast (payload: Uint8Array, opts: BroadcastOptions = {}): Promise<BroadcastHandle> {
    if (opts.root !== undefined) {
      const core = this.core()
      const root = opts.root
      if (!Number.isInteger(root) || root < 0 || root >= core.vnodeCount) throw new InvalidArgumentError(`root must be a virtual node in 0..${core.vnodeCount - 1}, got ${String(root)}`)
      if (!(payload instanceof Uint8Array)) throw new InvalidArgumentError('payload must be a Uint8Array')
      const owner = core.view.ownerOf(root)
      if (owner !== undefined && owner !== this.selfId) return await this.relay.broadcastAt(owner, payload, opts.mode ?? 'auto')
    }
    const h = this.startBroadcast(payload, { ...(opts.mode !== undefined ? { mode: opts.mode } : {}) })
    await h.sent
    return { id: h.id, done: h.done }
  }

  /** {@link broadcast} from this peer without waiting: the id at once, `sent` and `done` as promises. */
  startBroadcast (payload: Uint8Array, opts: BroadcastOptions = {}): BroadcastHandle & { readonly sent: Promise<void> } {
    if (!(payload instanceof Uint8Array)) throw new InvalidArgumentError('payload must be a Uint8Array')
    if (opts.root !== undefined) throw new InvalidArgumentError('startBroadcast roots the broadcast here; use broadcast() for another root')
    const id = this.core().broadcast(this.now(), payload, { mode: opts.mode ?? 'auto' })
    const done = this.pending.wait<void>(`bcast:${id}`)
    done.catch(() => {})
    this.afterInput()
    return { id, done, sent: this.links.whenSent() }
  }

  /** Sends `payload` to the owner of virtual node `vnode`; returns the message id. */
  send (vnode: number, payload: Uint8Array): string {
    if (!(payload instanceof Uint8Array)) throw new InvalidArgumentError('payload must be a Uint8Array')
    const id = this.core().sendTo(this.now(), vnode, payload)
    this.afterInput()
    return id
  }

  /**
   * Reduces one contribution per virtual node (from `contribute`) with `op` over arrays of
   * `length` numbers; resolves with the result at this peer (the root).
   */
  async reduce (op: string, length: number): Promise<ReduceResult> {
    return await this.startReduce(op, length).result
  }

  /** {@link reduce} with the reduction's id at once. */
  startReduce (op: string, length: number): { readonly id: string, readonly result: Promise<ReduceResult> } {
    const id = this.core().reduce(this.now(), { op, length })
    const result = this.pending.wait<ReduceResult>(`reduce:${id}`)
    result.catch(() => {}) // the caller may only listen to 'reduced' / 'reduce-failed'
    this.afterInput()
    return { id, result }
  }

  /**
   * Takes part in collective reduction `init.id`: every peer's application calls it with the
   * same arguments (MPI-style; the root is one of `members()`, or `id` for this peer), leaves
   * send first and no start travels down, so it ends sooner than {@link reduce}. Resolves
   * with the result at the root, and with null at once at every other peer (its part is on
   * its way). A peer that does not call it is asked for its part by the root after its
   * timeout, through `contribute`.
   */
  async reduceCollective (init: CollectiveInit): Promise<ReduceResult | null> {
    this.core().reduceCollective(this.now(), init) // throws on misuse, before any state changes
    // Waited for before the outputs are taken: the root's call may complete it at once.
    const result = init.root === this.selfId ? this.pending.wait<ReduceResult>(`reduce:${init.id}`) : null
    this.afterInput()
    return result === null ? null : await result
  }

  // ---- read-only view ----------------------------------------------------------------

  /** Virtual nodes owned here. */
  owned (): IntervalSet { return this.core().ownedSet }
  /** Total virtual nodes of the overlay (0 before joining). */
  vnodeCount (): number { return this.core().vnodeCount }
  /** Alive members in this peer's view. */
  members (): string[] { return [...this.core().members.alive()] }
  /** This peer's place in the tree of `root` (its own trees by default). */
  tree (kind: TreeKind, root = this.selfId): TreeView | undefined {
    const t = this.core().trees.get(kind, root)
    if (t === undefined) return undefined
    return { kind, root, parent: t.parent, children: [...t.children.keys()], metric: t.metric }
  }
  /** Every tree this peer is in. */
  trees (): TreeView[] {
    return [...this.core().trees.all()].map((t) => ({ kind: t.kind, root: t.root, parent: t.parent, children: [...t.children.keys()], metric: t.metric }))
  }
  /** Latest RTT and bandwidth measured to each probed peer. */
  measured (): ReadonlyMap<string, LinkMeasurement> { this.core(); return (this.measurements as Measurements).all() }
  /** Peers with an open control stream. */
  connectedPeers (): string[] { return this.links.connectedPeers() }
  /** Counters: core rejections, link statistics. */
  counters (): Record<string, unknown> {
    return { core: this.core().stats, rejected: this.stats.rejected, sent: this.sends.byType, fallbackSends: this.sends.fallbackSends, bytesByMode: this.sends.bytesByMode, links: this.links.stats, fence: this.links.fenceStats, bulk: this.links.bulkStats }
  }
  /** True while this peer still probes after a membership change. */
  get probing (): boolean { return this.core().isProbing }
  /** The protocol options this peer runs with: `init.core` over the node's and the core's defaults. */
  get coreConfig (): Readonly<CoreConfig> { return this.core().config }

  // ---- driver ------------------------------------------------------------------------

  private core (): TreecastCore {
    if (!this.started) throw new NotStartedError('the node is not started')
    return this.activate()
  }

  private now (): number { return performance.now() - this.t0 }

  private onMessage (from: string, msg: Message, bulk: FrameChannel | undefined): void {
    if (!this.started) return
    this.stats.framesIn++
    const now = this.now()
    this.measurements?.received(now, from, msg)
    this.coreValue?.handle(now, from, msg)
    this.afterInput(bulk)
  }

  private onPeerDown (peer: string, inc: number | undefined): void {
    if (!this.started) return
    // The contact of a join under way (or where a leaving contact sent it): the core outputs `join-failed`.
    this.coreValue?.peerDown(this.now(), peer, inc)
    this.afterInput()
  }

  private onTimer (): void {
    this.timer = undefined
    this.timerAt = Infinity
    if (!this.started) return
    this.coreValue?.handleTimeout(this.now())
    this.afterInput()
  }

  /** Carries out the core's outputs and re-arms the timer. */
  private afterInput (upstream?: FrameChannel): void {
    const core = this.coreValue
    if (core === undefined) return
    const now = this.now()
    for (const o of core.takeOutputs()) {
      switch (o.type) {
        case 'send':
          this.measurements?.sent(now, o.to, o.message)
          this.sends.record(o.to, o.message)
          this.links.send(o.to, o.message, upstream)
          break
        case 'deliver': {
          const chunks = o.chunks
          const total = o.totalBytes
          let whole: Uint8Array | undefined
          // The payload is assembled on first use only (a copy at every peer otherwise).
          this.emit('deliver', { id: o.id, origin: o.origin, mode: o.mode, vnodes: o.vnodes, chunks, get payload () { whole ??= concatChunks(chunks, total); return whole } })
          break
        }
        case 'broadcast-done': this.pending.resolve(`bcast:${o.id}`, undefined); this.emit('broadcast-done', { id: o.id }); break
        case 'reduced': {
          const r: ReduceResult = { id: o.id, value: o.value, covered: o.covered, durationMs: now - o.startedAt }
          this.pending.resolve(`reduce:${o.id}`, r)
          this.emit('reduced', r)
          break
        }
        case 'reduce-failed':
          this.pending.reject(`reduce:${o.id}`, new ReduceFailedError(`reduction ${o.id} gave up; missing ${o.missing.size} virtual nodes`))
          this.emit('reduce-failed', { id: o.id, missing: o.missing })
          break
        case 'ownership':
          this.log('ownership (%s): +%s -%s, owns %s', o.reason, o.added.toString(), o.removed.toString(), o.owned.toString())
          this.emit('ownership', { owned: o.owned, added: o.added, removed: o.removed, reason: o.reason })
          break
        case 'member':
          this.log('member %s is %s', o.peer, o.status)
          if (o.status !== 'alive') { this.links.forget(o.peer); this.relay.rootGone(o.peer) }
          this.emit('member', { peer: o.peer, status: o.status })
          break
        case 'tree': this.emit('tree', { kind: o.kind, root: o.root, parent: o.parent }); break
        case 'joined': this.pending.resolve('joined', undefined); this.emit('joined', null); break
        // Given up at once, not at joinTimeoutMs: join() drops the core, and a rejoin tries its next contact.
        case 'join-failed': this.pending.reject('joined', new JoinFailedError(`cannot reach ${o.contact}; join() again through another contact`)); break
        case 'left': this.pending.resolve('left', { drained: o.drained }); this.emit('left', { drained: o.drained }); break
        case 'evicted': this.onEvicted(core); break
      }
    }
    const next = core.nextTimeoutAt()
    if (next === undefined || !this.started) return
    if (this.timer !== undefined && next >= this.timerAt) return
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timerAt = next
    // A core deadline past setTimeout's limit (a huge configured timeout) is waited for in steps: a longer delay would fire after 1 ms, again and again.
    this.timer = setTimeout(() => { this.onTimer() }, Math.min(MAX_TIMER_MS, Math.max(0, next - now)))
  }

  /** Others declared this peer dead: pending operations fail, and it rejoins unless told not to. */
  private onEvicted (core: TreecastCore): void {
    const attempts = this.init.rejoinAttempts ?? 3
    const want = core.ownedSet
    const wantOf = core.vnodeCount
    const contacts = rejoinContacts(core.members.alive(), this.selfId, this.init.random ?? Math.random)
    const run = ++this.rejoinRun
    this.rejoining = attempts > 0
    // Before the event: a listener that calls join() or leave() must see the peer rejoining.
    this.pending.failAll(new EvictedError('this peer was declared dead (evicted); its pending operations were dropped'))
    this.log.error('evicted: the overlay declared this peer dead%s', attempts > 0 ? '; rejoining' : '')
    this.emit('evicted', null)
    if (attempts === 0) return
    // After this turn: the old core's outputs are still being carried out.
    queueMicrotask(() => {
      const host = {
        joinAfresh: async (contact: string, w: IntervalSet) => { this.freshCore(); await this.join(contact, { want: w, wantOf }) },
        running: () => this.started && this.rejoinRun === run
      }
      void rejoin(host, contacts, want, attempts).then((r) => {
        if (this.rejoinRun !== run) return // evicted again meanwhile: a newer rejoin runs
        this.rejoining = false
        if (r.ok) { this.log('rejoined through %s after %d attempt(s)', r.contact, r.attempts); return }
        // Idle (not left half-joined), so that the application may join() through a contact of its own.
        this.freshCore()
        if (!this.started) return
        this.log.error('rejoin failed after %d attempt(s): %s', r.attempts, r.errors.join('; '))
        this.emit('rejoin-failed', { attempts: r.attempts, errors: r.errors })
      })
    })
  }

  /** After a stall (node/fence.ts): asks up to 3 members whether this peer is still one. */
  private fenceBegin (): boolean {
    const core = this.coreValue
    if (!this.started || core === undefined || (core.state !== 'running' && core.state !== 'leaving')) return false
    const ask = rejoinContacts(core.members.alive(), this.selfId, this.init.random ?? Math.random).slice(0, 3)
    for (const m of ask) this.links.send(m, { t: 'sync' }, undefined)
    return ask.length > 0
  }

  /** What membership facts say of this peer at the incarnation its core runs. */
  private fenceVerdict (facts: Message): 'dead' | 'alive' | 'unknown' {
    const core = this.coreValue
    if (facts.t !== 'facts' || core === undefined) return 'unknown'
    const mine = core.members.incarnationOf(this.selfId)
    const f = facts.members.find((m) => m.peer === this.selfId)
    if (f === undefined || f.incarnation < mine) return 'unknown'
    if (f.status === 'alive') return f.incarnation === mine ? 'alive' : 'unknown'
    return 'dead'
  }

  /** Drops the core (and every link of its incarnation) for a fresh one with a new incarnation. */
  private freshCore (): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.timerAt = Infinity
    this.links.forgetAll()
    this.coreValue = undefined
    this.incarnation = Math.max(Date.now(), this.incarnation + 1)
  }

  private emit<K extends keyof TreecastEvents> (type: K, detail: TreecastEvents[K]['detail']): void {
    this.safeDispatchEvent(type, { detail })
  }

  private isNeighbour (peer: string): boolean {
    const core = this.coreValue
    if (core === undefined) return false
    for (const t of core.trees.all()) if (t.parent === peer || t.children.has(peer)) return true
    return false
  }
}

/** The libp2p service factory: `services: { treecast: treecast(init) }`. */
export function treecast (init: TreecastInit = {}): (components: TreecastComponents) => TreecastService {
  // createTreecast hands its whole init over, the host's options with it.
  const unknown = unknownKey(init, CREATE_OPTIONS)
  if (unknown !== undefined) throw new InvalidConfigError(`${unknown} is not an option of treecast (TreecastInit, node/service-types.ts)`)
  return (components) => new TreecastService(components, init)
}
