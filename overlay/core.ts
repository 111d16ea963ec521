/**
 * The composed protocol core of one peer: membership, ownership, trees, probing, streams
 * (broadcast and point-to-point) and reductions. Sans-IO: inputs are method calls with the
 * current time, outputs are collected and taken with `takeOutputs()`; the driver keeps one
 * timer armed at `nextTimeoutAt()`. Randomness comes from the injected `random`.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { OwnershipMap, type OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import { initialAssignment, joinShare, mostLoaded, successorOf } from '../virtual-nodes/assignment.ts'
import { deliveredWithin } from '../virtual-nodes/handoff.ts'
import { TreeTable } from '../trees/tree-table.ts'
import { ProbeSchedule } from '../trees/probe-schedule.ts'
import type { TreeKind } from '../trees/tree-kind.ts'
import { resolveCoreConfig, type CoreConfig, type CoreInit } from './config.ts'
import { InvalidArgumentError, NotRunningError } from './errors.ts'
import { Membership, type MemberChange } from './membership.ts'
import type { FactsMessage, HandoffMessage, MemberFact, Message, ReduceStart, StreamMode, TreeOp } from './messages.ts'
import type { Output, OwnershipReason } from './outputs.ts'
import { OpRegistry, type CombineFn } from './reduce-ops.ts'
import { Reductions, type ContributeFn } from './reduction.ts'
import { Streams, type Transfer } from './streams.ts'
import { TimerQueue } from './timer-queue.ts'
import { ProbeRunner } from './probe-runner.ts'

/** How long a contact passes newly learnt facts on to a peer that joined through it. */
export const JOINER_FORWARD_MS = 30_000

/**
 * Version steps of ownership records. A hand-off or a crash take-over is a claim and
 * advances the version by CLAIM_VERSION_STEP; re-homing a record that names a peer already
 * gone (a leaver's successor that left too) advances it by ORPHAN_VERSION_STEP only. Peers
 * whose views differed re-home such records locally, each adding a little; the next real
 * claim by the actual owner still beats all of them.
 */
export const CLAIM_VERSION_STEP = 1000
export const ORPHAN_VERSION_STEP = 1

/** Joiners a contact passes new facts on to at most (the most recent ones). */
export const MAX_RECENT_JOINERS = 256

/** Orphan records remembered per assignee (rememberOrphan); older ones are forgotten. */
export const MAX_ORPHAN_RECORDS = 64

/** Messages a joining peer keeps while it waits for its contact's snapshot. */
export const MAX_PRE_JOIN_MESSAGES = 4096

/** The lifecycle of a core. */
export type CoreState = 'idle' | 'joining' | 'running' | 'leaving' | 'left' | 'evicted'

/** What a core is built from. */
export interface CoreParams {
  /** This peer's id. */
  readonly self: PeerId
  /** Uniform random numbers in [0,1): the only source of randomness. */
  readonly random: () => number
  /** The application's contribution to reductions, per set of owned virtual nodes. */
  readonly contribute?: ContributeFn
  /** Custom reduction operations by name. */
  readonly ops?: Readonly<Record<string, CombineFn>>
  readonly config?: CoreInit
}

/** Counters of one core. */
export interface CoreStats {
  rejected: Record<string, number>
  probes: number
  messagesOut: number
}

/** One peer's protocol core. */
export class TreecastCore {
  readonly self: PeerId
  readonly config: CoreConfig
  readonly members = new Membership()
  view: OwnershipMap = new OwnershipMap(0)
  readonly trees: TreeTable
  readonly streams: Streams
  readonly reductions: Reductions
  readonly stats: CoreStats = { rejected: {}, probes: 0, messagesOut: 0 }
  private readonly probe: ProbeRunner
  private readonly schedule: ProbeSchedule
  private readonly timers = new TimerQueue()
  private readonly ops = new OpRegistry()
  private readonly contributeFn: ContributeFn
  private readonly random: () => number
  private out: Output[] = []
  private treeOutbox = new Map<PeerId, TreeOp[]>()
  private owned = IntervalSet.EMPTY
  private vnodes = 0
  private seq = 0
  private incarnation = 0
  private stateValue: CoreState = 'idle'
  private now = 0
  private readonly lastHeard = new Map<PeerId, number>()
  private readonly pingSent = new Map<PeerId, number>()
  private livenessArmed = false
  private parkArmed = false
  private steadyArmed = false
  /** The probe in flight was started by steady probing, not by a membership change. */
  private steadyProbe = false
  private leaveTarget: PeerId | undefined
  /** Hand-offs sent and not yet acknowledged, by receiver (a leaver waits for them). */
  private readonly handoffsUnacked = new Map<PeerId, number>()
  /** Peers that joined through this one recently: facts learnt later are passed on to them. */
  private readonly recentJoiners = new Map<PeerId, number>()
  /** When each dead peer that spoke was last told it is dead (bounded like recentJoiners). */
  private readonly deadNotices = new Map<PeerId, number>()
  /** Orphan records this view assigned to other peers, by assignee (see rememberOrphan). */
  private readonly orphansTo = new Map<PeerId, OwnershipRecord[]>()
  /** Peers that left gracefully and whose connection has closed since (they forward nothing any more). */
  private readonly departed = new Set<PeerId>()
  /** Peers whose connection closed, with their incarnation, until the grace period ends. */
  private readonly suspects = new Map<PeerId, number>()
  /** Messages that arrived while joining, before the contact's snapshot. */
  private preJoin: Array<{ from: PeerId, msg: Message }> = []

