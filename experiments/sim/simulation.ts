/**
 * The deterministic discrete-event simulator: the same protocol core as the real node,
 * driven in virtual time over the modelled network. A run is a pure function of its
 * scenario and seed; the invariant checker watches every event.
 */
import { IntervalSet } from '../../virtual-nodes/interval-set.ts'
import { TreecastCore } from '../../overlay/core.ts'
import { InvalidArgumentError } from '../../overlay/errors.ts'
import type { Message } from '../../overlay/messages.ts'
import type { Output } from '../../overlay/outputs.ts'
import { decodeMessage, encodeMessage, wireSize } from '../../overlay/codec.ts'
import { EventQueue } from './event-queue.ts'
import { Network, resolveTopology, type Topology } from './network.ts'
import { peerName } from './topology.ts'
import { Rng } from './rng.ts'
import { Checker } from './checker.ts'
import { contribute } from './ground-truth.ts'
import { InvalidScenarioError, namedRoots, nextRepeat, parseScenario, type Action, type PeerSelector, type Scenario } from './scenario.ts'
import { isSendPayload, sendPayload, type SendTrack } from './sends.ts'
import { buildReport, type BcastTrack, type RedTrack, type ReportInput, type SimReport } from './report.ts'
import { Stability } from './stability.ts'
import { StreamLanes } from './lanes.ts'
import { CoreFigures } from './core-figures.ts'
import { ContactSet } from './contact-set.ts'
import { selectPeers } from './select.ts'
import { StreamTraffic } from './stream-traffic.ts'
import { arrivalTimes, groundTruth, matchesTruth, treeShape, type TreeShape } from './analysis.ts'
import { BUILTIN_OPS } from '../../overlay/reduce-ops.ts'
import { isTreeRoot } from '../../overlay/tree-roots.ts'
import { resolveCoreConfig } from '../../overlay/config.ts'
import { SharedStart } from '../../overlay/shared-start.ts'
import type { Arrival, Ev, SimPeer } from './sim-peer.ts'

export { peerName }

/** One simulated run. */
export class Simulation {
  readonly topology: Topology
  protected readonly queue = new EventQueue<Ev>()
  protected readonly net: Network<Ev>
  private readonly rng: Rng
  protected readonly peers: SimPeer[] = []
  protected readonly byName = new Map<string, number>()
  protected readonly checker: Checker
  protected now = 0
  protected readonly vnodes: number
  protected readonly bcasts = new Map<string, BcastTrack>()
  protected readonly reds = new Map<string, RedTrack>()
  private readonly sends = new Map<string, SendTrack>()
  protected traffic = new StreamTraffic(this.bcasts)
  private readonly lanes = new StreamLanes()
  protected running = 0
  protected readonly stability = new Stability()
  private readonly protectedRoots = new Set<number>()
  protected readonly initial: number
  protected leavesTimedOut = 0
  protected joinsFailed = 0
  /** Reductions started by the schedule (a collective's id counts them, the same in every partition of a run on threads). */
  private reductionsStarted = 0
  /** Probes and rejected input of the cores that are gone (left, crashed). */
  protected readonly goneFigures = new CoreFigures()

  /** Optional trace of ownership, membership and lifecycle events (debugging). */
  trace: ((line: string) => void) | null = null

