/**
 * The composed protocol core of one peer: membership, ownership, trees, probing, streams
 * (broadcast and point-to-point) and reductions. Sans-IO: inputs are method calls with the
 * current time, outputs are collected and taken with `takeOutputs()`; the driver keeps one
 * timer armed at `nextTimeoutAt()`. Randomness comes from the injected `random`.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { OwnershipMap } from '../virtual-nodes/ownership-map.ts'
import { TreeTable } from '../trees/tree-table.ts'
import { detourRoots, isDetour } from '../trees/detours.ts'
import { downloadWanted } from '../trees/download-wanted.ts'
import type { TreeKind } from '../trees/tree-kind.ts'
import { resolveCoreConfig, type CoreConfig } from './config.ts'
import { InvalidArgumentError, NotRunningError, TooManyTransfersError } from './errors.ts'
import { Membership } from './membership.ts'
import { SharedStart } from './shared-start.ts'
import type { FactsMessage, Message, ReduceStart } from './messages.ts'
import type { Output } from './outputs.ts'
import { OwnershipEngine } from './ownership-engine.ts'
import { OpRegistry } from './reduce-ops.ts'
import { refusedFromStranger, strangerDisowns } from './strangers.ts'
import { isTreeRoot, treeRootOf } from './tree-roots.ts'
import { reduceStart, type Reductions, type ContributeFn } from './reduction.ts'
import { checkCollective, checkCollectiveState, checkReduceArgs, type CollectiveInit } from './collective.ts'
import type { Streams } from './streams.ts'
import { createDataPlane } from './data-plane.ts'
import { planBroadcast } from './broadcast-plan.ts'
import { StripeAsks } from './stripe-asks.ts'
import { TimerQueue } from './timer-queue.ts'
import { chunkPayload } from './payload.ts'
import { Probing } from './probing.ts'
import { Liveness } from './liveness.ts'
import { PreJoinBuffer } from './pre-join-buffer.ts'
import { JoinAttempt, joinMessage } from './join-attempt.ts'
import { Suspects } from './suspects.ts'
import { TreeOutbox } from './tree-outbox.ts'
import { firstNumberOf } from './incarnation-numbers.ts'
import type { CoreParams, CoreState, CoreStats } from './core-params.ts'

export { CLAIM_VERSION_STEP, JOINER_FORWARD_MS, MAX_ORPHAN_RECORDS, MAX_RECENT_JOINERS, ORPHAN_VERSION_STEP } from './ownership-engine.ts'
export { MAX_PRE_JOIN_BYTES, MAX_PRE_JOIN_MESSAGES } from './pre-join-buffer.ts'
export type { CoreParams, CoreState, CoreStats } from './core-params.ts'

/** One peer's protocol core. */
export class TreecastCore {
  readonly self: PeerId
  readonly config: CoreConfig
  readonly members = new Membership()
  view: OwnershipMap = new OwnershipMap(0)
  readonly trees: TreeTable
  readonly streams: Streams
  readonly reductions: Reductions
  readonly stats: CoreStats = { rejected: {}, probes: 0, probesLight: 0, offers: 0, messagesOut: 0 }
  private readonly probing: Probing
  private readonly ownership: OwnershipEngine
  private readonly timers = new TimerQueue()
  private readonly ops = new OpRegistry()
  private readonly contributeFn: ContributeFn
  private readonly random: () => number
  private out: Output[] = []
  /** Sends held until the end of the current event (see the reductions' host). */
  private deferred: Output[] = []
  private vnodes = 0
  private seq = 0
  private incarnation = 0
  /** Until then a leaf's parent changes use full checks: this incarnation restarted before the last one's crash was noticed (onWelcome). */
  private fullChecksUntilMs = -Infinity
  /** The join under way (its contact changes when a leaving contact redirects it). */
  private joinAttempt: JoinAttempt | undefined
  private stateValue: CoreState = 'idle'
  private now = 0
  private readonly liveness: Liveness
  private readonly treeOutbox: TreeOutbox
  private parkArmed = false
  private readonly suspects: Suspects
  private readonly asks: StripeAsks
  /** Messages that arrived while joining, before the contact's snapshot. */
  private readonly preJoin = new PreJoinBuffer()