  constructor (params: CoreParams) {
    this.self = params.self
    this.config = resolveCoreConfig(params.config)
    this.random = params.random
    this.contributeFn = params.contribute ?? ((_id, start) => new Float64Array(start.length))
    for (const [name, fn] of Object.entries(params.ops ?? {})) this.ops.register(name, fn)
    this.schedule = new ProbeSchedule(this.config.probeExtraCount)
    const viewOf = (): OwnershipMap => this.view
    this.trees = new TreeTable({
      self: this.self,
      owned: () => this.owned,
      isAlive: (p) => this.members.isAlive(p),
      sendOp: (to, op) => this.sendOp(to, op),
      parentChanged: (kind, root, parent) => this.treeChanged(kind, root, parent)
    }, this.config.lockTimeoutMs, this.config.tieTolerance)
    this.streams = new Streams({
      self: this.self,
      get view () { return viewOf() },
      owned: () => this.owned,
      isAlive: (p) => this.members.isAlive(p),
      reachable: (p) => this.members.isAlive(p) || (this.members.statusOf(p) === 'left' && !this.departed.has(p)),
      tree: (kind, root) => this.trees.get(kind, root),
      send: (to, m) => this.send(to, m),
      deliver: (t, v) => this.deliver(t, v),
      routed: (t, inc, fresh, fwd) => {
        if (t.reduce !== undefined) this.reductions.onRouted(this.now, t.id, t.origin, t.reduce, inc.from, fresh, fwd)
      },
      originDone: (t) => { if (t.reduce === undefined && t.mode !== 'direct') this.out.push({ type: 'broadcast-done', id: t.id }) },
      wantPark: () => this.armPark(),
      reject: (r) => this.reject(r),
      knowsOp: (op) => this.ops.has(op)
    }, this.config)
    this.reductions = new Reductions({
      self: this.self,
      get view () { return viewOf() },
      vnodeCount: () => this.vnodes,
      owned: () => this.owned,
      isAlive: (p) => this.members.isAlive(p),
      send: (to, m) => this.send(to, m),
      contribute: (id, start, v) => this.contributeFn(id, start, v),
      ops: this.ops,
      timeoutMs: () => this.reduceTimeoutMs(),
      setTimer: (at, id) => this.timers.add(at, 'reduce', id),
      reduced: (id, value, covered, startedAt) => this.out.push({ type: 'reduced', id, value, covered, startedAt }),
      failed: (id, missing) => this.out.push({ type: 'reduce-failed', id, missing }),
      reject: (r) => this.reject(r)
    }, this.config.reduceRetryMs, this.config.reduceMaxDurationMs)
    this.probe = new ProbeRunner({
      self: this.self,
      random: params.random,
      alive: () => this.members.alive(),
      send: (to, m) => this.send(to, m),
      setTimer: (at) => this.timers.add(at, 'probe'),
      entries: () => this.trees.probeEntries(),
      judged: (now, cand, rtt, bw, entries) => { this.trees.judge(now, cand, rtt, bw, entries) },
      finished: (now) => this.probeNext(now)
    }, this.config)
  }

  // ---- getters -------------------------------------------------------------------------

  get state (): CoreState { return this.stateValue }
  get ownedSet (): IntervalSet { return this.owned }
  get vnodeCount (): number { return this.vnodes }
  /** True while this peer probes because of a recent membership change (steady probes do not count). */
  get isProbing (): boolean { return this.schedule.isActive || (this.probe.inFlight && !this.steadyProbe) }
  get probesStarted (): number { return this.probe.started }

  /** Takes the outputs produced since the last call. */
  takeOutputs (): Output[] {
    const o = this.out
    this.out = []
    return o
  }

  /** When the driver should call `handleTimeout` next. */
  nextTimeoutAt (): number | undefined { return this.timers.nextAt() }

  // ---- lifecycle -----------------------------------------------------------------------