  /** @throws InvalidScenarioError when the scenario is not valid (see parseScenario) */
  constructor (readonly scenario: Scenario, readonly seed: number = scenario.seed) {
    parseScenario(scenario)
    this.topology = resolveTopology(scenario.topology)
    this.rng = new Rng(seed)
    this.net = new Network<Ev>(this.topology, (t, ev) => { this.queue.push(t, ev) })
    for (let i = 0; i < this.topology.peerCount; i++) {
      const name = peerName(i)
      this.peers.push({ index: i, name, core: null, status: 'off', timerAt: Infinity, connectedTrees: 0, knownAlive: 0, counted: false, countedRoot: false, probing: false, leaving: false, contacts: new ContactSet(this.topology.peerCount), lastOwned: IntervalSet.EMPTY, rejoinWant: IntervalSet.EMPTY, incarnation: 0, refused: new Set() })
      this.byName.set(name, i)
    }
    this.initial = scenario.initialPeers ?? this.topology.peerCount
    this.vnodes = scenario.vnodes ?? this.initial
    this.checker = new Checker(this.vnodes, (p) => this.isLive(p), () => this.now,
      (v) => this.peers.filter((q) => q.core !== null && q.lastOwned.has(v)).map((q) => q.index))
    for (const name of namedRoots(scenario.schedule)) this.protectedRoots.add(this.byName.get(name) as number)
  }

  /** Runs the whole scenario and returns its report; `progress` is told the virtual time now and then (every 2^16 events; the run is the same). */
  run (progress?: (simulatedMs: number, untilMs: number) => void): SimReport {
    const until = this.scenario.until
    const hardStop = until + (this.scenario.drainMs ?? 30_000)
    try {
      this.begin()
      for (let n = 1; ; n++) {
        if (progress !== undefined && (n & 0xffff) === 0) progress(this.now, until)
        const t = this.queue.peekTime()
        if (t === undefined || (t > until && (t > hardStop || this.quiet()))) break
        this.now = t
        this.dispatch(this.queue.popItem())
      }
    } catch (err) {
      if (err instanceof InvalidScenarioError) throw err
      // A run that throws (a bug) says how to replay it, as one that breaks an invariant does.
      throw new Error(`simulation of ${this.scenario.name}, seed ${this.seed}, threw at ${this.now} ms of virtual time: ${String(err)}`, { cause: err })
    }
    this.now = Math.max(this.now, until)
    return buildReport(this.reportInput())
  }

  /** Starts the founders (`owns`: those this simulation runs; the others only count as running) and queues the schedule. */
  protected begin (owns: (peer: number) => boolean = () => true): void {
    const founders = this.peers.slice(0, this.initial).map((p) => p.name)
    const start = new SharedStart(this.vnodes, founders) // one for all: each copies what it changes
    for (let i = 0; i < this.initial; i++) {
      if (owns(i)) this.startPeer(i, (core) => core.bootstrap(0, this.vnodes, founders, start))
      else { (this.peers[i] as SimPeer).status = 'running'; this.running++ }
    }
    for (const a of this.scenario.schedule) this.queue.push(a.at, { k: 'action', action: a })
  }

  /** Every broadcast delivered everywhere and acknowledged at its root (if it runs), every reduction ended. */
  protected quiet (): boolean {
    for (const b of this.bcasts.values()) {
      if (this.checker.deliveries.get(b.id)?.delivered !== this.vnodes) return false
      if (b.doneAtRootMs === null && this.peers[this.byName.get(b.root) ?? -1]?.status === 'running') return false
    }
    for (const r of this.reds.values()) if (r.endMs === null) return false
    for (const m of this.sends.values()) if (Number.isNaN(this.checker.deliveries.get(m.id)?.firstMs[m.vnode] ?? NaN)) return false
    return true
  }

  protected dispatch (ev: Ev): void {
    if (typeof ev === 'function') { ev(); return }
    switch (ev.k) {
      case 'msg': this.arrive(ev); return
      case 'timer': {
        const p = this.peers[ev.peer]
        if (p === undefined || p.core === null || p.timerAt !== ev.at) return
        p.timerAt = Infinity
        p.core.handleTimeout(this.now)
        this.after(p)
        return
      }
      case 'down': {
        const p = this.peers[ev.peer]
        if (p?.core == null) return
        p.core.peerDown(this.now, peerName(ev.gone), ev.incarnation)
        this.after(p)
        return
      }
      case 'action': this.act(ev.action)
    }
  }