  constructor (params: CoreParams) {
    this.self = params.self
    this.config = resolveCoreConfig(params.config)
    this.random = params.random
    this.contributeFn = params.contribute ?? ((_id, start) => new Float64Array(start.length))
    for (const [name, fn] of Object.entries(params.ops ?? {})) this.ops.register(name, fn)
    const viewOf = (): OwnershipMap => this.view
    this.trees = new TreeTable({
      self: this.self,
      owned: () => this.ownership.owned,
      isAlive: (p) => this.members.isAlive(p),
      sendOp: (to, op) => { this.treeOutbox.add(to, op) },
      parentChanged: (kind, root, parent) => { this.out.push({ type: 'tree', kind, root, parent }) },
      latParentDist: (now, root, rtt, dist) => { this.probing.detourSeen(now, root, rtt, dist) }, treeNews: () => { this.probing.news(this.now) },
      farRttMs: () => this.probing.linkFarRttMs(), isTreeRoot: (p) => isTreeRoot(p, this.config.treeRootStride), clusterTag: () => this.probing.clusterTag(),
      mayShortCheck: (now) => now >= this.fullChecksUntilMs,
      parentLost: (now) => { if (this.stateValue === 'running') this.probing.trigger(now) }
    }, this.config.lockTimeoutMs, this.config.tieTolerance, this.config.bwMaxChildren, this.config.bwTieDepthHops)
    this.treeOutbox = new TreeOutbox({
      self: this.self,
      trees: this.trees,
      send: (to, m) => this.send(to, m),
      setTimer: (at) => this.timers.add(at, 'tree')
    }, this.config.treeUpdateDelayMs)
    const plane = createDataPlane({
      self: this.self,
      config: this.config,
      members: this.members,
      trees: this.trees,
      ops: this.ops,
      contribute: (id, start, v) => this.contributeFn(id, start, v),
      now: () => this.now,
      view: viewOf,
      vnodeCount: () => this.vnodes,
      owned: () => this.ownership.owned,
      claimed: () => this.ownership.claimed(),
      isDeparted: (p) => this.ownership.isDeparted(p),
      nearTest: () => this.probing.nearTest(),
      send: (to, m) => this.send(to, m),
      sendDeferred: (to, m) => this.deferred.push({ type: 'send', to, message: m }),
      emit: (o) => this.out.push(o),
      reduceTimer: (at, id) => this.timers.add(at, 'reduce', id),
      wantPark: () => this.armPark(),
      reject: (r) => this.reject(r)
    })
    this.streams = plane.streams
    this.reductions = plane.reductions
    this.probing = new Probing({
      self: this.self,
      random: params.random,
      alive: () => this.members.alive(),
      isAlive: (p) => this.members.isAlive(p),
      send: (to, m) => this.send(to, m),
      setTimer: (at, kind) => this.timers.add(at, kind),
      judged: (now, cand, rtt, bw, entries) => { this.trees.judge(now, cand, rtt, bw, entries) },
      wantsDownload: (cand, rtt, entries) => downloadWanted({ self: this.self, isAlive: (p) => this.members.isAlive(p), bwTree: (root) => this.trees.get('bw', root), bwMaxChildren: this.config.bwMaxChildren, tieTolerance: this.config.tieTolerance }, cand, rtt, entries),
      parentlessCount: () => this.trees.parentlessCount(),
      isDetour: (root, far) => isDetour(this.trees, root, far),
      detourRoots: (far, max) => detourRoots(this.trees, far, max),
      isRunning: () => this.stateValue === 'running'
    }, this.config)
    this.ownership = new OwnershipEngine({
      self: this.self,
      members: this.members,
      get view () { return viewOf() },
      trees: this.trees,
      streams: this.streams,
      joinPolicy: this.config.joinPolicy,
      vnodeCount: () => this.vnodes,
      incarnation: () => this.incarnation,
      isRunning: () => this.stateValue === 'running',
      isLeaving: () => this.stateValue === 'leaving',
      send: (to, m) => this.send(to, m),
      fanout: (m, except) => this.fanout(m, except),
      emit: (o) => this.out.push(o),
      triggerProbing: (now) => this.probing.trigger(now),
      memberGone: (now, peer) => { this.probing.targetGone(now, peer); this.reductions.peerGone(peer) },
      checkLeft: () => this.checkLeft(false), closedEarly: (peer) => this.suspects.end(peer),
      evicted: () => { this.stateValue = 'evicted'; this.out.push({ type: 'evicted' }) },
      reject: (r) => this.reject(r),
      claimTimeoutMs: () => this.config.failureDetectionTimeoutMs,
      leaveTimeoutMs: () => this.config.leaveTimeoutMs,
      setClaimTimer: (at) => this.timers.add(at, 'claim')
    })
    this.asks = new StripeAsks({
      self: this.self, owned: () => this.ownership.owned, isAlive: (p) => this.members.isAlive(p), send: (to, m) => this.send(to, m),
      setTimer: (at, id) => this.timers.add(at, 'ask', id), reject: (r) => this.reject(r),
      originate: (now, id, b, stripes) => this.streams.originate(now, { id, origin: this.self, tree: b.tree, mode: b.mode, chunkCount: b.chunks.length, totalBytes: b.totalBytes }, b.header, b.chunks, stripes)
    }, { timeoutMs: this.config.stripeAskTimeoutMs, maxStripes: this.config.stripeMaxCount, minBytes: this.config.stripeMinBytes })
    this.suspects = new Suspects(this.config.suspectGraceMs, (at, peer) => this.timers.add(at, 'suspect', peer))
    this.liveness = new Liveness({
      awaited: () => [...this.streams.awaitedPeers(), ...this.reductions.awaitedPeers()], // unacknowledged data, partials under way
      ping: (peer) => this.send(peer, { t: 'ping', nonce: 0 }), declareDead: (now, peer) => this.ownership.declareDead(now, peer),
      setTimer: (at) => this.timers.add(at, 'liveness'), heardAt: (peer) => this.members.heardAt(peer), setHeardAt: (peer, now) => this.members.setHeardAt(peer, now)
    }, this.config.failureDetectionTimeoutMs)
  }