  /**
   * Starts as one of a known set of founding members (all call this with the same list):
   * the virtual nodes are spread evenly over `members` in the given order.
   */
  bootstrap (now: number, vnodeCount: number, members: readonly PeerId[]): void {
    this.expectState('idle')
    if (!members.includes(this.self)) throw new InvalidArgumentError('bootstrap members must include this peer')
    if (!Number.isInteger(vnodeCount) || vnodeCount < 1) throw new InvalidArgumentError(`vnodeCount must be an integer >= 1, got ${vnodeCount}`)
    this.now = now
    this.vnodes = vnodeCount
    const assignment = initialAssignment(vnodeCount, members)
    this.view = OwnershipMap.fromRecords(vnodeCount, [...assignment].map(([owner, ranges]) => ({ ranges, owner, version: 0, ownerIncarnation: 0 })))
    for (const m of members) this.members.apply({ peer: m, incarnation: 0, status: 'alive' })
    this.stateValue = 'running'
    for (const m of members) this.trees.ensureRoot(m)
    this.setOwned(this.view.rangesOf(this.self), 'initial')
    if (members.length > 1) this.triggerProbing(now)
    this.flush(now)
  }

  /** Joins an overlay through `contact`, optionally asking for exact ranges. */
  join (now: number, contact: PeerId, opts: { want?: IntervalSet, incarnation?: number } = {}): void {
    this.expectState('idle')
    if (contact === this.self) throw new InvalidArgumentError('cannot join through oneself')
    this.now = now
    this.incarnation = opts.incarnation ?? 0
    this.stateValue = 'joining'
    this.send(contact, { t: 'join', incarnation: this.incarnation, ...(opts.want !== undefined ? { want: opts.want } : {}) })
    this.flush(now)
  }

  /** Leaves gracefully: hands everything to the successor, tells everyone, drains, then outputs `left`. */
  leave (now: number): void {
    this.expectState('running')
    this.now = now
    this.stateValue = 'leaving'
    this.schedule.stop()
    this.leaveTarget = successorOf(this.self, this.members.alive())
    if (this.leaveTarget !== undefined) this.handoffTo(this.leaveTarget, this.owned)
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
    this.expectState('running')
    this.now = now
    const chunks = this.chunk(payload)
    const totalBytes = chunks.reduce((n, c) => n + c.length, 0)
    const mode: StreamMode = opts.mode === undefined || opts.mode === 'auto' ? (totalBytes >= this.config.switchPointBytes ? 'bw' : 'lat') : opts.mode
    const id = this.newId()
    this.streams.originate(now, { id, origin: this.self, mode, chunkCount: chunks.length, totalBytes }, IntervalSet.range(0, this.vnodes), chunks)
    this.flush(now)
    return id
  }

  /** Sends a message to the owner of `vnode`. Returns the message id. */
  sendTo (now: number, vnode: number, payload: Uint8Array): string {
    this.expectState('running')
    if (!Number.isInteger(vnode) || vnode < 0 || vnode >= this.vnodes) throw new InvalidArgumentError(`virtual node ${vnode} is outside 0..${this.vnodes - 1}`)
    this.now = now
    const chunks = this.chunk(payload)
    const id = this.newId()
    this.streams.originate(now, { id, origin: this.self, mode: 'direct', chunkCount: chunks.length, totalBytes: payload.length }, IntervalSet.of(vnode), chunks)
    this.flush(now)
    return id
  }

  /** Starts a reduction rooted at this peer; the result is output as `reduced`. */
  reduce (now: number, opts: { op: string, length: number }): string {
    this.expectState('running')
    if (!this.ops.has(opts.op)) throw new InvalidArgumentError(`unknown reduction operation '${opts.op}'`)
    if (!Number.isInteger(opts.length) || opts.length < 1 || opts.length > this.config.maxReduceLength) throw new InvalidArgumentError(`length must be an integer in 1..${this.config.maxReduceLength}`)
    this.now = now
    const id = this.newId()
    const reduce: ReduceStart = { op: opts.op, rootVnode: this.owned.min ?? 0, length: opts.length }
    this.streams.originate(now, { id, origin: this.self, mode: 'lat', chunkCount: 1, totalBytes: 0, reduce }, IntervalSet.range(0, this.vnodes), [new Uint8Array(0)])
    this.flush(now)
    return id
  }

  // ---- inputs --------------------------------------------------------------------------