  protected startPeer (i: number, init: (core: TreecastCore) => void, joining = false): void {
    const p = this.peers[i] as SimPeer
    p.core = new TreecastCore({
      self: p.name,
      random: (() => { const r = this.rng.fork(`${p.name}#${p.incarnation}`); return () => r.next() })(),
      contribute: (id, start, vnodes) => contribute(id, start.op, start.length, vnodes),
      config: this.scenario.core ?? {}
    })
    p.status = joining ? 'joining' : 'running'
    p.refused.clear()
    this.running++
    p.lastOwned = IntervalSet.EMPTY
    init(p.core)
    this.after(p)
  }

  /** After every input to a peer: route its outputs, re-arm its timer, update stability. */
  protected after (p: SimPeer): void {
    const core = p.core
    if (core === null) return
    for (const o of core.takeOutputs()) this.output(p, o)
    this.checker.settle()
    if (p.core === null) return
    const next = core.nextTimeoutAt()
    if (next !== undefined && next < p.timerAt) {
      p.timerAt = next
      this.queue.push(Math.max(next, this.now), { k: 'timer', peer: p.index, at: next })
    }
    this.stability.observe(p, core)
    this.stability.check(this.now, this.running)
  }

  protected output (p: SimPeer, o: Output): void {
    switch (o.type) {
      case 'send': return this.send(p, o.to, o.message)
      case 'deliver': {
        this.checker.delivered(o.id, p.index, o.vnodes)
        const m = o.mode === 'direct' ? this.sends.get(o.id) : undefined
        if (m !== undefined && !isSendPayload(m.seq, m.bytes, o.chunks)) this.checker.violate(`point-to-point ${o.id} delivered at ${p.name} with another payload`)
        return
      }
      case 'broadcast-done': {
        const b = this.bcasts.get(o.id)
        if (b === undefined) return
        b.doneAtRootMs = this.now
        if (b.backToBack !== null) this.startBroadcast(b.backToBack, p.index)
        return
      }
      case 'reduced': {
        const r = this.reds.get(o.id)
        if (r === undefined) return
        r.endMs = this.now
        r.complete = o.covered.size === this.vnodes
        r.correct = r.complete && matchesTruth(r.op, groundTruth(r.id, r.op, r.length, this.vnodes), o.value)
        if (!r.correct) this.checker.violate(`reduction ${o.id} result is wrong`)
        return
      }
      case 'reduce-failed': {
        const r = this.reds.get(o.id)
        if (r !== undefined) r.endMs = this.now
        return
      }
      case 'ownership':
        this.trace?.(`${this.now.toFixed(3)} ${p.name} ownership ${o.reason} +${o.added.toString()} -${o.removed.toString()} => ${o.owned.toString()}`)
        this.checker.ownership(p.index, o.added, o.removed, o.reason === 'takeover')
        p.lastOwned = o.owned
        return
      case 'tree': {
        const root = this.byName.get(o.root)
        if (root === undefined) return
        const parent = o.parent === null ? null : this.byName.get(o.parent) ?? null
        this.checker.parent(o.kind, root, p.index, parent)
        return
      }
      case 'member':
        this.trace?.(`${this.now.toFixed(3)} ${p.name} sees ${o.peer} ${o.status}`)
        return
      case 'joined':
        if (p.status === 'joining') p.status = 'running'
        return
      case 'join-failed':
        // Its contact went down before the welcome: given up as the node does (the core and
        // its connections dropped), so the members that heard of it find it gone.
        this.joinsFailed++
        this.gone(p, 'crashed')
        return
      case 'left':
        if (!o.drained) this.leavesTimedOut++
        this.gone(p, 'left')
        return
      case 'evicted':
        this.checker.violate(`${p.name} was declared dead while alive`)
        this.gone(p, 'crashed')
        return
      default:
    }
  }