  // ---- getters -------------------------------------------------------------------------

  get state (): CoreState { return this.stateValue }
  get ownedSet (): IntervalSet { return this.ownership.owned }
  get vnodeCount (): number { return this.vnodes }
  /** True while this peer probes because of a recent membership change (steady probes do not count). */
  get isProbing (): boolean { return this.probing.isProbing }
  get probesStarted (): number { return this.probing.started }
  /** While joining: the member whose welcome this peer waits for (the contact, or where a leaving contact sent it). */
  get joiningThrough (): PeerId | undefined { return this.stateValue === 'joining' ? this.joinAttempt?.contact : undefined }

  /** Takes the outputs produced since the last call. */
  takeOutputs (): Output[] { const o = this.out; this.out = []; return o }

  /** When the driver should call `handleTimeout` next. */
  nextTimeoutAt (): number | undefined { return this.timers.nextAt() }

  // ---- lifecycle -----------------------------------------------------------------------

  /**
   * Starts as one of a known set of founding members (all call this with the same list):
   * the virtual nodes are spread evenly over `members` in the given order. `shared`: the
   * founders' common start built once for all of them (overlay/shared-start.ts; the
   * simulator passes one), else this peer builds its own.
   */
  bootstrap (now: number, vnodeCount: number, members: readonly PeerId[], shared?: SharedStart): void {
    this.expectState('idle')
    if (!members.includes(this.self)) throw new InvalidArgumentError('bootstrap members must include this peer')
    if (shared !== undefined && !shared.matches(vnodeCount, members)) throw new InvalidArgumentError('bootstrap: the shared start was built for other virtual nodes or members')
    const start = shared ?? new SharedStart(vnodeCount, members) // checks vnodeCount
    this.now = now
    this.vnodes = vnodeCount
    this.view = start.view.clone()
    this.members.startFrom(start.members)
    this.stateValue = 'running'
    for (const m of members) this.trees.ensureRoot(m)
    this.ownership.setOwned(this.view.rangesOf(this.self), 'initial')
    if (members.length > 1) this.probing.trigger(now)
    this.flush(now)
  }