  /** A message from `from` (already decoded and validated). */
  handle (now: number, from: PeerId, msg: Message): void {
    this.now = now
    if (this.stateValue === 'left' || this.stateValue === 'evicted' || this.stateValue === 'idle') return
    if (this.stateValue !== 'joining' && msg.t !== 'join' && this.members.statusOf(from) === 'dead') {
      // A peer declared dead speaks (it hung, or a partition healed): its messages belong to
      // a dead incarnation and are dropped; it is told, so it stops (evicted) and may rejoin.
      this.reject('from-dead-member')
      this.noticeDead(from)
      this.flush(now)
      return
    }
    this.lastHeard.set(from, now)
    this.pingSent.delete(from)
    if (this.stateValue === 'joining' && !(msg.t === 'facts' && msg.welcome)) {
      // Arrived before the contact's snapshot (a hand-off can overtake it): keep for after.
      if (this.preJoin.length < MAX_PRE_JOIN_MESSAGES) this.preJoin.push({ from, msg })
      else this.reject('pre-join-overflow')
      return
    }
    switch (msg.t) {
      case 'join': this.onJoin(from, msg.incarnation, msg.want); break
      case 'sync': this.send(from, { t: 'facts', vnodeCount: this.vnodes, members: this.members.facts(), records: this.view.records(), welcome: false }); break
      case 'facts': this.onFacts(now, from, msg); break
      case 'give':
        if (this.members.isAlive(msg.to)) this.handoffTo(msg.to, msg.ranges)
        else this.reject('give-to-non-member')
        break
      case 'handoff': this.onHandoff(from, msg); break
      case 'handoff-ack': {
        const n = (this.handoffsUnacked.get(from) ?? 0) - 1
        if (n > 0) this.handoffsUnacked.set(from, n)
        else this.handoffsUnacked.delete(from)
        this.checkLeft(false)
        break
      }
      case 'ping': this.send(from, { t: 'pong', nonce: msg.nonce }); break
      case 'pong': this.probe.onPong(now, from, msg.nonce); break
      case 'probe-req': this.send(from, { t: 'probe-rep', nonce: msg.nonce, trees: this.trees.probeEntries(), padding: this.config.probeBytes }); break
      case 'probe-rep': this.stats.probes++; this.probe.onReply(now, from, msg); break
      case 'tree': for (const op of msg.ops) this.trees.handleOp(now, from, op); break
      case 'chunk': this.streams.onChunk(now, from, msg); break
      case 'ack': this.streams.onAck(from, msg.stream); break
      case 'partial': this.reductions.onPartial(now, msg); break
      case 'pull':
        if (this.ops.has(msg.op) && msg.length <= this.config.maxReduceLength) this.reductions.onPull(msg, this.config.maxHops)
        else this.reject('bad-pull')
        break
    }
    this.checkLeft(false)
    this.flush(now)
  }

  /**
   * The driver lost its connection to `peer` (closed, reset, or the process is gone).
   * `incarnation`, when the driver knows it, keeps a late notice about an old incarnation
   * from killing a restarted peer.
   */
  peerDown (now: number, peer: PeerId, incarnation?: number): void {
    this.now = now
    if (this.stateValue !== 'running' && this.stateValue !== 'leaving') return
    if (incarnation !== undefined && incarnation < this.members.incarnationOf(peer)) return
    const inc = this.members.incarnationOf(peer)
    if (this.members.statusOf(peer) === 'alive' && this.config.suspectGraceMs > 0) {
      // A closed connection may be a graceful leave whose facts are still on their way
      // (through a contact): wait a little before declaring a crash.
      if (!this.suspects.has(peer)) {
        this.suspects.set(peer, inc)
        this.timers.add(now + this.config.suspectGraceMs, 'suspect', peer)
      }
    } else {
      this.connectionLost(peer, inc)
    }
    this.flush(now)
  }

  /**
   * The driver has a new connection from `peer`. If `peer` was declared dead (it hung, or
   * a partition healed) it is told, so it stops (evicted) and can rejoin.
   */
  peerConnected (now: number, peer: PeerId): void {
    this.now = now
    if (this.stateValue !== 'running' && this.stateValue !== 'leaving') return
    if (this.members.statusOf(peer) !== 'dead') return
    this.noticeDead(peer)
    this.flush(now)
  }

  private connectionLost (peer: PeerId, incarnation: number): void {
    if (incarnation < this.members.incarnationOf(peer)) return
    const status = this.members.statusOf(peer)
    if (status === 'alive') this.declareDead(peer)
    else if (status === 'left') {
      this.departed.add(peer)
      // A hand-off sent to it after it left is lost with it (its ranges are re-homed below).
      if (this.handoffsUnacked.delete(peer)) this.checkLeft(false)
      // Anything still recorded as the leaver's (a hand-off that reached it after it left)
      // would have no owner: the successor rule takes it, as after a crash. Before the
      // streams re-route what the leaver had not acknowledged, so they route it there.
      this.takeOver(peer, ORPHAN_VERSION_STEP)
      this.streams.peerGone(peer)
      this.trees.peerGone(peer)
    }
  }