  private send (p: SimPeer, toName: string, msg: Message): void {
    const to = this.byName.get(toName)
    if (to === undefined) return
    p.contacts.add(to)
    // The connection exists at both ends once the first message is under way (a real sender
    // dialled first): a receiver that crashes before it arrives closes it, and the sender
    // hears of that like any other contact of the crashed peer (a joiner whose join was in
    // flight when its contact crashed waited for ever).
    const q = this.peers[to]
    if (q !== undefined && q.core !== null) q.contacts.add(p.index)
    const size = wireSize(msg)
    this.traffic.account(p.index, to, msg, size)
    let delivered: Message = msg
    if (this.scenario.wireCheck === true) delivered = decodeMessage(encodeMessage(msg))
    const incarnation = this.peers[to]?.incarnation ?? 0
    const lane = this.lanes.laneOf(p.index, to, msg)
    this.net.send(this.now, p.index, to, size, { k: 'msg', from: p, to, msg: delivered, incarnation }, lane)
  }

  /** A message reaches its receiver, which handles it (or, gone, refuses it). */
  private arrive (a: Arrival): void {
    const q = this.peers[a.to]
    if (q?.core == null) {
      if (q !== undefined) this.refuse(q, a.from, a.incarnation)
      return
    }
    q.contacts.add(a.from.index)
    q.core.handle(this.now, a.from.name, a.msg)
    this.after(q)
  }

  /**
   * A message reached a peer that has left: like a real dial to a stopped node, the sender
   * learns the connection is gone (once per sender and incarnation), so it re-routes what
   * it sent there. Peers that were in contact when it left were told then (`gone`).
   * Crashed peers stay silent: their contacts notice after crashDetectionMs, others by
   * their own liveness checks.
   */
  private refuse (q: SimPeer, sender: SimPeer, incarnation: number): void {
    if (q.status !== 'left' || q.incarnation !== incarnation || q.refused.has(sender.index)) return
    q.refused.add(sender.index)
    this.net.send(this.now, q.index, sender.index, 0, () => this.queue.push(this.now, { k: 'down', peer: sender.index, gone: q.index, incarnation }))
  }

  private gone (p: SimPeer, status: 'left' | 'crashed'): void {
    if (p.core === null) return
    this.goneFigures.add(p.core)
    p.core = null
    p.status = status
    this.running--
    this.stability.forget(p)
    p.timerAt = Infinity
    if (status === 'crashed') this.checker.crashed(p.index)
    const contacts = p.contacts.sorted()
    const incarnation = p.incarnation
    p.contacts.clear()
    if (status === 'crashed') {
      // What it had not yet put on the wire goes with it.
      this.net.crash(this.now, p.index)
      const at = this.now + (this.scenario.crashDetectionMs ?? 200)
      for (const c of contacts) this.queue.push(at, { k: 'down', peer: c, gone: p.index, incarnation })
    } else {
      // A closed connection is noticed after the data already sent on it (FIFO per pair).
      for (const c of contacts) {
        this.net.send(this.now, p.index, c, 0, () => this.queue.push(this.now, { k: 'down', peer: c, gone: p.index, incarnation }))
      }
    }
    this.stability.check(this.now, this.running)
  }

  /**
   * A collective reduction: every running peer calls it now, MPI-style (a peer that cannot,
   * e.g. one that has not heard of the root yet, is left out: the root pulls its part).
   */
  private collective (root: number, op: string, length: number): void {
    const id = `c${this.reductionsStarted}`
    const track: RedTrack = { id, root: peerName(root), op, length, startMs: this.now, endMs: null, correct: false, complete: false, collective: { callers: 0 } }
    this.reds.set(id, track)
    for (const p of this.peers) {
      if (p.core === null || p.core.state !== 'running') continue
      try {
        p.core.reduceCollective(this.now, { id, root: track.root, op, length })
        track.collective = { callers: (track.collective?.callers ?? 0) + 1 }
      } catch (err) {
        if (!(err instanceof InvalidArgumentError)) throw err
      }
      this.after(p)
    }
  }