  /** Joins an overlay through `contact`, optionally asking for exact ranges (`wantOf`: of an overlay of that many virtual nodes, else ignored). */
  join (now: number, contact: PeerId, opts: { want?: IntervalSet, wantOf?: number, incarnation?: number } = {}): void {
    this.expectState('idle')
    const msg = joinMessage(this.self, contact, opts)
    this.now = now
    this.incarnation = msg.incarnation
    for (const counter of [this.streams, this.trees, this.probing]) counter.numberFrom(firstNumberOf(this.incarnation))
    this.stateValue = 'joining'
    this.joinAttempt = new JoinAttempt(contact, msg)
    this.send(contact, msg)
    this.flush(now)
  }

  /** Leaves gracefully: hands everything to the successor, tells everyone, drains, then outputs `left`. */
  leave (now: number): void {
    this.expectState('running')
    this.now = now
    this.asks.releaseAll(now)
    this.stateValue = 'leaving'
    this.probing.stop()
    this.trees.leaveAll()
    this.ownership.startLeave()
    this.members.apply({ peer: this.self, incarnation: this.incarnation, status: 'left' })
    this.fanout({ t: 'facts', vnodeCount: this.vnodes, members: [{ peer: this.self, incarnation: this.incarnation, status: 'left' }], records: [], welcome: false })
    this.reductions.flush()
    this.timers.add(now + this.config.leaveTimeoutMs, 'leave')
    this.checkLeft(false)
    this.flush(now)
  }

  // ---- application calls ---------------------------------------------------------------

  /**
   * Broadcasts to every virtual node from this peer's trees. `payload` may be given as
   * chunks (each at most chunkBytes; they are sent as they are). Returns the broadcast id.
   */
  broadcast (now: number, payload: Uint8Array | readonly Uint8Array[], opts: { mode?: 'auto' | TreeKind } = {}): string {
    this.expectState('running', true)
    this.now = now
    const b = planBroadcast(payload, opts.mode, this.config, { self: this.self, vnodeCount: this.vnodes, owned: this.ownership.owned, treeRoot: (k) => this.treeRoot(k), stripeEntries: () => this.trees.stripeEntries(), isAlive: (p) => this.members.isAlive(p) })
    const id = this.newId()
    this.asks.start(now, id, b)
    this.flush(now)
    return id
  }

  /** Sends a message to the owner of `vnode`. Returns the message id. */
  sendTo (now: number, vnode: number, payload: Uint8Array): string {
    this.expectState('running', true)
    if (!Number.isInteger(vnode) || vnode < 0 || vnode >= this.vnodes) throw new InvalidArgumentError(`virtual node ${vnode} is outside 0..${this.vnodes - 1}`)
    this.now = now
    const chunks = chunkPayload(payload, this.config)
    const id = this.newId()
    this.streams.originate(now, { id, origin: this.self, mode: 'direct', chunkCount: chunks.length, totalBytes: payload.length }, IntervalSet.of(vnode), chunks)
    this.flush(now)
    return id
  }

  /** Starts a reduction rooted at this peer; the result is output as `reduced`. */
  reduce (now: number, opts: { op: string, length: number }): string {
    this.expectState('running', true)
    checkReduceArgs(opts.op, opts.length, { op: (op) => this.ops.has(op), maxLength: this.config.maxReduceLength })
    this.now = now
    const id = this.newId()
    this.startReduction(now, id, reduceStart(opts.op, this.ownership.owned.min ?? 0, opts.length, this.config.reduceSegmentBytes, this.config.reduceMinSegmentBytes))
    this.flush(now)
    return id
  }

  /**
   * Takes part in collective reduction `init.id` (overlay/collective.ts; every peer calls it
   * alike); `reduced` is output at the root. InvalidArgumentError: bad arguments, a root that
   * is not a live member, a second call; TooManyTransfersError at the root (as `reduce`).
   */
  reduceCollective (now: number, init: CollectiveInit): void {
    this.expectState('running', init.root === this.self)
    checkCollective(init, { op: (op) => this.ops.has(op), maxLength: this.config.maxReduceLength, member: (p) => p === this.self || this.members.isAlive(p) })
    if (!isTreeRoot(init.root, this.config.treeRootStride)) throw new InvalidArgumentError(`root ${init.root} roots no trees (treeRootStride ${this.config.treeRootStride}): a collective reduction needs a tree root`)
    const start = reduceStart(init.op, this.ownership.owned.min ?? 0, init.length, this.config.reduceSegmentBytes, this.config.reduceMinSegmentBytes)
    checkCollectiveState(init.id, this.reductions.collectiveState(init.id, init.root, start))
    this.now = now
    if (start.segment === undefined) this.reductions.collect(now, init.id, init.root, start)
    else {
      // Long (segmented): the root's call starts it down the tree (with the combining plans); elsewhere recorded.
      this.reductions.markCalled(init.id)
      if (init.root === this.self) this.startReduction(now, init.id, start)
    }
    this.flush(now)
  }