  /** Runs every deadline due at `now`. */
  handleTimeout (now: number): void {
    this.now = now
    for (let e = this.timers.popDue(now); e !== undefined; e = this.timers.popDue(now)) {
      if (this.stateValue === 'left' || this.stateValue === 'evicted') continue
      switch (e.kind) {
        case 'probe': this.probe.onTimer(now); break
        case 'reduce': this.reductions.onTimer(now, e.key); break
        case 'liveness': this.livenessArmed = false; this.checkLiveness(now); break
        case 'park': this.parkArmed = false; if (this.streams.tick(now)) this.armPark(); break
        case 'leave': this.checkLeft(true); break
        case 'steady':
          this.steadyArmed = false
          if (this.stateValue === 'running' && !this.probe.inFlight && !this.schedule.isActive) {
            this.steadyProbe = true
            this.probe.start(now)
          }
          break
        case 'suspect': {
          const inc = this.suspects.get(e.key)
          this.suspects.delete(e.key)
          if (inc !== undefined && (this.stateValue === 'running' || this.stateValue === 'leaving')) this.connectionLost(e.key, inc)
          break
        }
        default: break
      }
    }
    this.flush(now)
  }

  // ---- membership and ownership --------------------------------------------------------

  private onJoin (joiner: PeerId, incarnation: number, want: IntervalSet | undefined): void {
    if (this.stateValue !== 'running') { this.reject('join-while-not-running'); return }
    const fact: MemberFact = { peer: joiner, incarnation, status: 'alive' }
    const change = this.members.apply(fact)
    if (change === undefined && !this.members.isAlive(joiner)) { this.reject('stale-join'); return }
    this.fanout({ t: 'facts', vnodeCount: this.vnodes, members: [fact], records: [], welcome: false }, joiner)
    this.recentJoiners.set(joiner, this.now + JOINER_FORWARD_MS)
    if (this.recentJoiners.size > MAX_RECENT_JOINERS) {
      const oldest = this.recentJoiners.keys().next().value
      if (oldest !== undefined) this.recentJoiners.delete(oldest)
    }
    // Before the snapshot: a restarted peer's old ranges must show as taken over in it.
    if (change !== undefined) this.memberChanged(change)
    this.send(joiner, { t: 'facts', vnodeCount: this.vnodes, members: this.members.facts(), records: this.view.records(), welcome: true })
    if (want !== undefined && !want.isEmpty) {
      for (const [owner, part] of this.view.partition(want.intersection(IntervalSet.range(0, this.vnodes)))) {
        if (owner === this.self) this.handoffTo(joiner, part)
        else if (this.members.isAlive(owner) && owner !== joiner) this.send(owner, { t: 'give', to: joiner, ranges: part })
      }
      return
    }
    if (this.config.joinPolicy === 'most-loaded') {
      const donor = mostLoaded(this.view.loads(), new Set(this.members.alive().filter((p) => p !== joiner)))
      if (donor !== undefined && donor !== this.self) {
        this.send(donor, { t: 'give', to: joiner, ranges: joinShare(this.view.rangesOf(donor)) })
        return
      }
    }
    this.handoffTo(joiner, joinShare(this.owned))
  }

  private onFacts (now: number, from: PeerId, msg: FactsMessage): void {
    if (msg.welcome) {
      if (this.stateValue !== 'joining') return
      this.vnodes = msg.vnodeCount
      this.view = OwnershipMap.fromRecords(msg.vnodeCount, msg.records)
      for (const f of msg.members) this.members.apply(f)
      this.members.apply({ peer: this.self, incarnation: this.incarnation, status: 'alive' })
      this.stateValue = 'running'
      for (const p of this.members.alive()) this.trees.ensureRoot(p)
      this.out.push({ type: 'joined' })
      this.triggerProbing(now)
      // Facts fanned out just before the others knew this peer, by peers that may not pass
      // them on (its contact may even be leaving): ask another member for its view too.
      const others = this.members.alive().filter((p) => p !== this.self && p !== from)
      if (others.length > 0) this.send(others[Math.floor(this.random() * others.length)] as PeerId, { t: 'sync' })
      const early = this.preJoin
      this.preJoin = []
      for (const e of early) this.handle(now, e.from, e.msg)
      return
    }
    let changed = false
    for (const rec of msg.records) if (this.applyRecord(rec)) changed = true
    for (const f of msg.members) {
      if (f.peer === this.self && f.status !== 'alive' && f.incarnation === this.incarnation && this.stateValue === 'running') {
        this.stateValue = 'evicted'
        this.out.push({ type: 'evicted' })
        return
      }
      const change = this.members.apply(f)
      if (change !== undefined) { changed = true; this.memberChanged(change) }
    }
    if (changed) this.forwardToJoiners(from, msg)
  }

  /**
   * A joiner's snapshot may miss facts its contact learns just after (a concurrent join, a
   * crash): the contact passes such facts on for a while.
   */
  private forwardToJoiners (from: PeerId, msg: FactsMessage): void {
    for (const [joiner, until] of this.recentJoiners) {
      if (until < this.now || !this.members.isAlive(joiner)) { this.recentJoiners.delete(joiner); continue }
      if (joiner !== from) this.send(joiner, msg)
    }
  }