  private act (a: Action): void {
    if (this.now > this.scenario.until) return
    this.trace?.(`${this.now.toFixed(3)} action ${JSON.stringify(a)}`)
    switch (a.do) {
      case 'broadcast': {
        const root = this.pickRoot(a.root)
        if (root === undefined) return
        this.startBroadcast(a, root)
        if (a.backToBack !== true) this.repeat(a)
        return
      }
      case 'reduce': {
        // A collective reduction needs a tree root as its root (every call is refused otherwise).
        // Decided from statuses and names only, so that every partition of a run on threads decides alike.
        const stride = resolveCoreConfig(this.scenario.core ?? {}).treeRootStride
        const root = this.pickRoot(a.root, a.collective === true ? (p) => isTreeRoot(p.name, stride) : undefined)
        if (root === undefined) return
        const op = a.op ?? 'sum'
        const length = a.length ?? 1
        if (!BUILTIN_OPS.has(op)) throw new Error(`unknown op ${op}`)
        this.reductionsStarted++
        const core = this.peers[root]?.core
        if (a.collective === true) this.collective(root, op, length)
        else if (core != null) {
          const id = core.reduce(this.now, { op, length })
          this.reds.set(id, { id, root: peerName(root), op, length, startMs: this.now, endMs: null, correct: false, complete: false })
          this.after(this.peers[root] as SimPeer)
        }
        this.repeat(a)
        return
      }
      case 'send': {
        const from = this.pickRoot(a.from)
        const p = from === undefined ? undefined : this.peers[from]
        if (p?.core != null) {
          const vnode = a.vnode === undefined || a.vnode === 'random' ? this.rng.int(this.vnodes) : a.vnode
          const seq = this.sends.size
          const id = p.core.sendTo(this.now, vnode, sendPayload(seq, a.bytes))
          this.sends.set(id, { id, seq, from: p.name, vnode, bytes: a.bytes, startMs: this.now })
          this.after(p)
        }
        this.repeat(a)
        return
      }
      case 'leave':
        for (const i of this.select(a, 'running')) {
          const p = this.peers[i] as SimPeer
          p.rejoinWant = p.lastOwned
          this.stability.markChange(this.now, 'leave')
          p.status = 'leaving'
          p.core?.leave(this.now)
          this.after(p)
        }
        return
      case 'crash':
        for (const i of this.select(a, 'running')) {
          this.stability.markChange(this.now, 'crash')
          const p = this.peers[i] as SimPeer
          p.rejoinWant = p.lastOwned
          this.gone(p, 'crashed')
        }
        return
      case 'join':
        for (const i of this.select(a, 'joinable')) {
          const p = this.peers[i] as SimPeer
          const running = this.peers.filter((q) => q.status === 'running')
          if (running.length === 0) throw new InvalidScenarioError(`join at ${a.at} ms: no running peer to join through`)
          const contact = this.rng.pick(running)
          const want = a.rejoin === true && !p.rejoinWant.isEmpty ? p.rejoinWant : undefined
          p.incarnation++
          p.contacts.clear()
          this.stability.markChange(this.now, 'join')
          this.startPeer(i, (core) => core.join(this.now, contact.name, { incarnation: p.incarnation, ...(want !== undefined ? { want } : {}) }), true)
        }
    }
  }

  private repeat (a: Extract<Action, { do: 'broadcast' | 'reduce' | 'send' }>): void {
    const next = nextRepeat(a, this.scenario.until)
    if (next !== undefined) this.queue.push(next.at, { k: 'action', action: next })
  }