  /** Sends the start of reduction `id` down this peer's latency tree. */
  private startReduction (now: number, id: string, reduce: ReduceStart): void {
    this.streams.originate(now, { id, origin: this.self, tree: this.treeRoot('lat'), mode: 'lat', chunkCount: 1, totalBytes: 0, reduce }, IntervalSet.range(0, this.vnodes), [new Uint8Array(0)])
  }

  /** Whether this peer roots trees (overlay/tree-roots.ts; always, with the default stride). */
  get isTreeRoot (): boolean { return (this.selfIsRoot ??= isTreeRoot(this.self, this.config.treeRootStride)) }
  private selfIsRoot: boolean | undefined

  /** The root whose `kind` tree this peer's broadcasts and reductions take now: itself, unless a `treeRootStride` makes it no tree root. */
  treeRoot (kind: TreeKind): PeerId { return treeRootOf(this.self, this.config.treeRootStride, kind, this.members.alive(), this.trees, (p) => this.probing.rttOf(p)) }

  // ---- inputs --------------------------------------------------------------------------

  /** A message from `from` (already decoded and validated). */
  handle (now: number, from: PeerId, msg: Message): void {
    this.now = now
    if (this.stateValue === 'left' || this.stateValue === 'evicted' || this.stateValue === 'idle') return
    const status = this.members.statusOf(from)
    if (this.stateValue !== 'joining' && msg.t !== 'join' && status === 'dead') {
      // A peer declared dead speaks (it hung, or a partition healed): its messages belong to
      // a dead incarnation and are dropped; it is told, so it stops (evicted) and may rejoin.
      this.reject('from-dead-member')
      this.ownership.noticeDead(now, from, msg)
      this.flush(now)
      return
    }
    // Only members' silence is ever watched; a table entry per sender id would be unbounded.
    if (status !== undefined) { this.members.noteHeard(from, now); this.liveness.heard(now, from, true) }
    if (msg.t === 'join-elsewhere') { this.onJoinElsewhere(now, from, msg.to); return }
    if (this.stateValue === 'joining' && !(msg.t === 'facts' && msg.welcome)) {
      // Arrived before the contact's snapshot (a hand-off can overtake it): keep for after.
      if (!this.preJoin.push(from, msg)) this.reject('pre-join-overflow')
      return
    }
    // overlay/strangers.ts: a sender no member announced; its adopts and reaches are disowned.
    if (status === undefined && refusedFromStranger(msg)) { this.reject(`stranger-${msg.t}`); const ops = strangerDisowns(msg); if (ops.length > 0) this.send(from, { t: 'tree', ops }); return }
    switch (msg.t) {
      case 'join': this.ownership.onJoin(now, from, msg.incarnation, msg.want, msg.of); break
      case 'sync': this.send(from, { t: 'facts', vnodeCount: this.vnodes, members: this.members.facts(), records: this.view.records(), welcome: false }); break
      case 'facts':
        if (msg.welcome) this.onWelcome(now, from, msg)
        else this.ownership.onFacts(now, from, msg)
        break
      case 'give': this.ownership.onGive(msg); break
      case 'handoff': this.ownership.onHandoff(from, msg); break
      case 'handoff-ack': this.ownership.onHandoffAck(from); break
      case 'claim-ack': this.ownership.onClaimAck(from, msg.version, msg.ranges); break
      case 'ping': this.probing.pinged(now, from, msg.nonce); this.send(from, { t: 'pong', nonce: msg.nonce }); break
      case 'pong': this.probing.onPong(now, from, msg.nonce); break
      case 'offer': this.stats.offers++; this.probing.offered(now, from); break
      case 'probe-req': this.send(from, { t: 'probe-rep', nonce: msg.nonce, trees: this.trees.probeEntries(), padding: msg.light === true ? 0 : this.config.probeBytes, near: this.probing.requested(now, from, msg.nonce) }); break
      case 'probe-rep': { const ended = this.probing.onReply(now, from, msg); if (ended !== undefined) { this.stats.probes++; if (ended === 'light') this.stats.probesLight++ } break }
      case 'tree': for (const op of msg.ops) this.trees.handleOp(now, from, op); break
      case 'chunk': this.streams.onChunk(now, from, msg); break
      case 'ack': this.streams.onAck(from, msg.stream, msg.away === true); break
      case 'hold': this.streams.onHold(now, from, msg.stream, msg.ageMs); break
      case 'resend': this.streams.onResend(from, msg.id); break
      case 'entries-req': this.send(from, { t: 'entries-rep', id: msg.id, entries: this.trees.stripeEntries() }); break
      case 'entries-rep': this.asks.onEntries(now, from, msg.id, msg.entries); break
      case 'partial': this.reductions.onPartial(now, from, msg); break
      case 'reduce-ack': this.reductions.onReduceAck(now, from, msg.id, msg.root, msg.part); break
      case 'pull': if (this.ops.has(msg.op) && msg.length <= this.config.maxReduceLength) this.reductions.onPull(msg, this.config.maxHops); else this.reject('bad-pull'); break
    }
    this.checkLeft(false)
    this.flush(now)
  }