  private applyRecord (rec: OwnershipRecord): boolean {
    if (rec.ownerIncarnation !== undefined && rec.ownerIncarnation > this.members.incarnationOf(rec.owner) && rec.owner !== this.self) {
      // A claim by an incarnation newer than we know: that incarnation is alive.
      const change = this.members.apply({ peer: rec.owner, incarnation: rec.ownerIncarnation, status: 'alive' })
      if (change !== undefined) this.memberChanged(change)
    }
    const won = this.view.apply(rec)
    if (won.isEmpty) return false
    const status = this.members.statusOf(rec.owner)
    if ((status === 'left' || status === 'dead') && (rec.ownerIncarnation === undefined || rec.ownerIncarnation <= this.members.incarnationOf(rec.owner))) {
      // Handed to a peer that is already gone (a leaver's successor that left or crashed
      // unnoticed): nobody would ever own it. The successor rule takes it, everywhere alike.
      this.takeOver(rec.owner, ORPHAN_VERSION_STEP)
      return true
    }
    if (rec.owner === this.self) return true
    const lost = won.intersection(this.owned)
    if (lost.isEmpty) return true
    // A newer (or tie-winning) claim took ranges this peer holds: pass their state on.
    this.setOwned(this.owned.difference(lost), 'conflict')
    const record: OwnershipRecord = { ranges: lost, owner: rec.owner, version: rec.version, ...(rec.ownerIncarnation !== undefined ? { ownerIncarnation: rec.ownerIncarnation } : {}) }
    this.send(rec.owner, { t: 'handoff', record, delivered: deliveredWithin(new Map(this.streams.delivered.entries()), lost) })
    return true
  }

  private memberChanged (c: MemberChange): void {
    if (c.before === 'alive' && c.after === 'alive') {
      // A newer incarnation of a peer we still held alive: its previous incarnation is gone
      // (crashed and restarted before anyone noticed). Handle that death first.
      this.memberChanged({ peer: c.peer, before: 'alive', after: 'dead', incarnation: c.incarnation - 1 })
      this.memberChanged({ peer: c.peer, before: 'dead', after: 'alive', incarnation: c.incarnation })
      return
    }
    this.out.push({ type: 'member', peer: c.peer, status: c.after })
    if (c.after === 'alive') {
      this.departed.delete(c.peer)
      this.orphansTo.delete(c.peer)
      this.trees.ensureRoot(c.peer)
      if (this.stateValue === 'running') this.triggerProbing(this.now)
      return
    }
    this.trees.removeRoot(c.peer)
    if (c.after === 'left') this.rehomeOrphansOf(c.peer)
    else this.orphansTo.delete(c.peer)
    // A hand-off to a peer that has gone will not be acknowledged; its ranges are re-homed
    // by the successor rule (applyRecord), so a leaver need not wait for it.
    if (this.handoffsUnacked.delete(c.peer)) this.checkLeft(false)
    const wasParent = this.trees.peerGone(c.peer)
    if (c.after === 'dead') {
      this.takeOver(c.peer, CLAIM_VERSION_STEP)
      this.streams.peerGone(c.peer)
    }
    if (wasParent && this.stateValue === 'running') this.triggerProbing(this.now)
  }

  /**
   * Deterministic take-over of what `dead` owned: every survivor computes the same record
   * when views agree. `step` is CLAIM_VERSION_STEP after a crash, ORPHAN_VERSION_STEP when
   * a record names a peer already gone (see the constants).
   */
  private takeOver (dead: PeerId, step: number, only?: IntervalSet): void {
    const ranges = only ?? this.view.rangesOf(dead)
    if (ranges.isEmpty) return
    const succ = successorOf(dead, this.members.alive())
    if (succ === undefined) return
    const record: OwnershipRecord = { ranges, owner: succ, version: this.view.maxVersionIn(ranges) + step, ownerIncarnation: this.members.incarnationOf(succ) }
    this.view.apply(record)
    if (succ !== this.self && step === ORPHAN_VERSION_STEP) this.rememberOrphan(succ, record)
    if (succ === this.self) {
      this.setOwned(this.owned.union(ranges), 'takeover')
      // Every survivor computes the same record, unless views differ (concurrent restarts):
      // the new owner states its claim, so that differing views converge.
      this.fanout({ t: 'facts', vnodeCount: this.vnodes, members: [], records: [record], welcome: false })
    }
  }

  /**
   * An orphan re-homed (successor rule) to another peer: nobody tells that peer, which
   * claims nothing. Views that disagree on who is alive pick different successors, and
   * the one this view picked may be leaving already (its departure was not known here
   * yet). Remembered so that when it turns out to be gone the orphan is re-homed again.
   */
  private rememberOrphan (succ: PeerId, record: OwnershipRecord): void {
    let list = this.orphansTo.get(succ)
    if (list === undefined) { list = []; this.orphansTo.set(succ, list) }
    list.push(record)
    if (list.length > MAX_ORPHAN_RECORDS) list.shift()
  }