  private startBroadcast (a: Extract<Action, { do: 'broadcast' }>, root: number): void {
    const p = this.peers[root]
    if (p?.core == null || p.status !== 'running') return
    if (a.backToBack === true && a.until !== undefined && this.now > a.until) return
    if (a.backToBack === true && this.now > this.scenario.until) return
    const chunkBytes = p.core.config.chunkBytes
    const chunks: Uint8Array[] = []
    const shared = new Uint8Array(Math.min(chunkBytes, Math.max(1, a.bytes)))
    for (let off = 0; off < a.bytes; off += chunkBytes) chunks.push(shared.subarray(0, Math.min(chunkBytes, a.bytes - off)))
    const tree = a.bytes >= p.core.config.switchPointBytes ? 'bw' : 'lat'
    const via = p.core.treeRoot(a.tree !== undefined && a.tree !== 'auto' ? a.tree : tree)
    const id = p.core.broadcast(this.now, chunks, { mode: a.tree ?? 'auto' })
    this.bcasts.set(id, { id, root: p.name, bytes: a.bytes, tree: a.tree !== undefined && a.tree !== 'auto' ? a.tree : tree, startMs: this.now, doneAtRootMs: null, fallback: 0, messages: 0, bytesSent: 0, streams: 0, stripes: 1, backToBack: a.backToBack === true ? a : null, ...(via !== p.name ? { treeRoot: via } : {}) })
    this.after(p)
  }

  private pickRoot (name: string | undefined, eligible: (p: SimPeer) => boolean = () => true): number | undefined {
    if (name === undefined || name === 'random') {
      const alive = this.peers.filter((p) => p.status === 'running' && eligible(p))
      return alive.length === 0 ? undefined : this.rng.pick(alive).index
    }
    const i = this.byName.get(name)
    return i !== undefined && this.peers[i]?.status === 'running' ? i : undefined
  }

  private select (s: PeerSelector, kind: 'running' | 'joinable'): number[] {
    return selectPeers(s, kind, { statuses: this.peers.map((p) => p.status), byName: this.byName, topology: this.topology, rng: this.rng, protectedRoots: this.protectedRoots, running: this.running })
  }

  private isLive (i: number): boolean {
    const st = this.peers[i]?.status
    return st === 'running' || st === 'leaving' || st === 'joining'
  }

  /** Per virtual node, ms from the start of broadcast `id` to its first delivery there (NaN: never); 003 Fig. 6. */
  arrivalTimes (id: string): Float64Array | undefined {
    const b = this.bcasts.get(id)
    return b === undefined ? undefined : arrivalTimes(b.startMs, this.checker.deliveries.get(id)?.firstMs, this.vnodes)
  }

  /** Shape of the trees of `root` now: depth, fan-out, edges crossing clusters. */
  treeShape (rootName: string): Record<'lat' | 'bw', TreeShape> {
    const parentOf = (kind: 'lat' | 'bw', i: number): number | null | undefined => {
      const p = this.peers[i]
      const st = p?.core?.trees.get(kind, rootName)
      if (st == null || p?.name === rootName) return undefined
      return st.parent === null ? null : this.byName.get(st.parent) ?? null
    }
    return treeShape(this.peers.length, parentOf, (i) => this.topology.clusterOf(i))
  }

  /** What the report is built from. */
  protected reportInput (): ReportInput {
    const { probes, probesLight, offers, rejected } = this.goneFigures.with(this.peers.flatMap((p) => p.core ?? []))
    const everStarted = this.peers.filter((p) => p.status !== 'off').length
    return {
      scenario: this.scenario.name,
      seed: this.seed,
      peers: { initial: this.initial, final: this.running, total: this.topology.peerCount },
      vnodes: this.vnodes,
      nowMs: this.now,
      broadcasts: [...this.bcasts.values()],
      reductions: [...this.reds.values()],
      sends: [...this.sends.values()],
      deliveries: this.checker.deliveries,
      probes,
      probesLight,
      offers,
      everStarted,
      rejected,
      net: this.net.stats(),
      unowned: this.checker.unowned(),
      leavesTimedOut: this.leavesTimedOut,
      joinsFailed: this.joinsFailed,
      firstStableMs: this.stability.firstStableMs,
      repairs: this.stability.repairs,
      violations: this.checker.violations
    }
  }
}