  /**
   * The driver lost its connection to `peer` (closed, reset, or the process is gone). `incarnation`, when the driver
   * knows it, keeps a late notice about an old incarnation from killing a restarted peer. A joiner's contact: `join-failed`.
   */
  peerDown (now: number, peer: PeerId, incarnation?: number): void {
    this.now = now
    if (this.stateValue === 'joining' && this.joinAttempt?.contactDown(peer) === true) this.out.push({ type: 'join-failed', contact: peer })
    if (this.stateValue !== 'running' && this.stateValue !== 'leaving') return
    if (incarnation !== undefined && incarnation < this.members.incarnationOf(peer)) return
    const inc = this.members.incarnationOf(peer)
    // An alive peer's closed connection may be a graceful leave: waited on first (overlay/suspects.ts).
    if (this.members.statusOf(peer) !== 'alive' || !this.suspects.wait(now, peer, inc)) this.ownership.connectionLost(now, peer, inc)
    this.flush(now)
  }

  /** The driver has a new connection from `peer`: if declared dead (it hung, a partition healed), it is told (evicted; it may rejoin). */
  peerConnected (now: number, peer: PeerId): void {
    this.now = now
    if (this.stateValue !== 'running' && this.stateValue !== 'leaving') return
    if (this.members.statusOf(peer) !== 'dead') return
    this.ownership.noticeDead(now, peer)
    this.flush(now)
  }

  /** Runs every deadline due at `now`. */
  handleTimeout (now: number): void {
    this.now = now
    for (let e = this.timers.popDue(now); e !== undefined; e = this.timers.popDue(now)) {
      if (this.stateValue === 'left' || this.stateValue === 'evicted') continue
      switch (e.kind) {
        case 'probe': this.probing.onTimer(now); break
        case 'reduce': this.reductions.onTimer(now, e.key); break
        case 'liveness': this.liveness.check(now); break
        case 'park': this.parkArmed = false; if (this.streams.tick(now)) this.armPark(); break
        case 'leave': this.checkLeft(true); break
        case 'claim': this.ownership.onClaimTimer(now); break
        case 'steady': this.probing.onSteadyTimer(now); break
        case 'tree': this.treeOutbox.onTimer(); break
        case 'ask': this.asks.onTimeout(now, e.key); break
        case 'suspect': { const inc = this.suspects.due(now, e.key)
          if (inc !== undefined && (this.stateValue === 'running' || this.stateValue === 'leaving')) this.ownership.connectionLost(now, e.key, inc); break }
        default: break
      }
    }
    this.flush(now)
  }

  // ---- joining and leaving -------------------------------------------------------------