  /**
   * `peer` left: orphans this view re-homed to it and that nothing has claimed since
   * (the record is still exactly ours) would never be claimed. A leaving peer never takes
   * an orphan over (its own view has it gone already) and forwards what it is sent for it
   * back along its view, so without this, data for these virtual nodes would bounce
   * between it and the peers whose view names it until it disconnects (the leave timeout,
   * when it waits for that very data). Re-homed by the successor rule among the members
   * alive now; claims by the actual owners (hand-offs, crash take-overs) beat it.
   */
  private rehomeOrphansOf (peer: PeerId): void {
    const list = this.orphansTo.get(peer)
    if (list === undefined) return
    this.orphansTo.delete(peer)
    for (const rec of list) {
      const still = this.view.partition(rec.ranges).get(peer)
      if (still === undefined || still.isEmpty || this.view.maxVersionIn(still) !== rec.version) continue
      this.takeOver(peer, ORPHAN_VERSION_STEP, still)
    }
  }

  private declareDead (peer: PeerId): void {
    const fact: MemberFact = { peer, incarnation: this.members.incarnationOf(peer), status: 'dead' }
    const change = this.members.apply(fact)
    if (change === undefined) return
    const facts: FactsMessage = { t: 'facts', vnodeCount: this.vnodes, members: [fact], records: [], welcome: false }
    this.fanout(facts)
    // If the suspect is alive after all, it learns it was declared dead and stops (evicted).
    this.send(peer, facts)
    this.memberChanged(change)
  }

  /** Tells a peer declared dead that it was, at most once per second per peer. */
  private noticeDead (peer: PeerId): void {
    const last = this.deadNotices.get(peer)
    if (last !== undefined && this.now - last < 1000) return
    this.deadNotices.delete(peer)
    this.deadNotices.set(peer, this.now)
    if (this.deadNotices.size > MAX_RECENT_JOINERS) this.deadNotices.delete(this.deadNotices.keys().next().value as PeerId)
    const fact: MemberFact = { peer, incarnation: this.members.incarnationOf(peer), status: 'dead' }
    this.send(peer, { t: 'facts', vnodeCount: this.vnodes, members: [fact], records: [], welcome: false })
  }

  private handoffTo (to: PeerId, ranges: IntervalSet): void {
    const give = ranges.intersection(this.owned)
    if (give.isEmpty || to === this.self) return
    const record: OwnershipRecord = { ranges: give, owner: to, version: this.view.maxVersionIn(give) + CLAIM_VERSION_STEP, ownerIncarnation: this.members.incarnationOf(to) }
    this.view.apply(record)
    const msg: HandoffMessage = { t: 'handoff', record, delivered: deliveredWithin(new Map(this.streams.delivered.entries()), give) }
    this.send(to, msg)
    this.handoffsUnacked.set(to, (this.handoffsUnacked.get(to) ?? 0) + 1)
    this.fanout({ t: 'facts', vnodeCount: this.vnodes, members: [], records: [record], welcome: false }, to)
    this.setOwned(this.owned.difference(give), 'handoff-out')
  }

  private onHandoff (from: PeerId, msg: HandoffMessage): void {
    this.view.apply(msg.record)
    const mine = this.view.partition(msg.record.ranges).get(this.self) ?? IntervalSet.EMPTY
    const gained = mine.difference(this.owned)
    for (const d of msg.delivered) {
      const part = d.vnodes.intersection(gained)
      if (!part.isEmpty) this.streams.delivered.set(d.streamId, this.streams.delivered.get(d.streamId).union(part))
    }
    this.send(from, { t: 'handoff-ack', version: msg.record.version, ranges: msg.record.ranges })
    if (this.stateValue === 'leaving' && !gained.isEmpty) {
      // Passed on at once, to a successor alive now: the first one may have left since.
      if (this.leaveTarget === undefined || !this.members.isAlive(this.leaveTarget)) this.leaveTarget = successorOf(this.self, this.members.alive())
      if (this.leaveTarget !== undefined) {
        this.setOwned(this.owned.union(gained), 'handoff-in')
        this.handoffTo(this.leaveTarget, gained)
        return
      }
    }
    if (!gained.isEmpty) this.setOwned(this.owned.union(gained), 'handoff-in')
  }

  private setOwned (next: IntervalSet, reason: OwnershipReason): void {
    const added = next.difference(this.owned)
    const removed = this.owned.difference(next)
    if (added.isEmpty && removed.isEmpty && reason !== 'initial') return
    this.owned = next
    this.out.push({ type: 'ownership', owned: next, added, removed, reason })
    this.trees.ownedChanged()
    this.streams.ownershipChanged()
  }

  private checkLeft (timedOut: boolean): void {
    if (this.stateValue !== 'leaving') return
    const drained = this.streams.activeCount === 0 && this.handoffsUnacked.size === 0
    if (!drained && !timedOut) return
    this.stateValue = 'left'
    this.out.push({ type: 'left', drained })
  }

  // ---- probing, liveness, plumbing -----------------------------------------------------

  private triggerProbing (now: number): void {
    this.schedule.trigger()
    if (!this.probe.inFlight) this.probeNext(now)
  }

  private probeNext (now: number): void {
    this.steadyProbe = false
    if (this.stateValue !== 'running') return
    if (this.schedule.next(this.trees.parentlessCount()) === 'probe') this.probe.start(now)
    else this.armSteady(now)
  }

  /** With steady probing on, one probe per interval while the schedule is idle. */
  private armSteady (now: number): void {
    if (this.config.steadyProbeIntervalMs <= 0 || this.steadyArmed) return
    this.steadyArmed = true
    this.timers.add(now + this.config.steadyProbeIntervalMs, 'steady')
  }

  private reduceTimeoutMs (): number {
    return Math.max(this.config.reduceTimeoutMinMs, this.config.reduceTimeoutFactor * this.trees.maxDistMs())
  }

  private checkLiveness (now: number): void {
    const timeout = this.config.failureDetectionTimeoutMs
    const awaited = this.streams.awaitedPeers()
    for (const peer of awaited) {
      const heard = this.lastHeard.get(peer)
      if (heard === undefined) { this.lastHeard.set(peer, now); continue }
      if (now - heard <= timeout) continue
      const pinged = this.pingSent.get(peer)
      if (pinged === undefined) { this.pingSent.set(peer, now); this.send(peer, { t: 'ping', nonce: 0 }) } else if (now - pinged > timeout) this.declareDead(peer)
    }
  }

  private treeChanged (kind: TreeKind, root: PeerId, parent: PeerId | null): void {
    this.out.push({ type: 'tree', kind, root, parent })
  }

  private deliver (t: Transfer, vnodes: IntervalSet): void {
    if (t.reduce !== undefined) return
    this.out.push({ type: 'deliver', id: t.id, origin: t.origin, mode: t.mode, vnodes, chunks: t.chunks as Uint8Array[], totalBytes: t.totalBytes })
  }

  private armPark (): void {
    if (this.parkArmed) return
    this.parkArmed = true
    this.timers.add(this.now + this.config.parkRetryMs, 'park')
  }

  private send (to: PeerId, message: Message): void {
    this.stats.messagesOut++
    this.out.push({ type: 'send', to, message })
  }

  private sendOp (to: PeerId, op: TreeOp): void {
    let list = this.treeOutbox.get(to)
    if (list === undefined) { list = []; this.treeOutbox.set(to, list) }
    list.push(op)
  }

  private fanout (msg: Message, except?: PeerId): void {
    for (const p of this.members.alive()) if (p !== this.self && p !== except) this.send(p, msg)
  }

  /** Ends every input: batched tree updates go out, the liveness timer is armed if needed. */
  private flush (now: number): void {
    this.trees.flush()
    const box = this.treeOutbox
    this.treeOutbox = new Map()
    for (const [to, ops] of box) {
      if (to === this.self) { for (const op of ops) this.trees.handleOp(now, to, op); continue }
      this.send(to, { t: 'tree', ops })
    }
    if (this.treeOutbox.size > 0) this.flush(now)
    if (!this.livenessArmed && this.streams.awaitedPeers().size > 0) {
      this.livenessArmed = true
      this.timers.add(now + this.config.failureDetectionTimeoutMs / 2, 'liveness')
    }
  }

  private chunk (payload: Uint8Array | readonly Uint8Array[]): Uint8Array[] {
    if (Array.isArray(payload)) {
      const list = payload as readonly Uint8Array[]
      if (list.length === 0) return [new Uint8Array(0)]
      const total = list.reduce((n, c) => n + c.length, 0)
      if (total > this.config.maxPayloadBytes) throw new InvalidArgumentError(`payload of ${total} bytes exceeds maxPayloadBytes ${this.config.maxPayloadBytes}`)
      return [...list]
    }
    const bytes = payload as Uint8Array
    if (bytes.length > this.config.maxPayloadBytes) throw new InvalidArgumentError(`payload of ${bytes.length} bytes exceeds maxPayloadBytes ${this.config.maxPayloadBytes}`)
    const out: Uint8Array[] = []
    for (let i = 0; i < bytes.length; i += this.config.chunkBytes) out.push(bytes.subarray(i, i + this.config.chunkBytes))
    return out.length === 0 ? [bytes] : out
  }

  private newId (): string {
    return `${this.self}/${this.incarnation}.${++this.seq}`
  }

  private reject (reason: string): void {
    this.stats.rejected[reason] = (this.stats.rejected[reason] ?? 0) + 1
  }

  private expectState (s: CoreState): void {
    if (this.stateValue !== s) throw new NotRunningError(`this call needs state '${s}', the core is '${this.stateValue}'`)
  }
}