  /** The contact's snapshot: this joining peer is a member now. */
  private onWelcome (now: number, from: PeerId, msg: FactsMessage): void {
    if (this.stateValue !== 'joining') return
    // Only the contact welcomes: another's answers an earlier incarnation's join (a rejoin elsewhere after a timeout).
    if (from !== this.joinAttempt?.contact) { this.reject('welcome-not-from-contact'); return }
    this.vnodes = msg.vnodeCount
    this.view = OwnershipMap.fromRecords(msg.vnodeCount, msg.records)
    for (const f of msg.members) this.members.apply(f)
    // An earlier incarnation died (the contact saw it alive until now: ownership-engine onJoin) or left: tree children may still point here (swarm-striped-8673).
    if (msg.members.some((f) => f.peer === this.self && f.status !== 'alive' && f.incarnation < this.incarnation)) this.fullChecksUntilMs = now + this.config.failureDetectionTimeoutMs
    this.members.apply({ peer: this.self, incarnation: this.incarnation, status: 'alive' })
    this.stateValue = 'running'
    this.ownership.announce.welcomed(now, from, { peer: this.self, incarnation: this.incarnation, status: 'alive' })
    for (const p of this.members.alive()) this.trees.ensureRoot(p)
    this.out.push({ type: 'joined' })
    this.probing.trigger(now)
    // Facts fanned out just before the others knew this peer (by peers that may not pass them on): ask another member too.
    const others = this.members.alive().filter((p) => p !== this.self && p !== from)
    if (others.length > 0) this.send(others[Math.floor(this.random() * others.length)] as PeerId, { t: 'sync' })
    for (const e of this.preJoin.drain()) this.handle(now, e.from, e.msg)
  }

  /** A contact that is leaving sent this joiner to `to` (overlay/join-attempt.ts). */
  private onJoinElsewhere (now: number, from: PeerId, to: PeerId): void {
    const r = this.stateValue === 'joining' && this.joinAttempt !== undefined ? this.joinAttempt.redirect(this.self, from, to) : 'join-elsewhere-not-joining'
    if (r === true) { this.send(to, (this.joinAttempt as JoinAttempt).message); this.flush(now) } else this.reject(r)
  }

  private checkLeft (timedOut: boolean): void {
    if (this.stateValue !== 'leaving') return
    const drained = this.streams.activeCount === 0 && this.ownership.handoffsPending === 0 && this.ownership.claimsPending === 0
    if (!drained && !timedOut) return
    this.stateValue = 'left'
    this.out.push({ type: 'left', drained })
  }

  // ---- probing, liveness, plumbing -----------------------------------------------------

  private armPark (): void {
    if (this.parkArmed) return
    this.parkArmed = true
    this.timers.add(this.now + this.config.parkRetryMs, 'park')
  }

  private send (to: PeerId, message: Message): void {
    if (to === this.self) { this.reject('send-to-self'); return } // Only crafted input leads here.
    this.stats.messagesOut++
    this.out.push({ type: 'send', to, message })
  }

  private fanout (msg: Message, except?: PeerId): void {
    for (const p of this.members.alive()) if (p !== this.self && p !== except) this.send(p, msg)
  }

  /**
   * Ends every input: tree operations go out batched per neighbour (overlay/tree-outbox.ts),
   * then the sends held for the end of the event; the liveness timer is armed if needed.
   */
  private flush (now: number): void {
    this.treeOutbox.flush(now)
    for (const o of this.deferred) this.out.push(o)
    if (this.deferred.length > 0) { this.stats.messagesOut += this.deferred.length; this.deferred = [] }
    this.liveness.arm(now, this.streams.awaiting || this.reductions.activeCount > 0)
  }

  private newId (): string { return `${this.self}/${this.incarnation}.${++this.seq}` }

  private reject (reason: string): void { this.stats.rejected[reason] = (this.stats.rejected[reason] ?? 0) + 1 }

  /** `s`, and with `room`, fewer than maxActiveTransfers collectives here (those held for a stripe plan too). */
  private expectState (s: CoreState, room = false): void {
    if (this.stateValue !== s) throw new NotRunningError(`this call needs state '${s}', the core is '${this.stateValue}'`)
    if (room && this.streams.roomCount(this.now) + this.asks.size >= this.config.maxActiveTransfers) throw new TooManyTransfersError(`${this.config.maxActiveTransfers} collectives are under way here (maxActiveTransfers)`)
  }
}
