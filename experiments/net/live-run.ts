/**
 * Runs a scenario file on real libp2p peers in this process (TCP on loopback, Noise,
 * Yamux, wide-area links emulated below encryption), in real time, and builds the same
 * report as the simulator. Times in the report are wall-clock ms since the start.
 *
 * What differs from the simulator: time is real (a run is not reproducible to the byte;
 * the seed only fixes the random choices of the schedule), peers share two CPU cores, and
 * invariants are checked at the end and at every membership change rather than after
 * every event (see experiments/README.md).
 */
import { performance } from 'node:perf_hooks'
import type { PrivateKey } from '@libp2p/interface'
import { createTreecast, type CreateTreecastInit, type TreecastNode } from '../../node/create-treecast.ts'
import { JoinFailedError } from '../../node/errors.ts'
import { BUILTIN_OPS } from '../../overlay/reduce-ops.ts'
import { DEFAULT_TREE_ROOT_STRIDE } from '../../overlay/config.ts'
import { isTreeRoot } from '../../overlay/tree-roots.ts'
import { IntervalSet } from '../../virtual-nodes/interval-set.ts'
import { groundTruth, matchesTruth, treeShape } from '../sim/analysis.ts'
import { contribute } from '../sim/ground-truth.ts'
import { resolveTopology, type Topology } from '../sim/network.ts'
import { buildReport, type BcastTrack, type RedTrack, type RepairReport, type SimReport } from '../sim/report.ts'
import { Rng } from '../sim/rng.ts'
import { selectPeers } from '../sim/select.ts'
import { peerName } from '../sim/simulation.ts'
import { namedRoots, nextRepeat, type Action, type PeerSelector, type Scenario } from '../sim/scenario.ts'
import { sendPayload, type SendTrack } from '../sim/sends.ts'
import { LiveTracker } from './live-tracker.ts'

/** The emulated network the peers run on. */
export interface LiveNetwork {
  /** The transport for a peer of `cluster` whose libp2p peer id will be `peerId`. */
  transportFor (peerId: string, cluster: string): CreateTreecastInit['transport']
  /** Bytes carried over wide-area links so far. */
  wanBytes (): number
}

/** Options of a live run. */
export interface LiveRunInit {
  /** The emulated topology (undefined: plain loopback, no shaping). */
  network?: LiveNetwork
  /** A key per peer index (for the peer id to be known before the node exists). */
  keyFor: (index: number) => Promise<PrivateKey>
  /** Progress lines (joins, crashes, broadcasts completing), for a live display. */
  onProgress?: (line: string) => void
  /** Interval of the stability poll. @default 100 */
  pollMs?: number
  /**
   * Start the schedule's clock once the founders' trees are first stable (waiting at most
   * this long), instead of at once: on a loaded machine the cold start alone can take
   * seconds. 0 starts at once. @default 0
   */
  startAfterStableMaxMs?: number
  /** Interval of the status lines given to `onProgress`; 0 for none. @default 2000 */
  statusEveryMs?: number
}

type Status = 'off' | 'running' | 'leaving' | 'left' | 'crashed' | 'joining'

interface LivePeer {
  readonly index: number
  readonly name: string
  readonly cluster: string
  node: TreecastNode | undefined
  status: Status
  lastOwned: IntervalSet
}

/** One scenario on real peers. */
export class LiveRun {
  private readonly topology: Topology
  private readonly peers: LivePeer[] = []
  private readonly rng: Rng
  private readonly t0 = performance.now()
  private readonly vnodes: number
  private readonly tracker: LiveTracker
  private readonly bcasts = new Map<string, BcastTrack>()
  private readonly reds = new Map<string, RedTrack>()
  private readonly sends = new Map<string, SendTrack>()
  private readonly repairs: RepairReport[] = []
  private openRepair: RepairReport | null = null
  private firstStableMs: number | null = null
  private readonly timers = new Set<ReturnType<typeof setTimeout>>()
  private readonly inFlight = new Set<Promise<unknown>>()
  private readonly violations: string[] = []
  private everStarted = 0
  private probesOfGone = 0
  private probesLightOfGone = 0
  private offersOfGone = 0
  /** Real time of the schedule's time 0. */
  private offsetMs = 0
  private messagesOfGone = 0
  private leavesTimedOut = 0
  private joinsFailed = 0
  private bytesOfGone = 0
  private readonly byName = new Map<string, number>()
  /** Peers named as a root in the schedule: random leaves and crashes never pick them. */
  private readonly protectedRoots = new Set<number>()

  constructor (private readonly scenario: Scenario, private readonly seed: number, private readonly init: LiveRunInit) {
    this.topology = resolveTopology(scenario.topology)
    this.rng = new Rng(seed)
    const initial = scenario.initialPeers ?? this.topology.peerCount
    this.vnodes = scenario.vnodes ?? initial
    for (let i = 0; i < this.topology.peerCount; i++) {
      const cluster = this.topology.clusters[this.topology.clusterOf(i)]?.name ?? 'c0'
      this.peers.push({ index: i, name: peerName(i), cluster, node: undefined, status: 'off', lastOwned: IntervalSet.EMPTY })
    }
    this.tracker = new LiveTracker(this.vnodes, () => this.now())
    for (const p of this.peers) this.byName.set(p.name, p.index)
    for (const name of namedRoots(scenario.schedule)) this.protectedRoots.add(this.byName.get(name) as number)
  }

  private now (): number { return performance.now() - this.t0 }
  private progress (line: string): void { this.init.onProgress?.(`${(this.now() / 1000).toFixed(2).padStart(7)} s  ${line}`) }

  async run (): Promise<SimReport> {
    const initial = this.scenario.initialPeers ?? this.topology.peerCount
    const founders = await Promise.all(this.peers.slice(0, initial).map(async (p) => await this.create(p)))
    const ids = founders.map((n) => n.id)
    for (const [i, n] of founders.entries()) {
      n.bootstrap(this.vnodes, ids)
      ;(this.peers[i] as LivePeer).status = 'running'
    }
    this.progress(`${initial} peers founded the overlay (${this.vnodes} virtual nodes)`)
    this.markChange('start')
    const poll = setInterval(() => { this.pollStability() }, this.init.pollMs ?? 100)
    const statusEvery = this.init.statusEveryMs ?? 2000
    const status = this.init.onProgress !== undefined && statusEvery > 0 ? setInterval(() => { this.progress(this.status()) }, statusEvery) : undefined
    const waitMax = this.init.startAfterStableMaxMs ?? 0
    while (waitMax > 0 && this.firstStableMs === null && this.now() < waitMax) await new Promise((resolve) => setTimeout(resolve, 50))
    this.offsetMs = waitMax > 0 ? this.now() : 0
    if (this.offsetMs > 0) this.progress(`schedule starts now (its time 0)`)
    for (const a of this.scenario.schedule) this.at(a.at, () => { this.act(a) })
    await this.sleep(this.scenario.until)
    await this.drain(this.scenario.drainMs ?? 30_000)
    clearInterval(poll)
    if (status !== undefined) clearInterval(status)
    for (const t of this.timers) clearTimeout(t)
    this.checkOwnership('end')
    const report = this.report()
    await Promise.allSettled(this.peers.map(async (p) => await p.node?.stop()))
    return report
  }

  // ---- schedule ----------------------------------------------------------------------

  /** Runs `fn` at schedule time `atMs`. */
  private at (atMs: number, fn: () => void): void {
    const t = setTimeout(() => { this.timers.delete(t); fn() }, Math.max(0, this.offsetMs + atMs - this.now()))
    this.timers.add(t)
  }

  private async sleep (untilMs: number): Promise<void> {
    await new Promise<void>((resolve) => { this.at(untilMs, resolve) })
  }

  private act (a: Action): void {
    switch (a.do) {
      case 'broadcast': {
        const root = this.pickRoot(a.root)
        if (root !== undefined) this.track(this.startBroadcast(a, root))
        this.repeat(a)
        return
      }
      case 'reduce': {
        const root = this.pickRoot(a.root)
        if (root !== undefined) this.track(this.startReduce(a.op ?? 'sum', a.length ?? 1, root))
        this.repeat(a)
        return
      }
      case 'send': {
        const from = this.pickRoot(a.from)
        if (from !== undefined) this.startSend(a, from)
        this.repeat(a)
        return
      }
      case 'leave':
        for (const p of this.select(a, 'running')) this.track(this.leave(p))
        return
      case 'crash':
        for (const p of this.select(a, 'running')) this.track(this.crash(p))
        return
      case 'join': {
        const contacts = this.peers.filter((q) => q.status === 'running')
        for (const p of this.select(a, 'joinable')) {
          const contact = this.rng.pick(contacts)
          this.track(this.join(p, contact, a.rejoin === true && !p.lastOwned.isEmpty ? p.lastOwned : undefined))
        }
      }
    }
  }

  private repeat (a: Extract<Action, { do: 'broadcast' | 'reduce' | 'send' }>): void {
    const next = nextRepeat(a, this.scenario.until)
    if (next !== undefined) this.at(next.at, () => { this.act(next) })
  }

  private track (p: Promise<unknown>): void {
    const q = p.catch((err: Error) => { this.violations.push(`action failed: ${err.name}: ${err.message}`) })
    this.inFlight.add(q)
    void q.finally(() => this.inFlight.delete(q))
  }

  private async drain (maxMs: number): Promise<void> {
    const deadline = this.now() + maxMs
    while (this.now() < deadline) {
      const sent = [...this.sends.values()].every((m) => !Number.isNaN(this.tracker.records().get(m.id)?.firstMs[m.vnode] ?? NaN))
      if (this.inFlight.size === 0 && sent && [...this.bcasts.values()].every((b) => b.doneAtRootMs !== null || this.rootGone(b.root))) return
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  private rootGone (name: string): boolean {
    const p = this.peers.find((q) => q.name === name)
    return p === undefined || p.status !== 'running'
  }

  // ---- peers -------------------------------------------------------------------------

  private async create (p: LivePeer): Promise<TreecastNode> {
    const privateKey = await this.init.keyFor(p.index)
    const { peerIdFromPrivateKey } = await import('@libp2p/peer-id')
    const transport = this.init.network?.transportFor(peerIdFromPrivateKey(privateKey).toString(), p.cluster)
    const node = await createTreecast({
      privateKey,
      ...(transport !== undefined ? { transport } : {}),
      random: () => this.rng.next(),
      contribute: (id, start, vnodes) => contribute(id, start.op, start.length, vnodes),
      ...(this.scenario.core !== undefined ? { core: this.scenario.core } : {})
    })
    await node.start()
    this.everStarted++
    p.node = node
    this.tracker.watch(p.name, node, () => p.status === 'crashed')
    node.addEventListener('ownership', (e) => { p.lastOwned = e.detail.owned })
    node.addEventListener('broadcast-done', (e) => {
      const b = this.bcasts.get(e.detail.id)
      if (b !== undefined && b.doneAtRootMs === null) {
        b.doneAtRootMs = this.now()
        this.progress(`broadcast ${b.bytes} B from ${b.root} done in ${(b.doneAtRootMs - b.startMs).toFixed(1)} ms`)
      }
    })
    return node
  }

  private async join (p: LivePeer, contact: LivePeer, want: IntervalSet | undefined): Promise<void> {
    p.status = 'joining'
    this.markChange('join')
    const node = await this.create(p)
    const joined = await node.join((contact.node as TreecastNode).id, want !== undefined ? { want } : {}).then(() => true, (err: Error) => { if (err instanceof JoinFailedError) return false; throw err })
    // The contact went down before its welcome: counted, and the peer stops, as in the simulator.
    if (!joined) { this.joinsFailed++; p.status = 'crashed'; this.retire(node); await node.stop(); return }
    p.status = 'running'
    this.progress(`${p.name} (${p.cluster}) joined through ${contact.name}, owns ${node.owned().size} virtual nodes`)
  }

  private async leave (p: LivePeer): Promise<void> {
    const node = p.node as TreecastNode
    p.status = 'leaving'
    this.markChange('leave')
    const r = await node.leave()
    if (!r.drained) this.leavesTimedOut++
    p.status = 'left'
    this.retire(node)
    await node.stop()
    this.progress(`${p.name} left gracefully (hand-off ${r.drained ? 'acknowledged' : 'timed out'})`)
  }

  private async crash (p: LivePeer): Promise<void> {
    const node = p.node as TreecastNode
    p.status = 'crashed'
    this.markChange('crash')
    this.retire(node)
    await node.stop()
    this.progress(`${p.name} crashed (stopped without leaving)`)
  }

  /** Keeps the counters of a peer that goes away. */
  private retire (node: TreecastNode): void {
    const c = node.overlay.counters() as { core: { probes: number, probesLight: number, offers: number, messagesOut: number }, links: { bytesSent: number } }
    this.probesOfGone += c.core.probes
    this.probesLightOfGone += c.core.probesLight
    this.offersOfGone += c.core.offers
    this.messagesOfGone += c.core.messagesOut
    this.bytesOfGone += c.links.bytesSent
  }

  private pickRoot (name: string | undefined): LivePeer | undefined {
    const alive = this.peers.filter((p) => p.status === 'running')
    if (name === undefined || name === 'random') return alive.length === 0 ? undefined : this.rng.pick(alive)
    return alive.find((p) => p.name === name)
  }

  /** The simulator's selection (experiments/sim/select.ts): random picks spare the schedule's named roots. */
  private select (s: PeerSelector, kind: 'running' | 'joinable'): LivePeer[] {
    const running = this.peers.filter((p) => p.status === 'running').length
    const picked = selectPeers(s, kind, { statuses: this.peers.map((p) => p.status), byName: this.byName, topology: this.topology, rng: this.rng, protectedRoots: this.protectedRoots, running })
    return picked.map((i) => this.peers[i] as LivePeer)
  }

  // ---- collectives -------------------------------------------------------------------

  private async startBroadcast (a: Extract<Action, { do: 'broadcast' }>, p: LivePeer): Promise<void> {
    const node = p.node as TreecastNode
    const payload = new Uint8Array(Math.max(0, a.bytes))
    for (let i = 0; i < payload.length; i += 4096) payload[i] = (i / 4096) & 0xff
    const switchPoint = this.scenario.core?.switchPointBytes ?? 256 * 1024
    const tree = a.tree !== undefined && a.tree !== 'auto' ? a.tree : a.bytes >= switchPoint ? 'bw' : 'lat'
    const startMs = this.now()
    const h = node.startBroadcast(payload, { mode: a.tree ?? 'auto' })
    this.bcasts.set(h.id, { id: h.id, root: p.name, bytes: a.bytes, tree, startMs, doneAtRootMs: null, fallback: 0, messages: 0, bytesSent: 0, streams: 0, stripes: 0, backToBack: null })
    this.tracker.expect(h.id, payload)
    await h.sent
  }

  private startSend (a: Extract<Action, { do: 'send' }>, p: LivePeer): void {
    const vnode = a.vnode === undefined || a.vnode === 'random' ? this.rng.int(this.vnodes) : a.vnode
    const seq = this.sends.size
    const payload = sendPayload(seq, a.bytes)
    const startMs = this.now()
    const id = (p.node as TreecastNode).send(vnode, payload)
    this.sends.set(id, { id, seq, from: p.name, vnode, bytes: a.bytes, startMs })
    this.tracker.expect(id, payload)
  }

  private async startReduce (op: string, length: number, p: LivePeer): Promise<void> {
    if (!BUILTIN_OPS.has(op)) throw new Error(`unknown op ${op}`)
    const node = p.node as TreecastNode
    const startMs = this.now()
    const h = node.startReduce(op, length)
    const red: RedTrack = { id: h.id, root: p.name, op, length, startMs, endMs: null, correct: false, complete: false }
    this.reds.set(h.id, red)
    let r
    try {
      r = await h.result
    } catch (err) {
      // The root left or crashed: the reduction stays incomplete, as in the simulator.
      if (p.status !== 'running') return
      throw err
    }
    red.endMs = this.now()
    red.complete = r.covered.size === this.vnodes
    const want = groundTruth(r.id, op, length, this.vnodes)
    red.correct = red.complete && matchesTruth(op, want, r.value)
    this.progress(`reduce ${op}[${length}] at ${p.name}: ${red.correct ? 'correct' : 'WRONG'} in ${(red.endMs - startMs).toFixed(1)} ms`)
  }

  // ---- stability and invariants ------------------------------------------------------

  private markChange (event: string): void {
    if (this.openRepair !== null) this.openRepair.interrupted = true
    this.openRepair = { atMs: this.now(), event, treesRepairedAfterMs: null, stableAfterMs: null, interrupted: false }
    this.repairs.push(this.openRepair)
  }

  private pollStability (): void {
    const live = this.peers.filter((p) => p.status !== 'off' && p.status !== 'left' && p.status !== 'crashed')
    if (live.some((p) => p.status !== 'running' || p.node === undefined)) return
    if (live.some((p) => (p.node as TreecastNode).overlay.probing)) return
    // Nobody probes also just after a crash nobody has noticed yet: stable only once every
    // live peer's view of the members is the live set.
    const ids = new Set(live.map((p) => (p.node as TreecastNode).id))
    if (live.some((p) => { const m = (p.node as TreecastNode).members(); return m.length !== ids.size || m.some((id) => !ids.has(id)) })) return
    const r = this.openRepair
    if (r === null) return
    // Real peers: leavers are gone once nobody is leaving, so both times are one.
    r.stableAfterMs = this.now() - r.atMs
    r.treesRepairedAfterMs = r.stableAfterMs
    this.openRepair = null
    if (this.firstStableMs === null) this.firstStableMs = this.now()
    this.progress(`trees stable ${r.stableAfterMs.toFixed(0)} ms after ${r.event}; ${this.describeTrees()}`)
    this.checkOwnership(`after ${r.event}`)
    this.checkTrees()
  }

  /** One line: peers, probing, connections, messages so far. */
  private status (): string {
    const running = this.peers.filter((p) => p.status === 'running' && p.node !== undefined)
    let probing = 0
    let conns = 0
    let msgs = this.messagesOfGone
    for (const p of running) {
      const n = p.node as TreecastNode
      if (n.overlay.probing) probing++
      conns += n.libp2p.getConnections().length
      msgs += (n.overlay.counters() as { core: { messagesOut: number } }).core.messagesOut
    }
    return `status: ${running.length} peers running, ${probing} probing, ${Math.round(conns / 2)} connections, ${msgs} messages sent so far`
  }

  /**
   * The shape of the two trees of the first running peer that roots trees (every peer, or
   * with a `core.treeRootStride` one in about `stride`): depth, fan-out, edges between clusters.
   */
  describeTrees (): string {
    const running = this.peers.filter((p) => p.status === 'running' && p.node !== undefined)
    if (running.length === 0) return 'no peers'
    const stride = this.scenario.core?.treeRootStride ?? DEFAULT_TREE_ROOT_STRIDE
    const root = running.find((p) => isTreeRoot((p.node as TreecastNode).id, stride))
    if (root === undefined) return 'no running peer roots trees'
    const index = new Map(running.map((p, i) => [(p.node as TreecastNode).id, i]))
    const rootId = (root.node as TreecastNode).id
    const shape = treeShape(running.length, (kind, i) => {
      const p = running[i] as LivePeer
      if (p === root) return undefined
      const parent = (p.node as TreecastNode).tree(kind, rootId)?.parent
      return parent == null ? null : index.get(parent) ?? null
    }, (i) => this.topology.clusters.findIndex((c) => c.name === (running[i] as LivePeer).cluster))
    const one = (k: 'lat' | 'bw'): string => `${k} depth ${shape[k].depth}, fan-out ≤ ${shape[k].maxChildren}, ${shape[k].wanEdges}/${running.length - 1} edges between clusters`
    return `${root.name}'s trees: ${one('lat')}; ${one('bw')}`
  }

  /** One owner per virtual node among the running peers. */
  private checkOwnership (when: string): void {
    const owners = new Int32Array(this.vnodes)
    const first = new Map<number, string[]>()
    for (const p of this.peers) {
      if (p.status !== 'running' || p.node === undefined) continue
      for (const v of p.node.owned().values()) {
        if (v >= this.vnodes) continue
        owners[v] = (owners[v] ?? 0) + 1
        if (first.size < 3 || first.has(v)) first.set(v, [...(first.get(v) ?? []), p.name])
      }
    }
    const none = owners.filter((c) => c === 0).length
    const many = owners.filter((c) => c > 1).length
    if (none > 0 || many > 0) {
      const example = [...first.entries()].filter(([, o]) => o.length > 1).slice(0, 2).map(([v, o]) => `${v}: ${o.join(',')}`).join('; ')
      this.violations.push(`ownership ${when}: ${none} virtual nodes without owner, ${many} with several${example.length > 0 ? ` (${example})` : ''}`)
    }
  }

  /** No cycle in any tree among the running peers. */
  private checkTrees (): void {
    const running = this.peers.filter((p) => p.status === 'running' && p.node !== undefined)
    for (const kind of ['lat', 'bw'] as const) {
      for (const r of running) {
        const root = (r.node as TreecastNode).id
        const parent = new Map<string, string | null>()
        for (const p of running) parent.set((p.node as TreecastNode).id, (p.node as TreecastNode).tree(kind, root)?.parent ?? null)
        for (const start of parent.keys()) {
          let cur: string | null | undefined = start
          for (let hops = 0; cur != null; hops++) {
            if (hops > running.length) { this.violations.push(`cycle in the ${kind} tree of ${r.name}`); return }
            cur = parent.get(cur)
          }
        }
      }
    }
  }

  private report (): SimReport {
    const running = this.peers.filter((p) => p.status === 'running' && p.node !== undefined)
    let probes = this.probesOfGone
    let probesLight = this.probesLightOfGone
    let offers = this.offersOfGone
    let messages = this.messagesOfGone
    let bytes = this.bytesOfGone
    const rejected: Record<string, number> = {}
    for (const p of running) {
      const c = (p.node as TreecastNode).overlay.counters() as { core: { probes: number, probesLight: number, offers: number, messagesOut: number, rejected: Record<string, number> }, links: { bytesSent: number }, rejected: Record<string, number> }
      probes += c.core.probes
      probesLight += c.core.probesLight
      offers += c.core.offers
      messages += c.core.messagesOut
      bytes += c.links.bytesSent
      for (const [k, v] of [...Object.entries(c.core.rejected), ...Object.entries(c.rejected)]) rejected[k] = (rejected[k] ?? 0) + v
    }
    const owned = new Set<number>()
    for (const p of running) for (const v of (p.node as TreecastNode).owned().values()) owned.add(v)
    for (const [id, d] of this.tracker.records()) if (d.duplicates > 0) this.violations.push(`${this.sends.has(id) ? 'point-to-point' : 'broadcast'} ${id}: ${d.duplicates} duplicate deliveries`)
    for (const bad of this.tracker.corrupt()) this.violations.push(`${this.sends.has(bad) ? 'point-to-point' : 'broadcast'} ${bad}: payload corrupted`)
    for (const r of this.reds.values()) if (r.complete && !r.correct) this.violations.push(`reduction ${r.id}: wrong result`)
    return buildReport({
      scenario: this.scenario.name,
      seed: this.seed,
      peers: { initial: this.scenario.initialPeers ?? this.topology.peerCount, final: running.length, total: this.topology.peerCount },
      vnodes: this.vnodes,
      nowMs: this.now(),
      broadcasts: [...this.bcasts.values()].sort((a, b) => a.startMs - b.startMs),
      reductions: [...this.reds.values()].sort((a, b) => a.startMs - b.startMs),
      sends: [...this.sends.values()],
      deliveries: this.tracker.records(),
      probes,
      probesLight,
      offers,
      everStarted: this.everStarted,
      rejected,
      net: { messages, bytes, wanBytes: this.init.network?.wanBytes() ?? 0 },
      unowned: this.vnodes - owned.size,
      leavesTimedOut: this.leavesTimedOut,
      joinsFailed: this.joinsFailed,
      firstStableMs: this.firstStableMs,
      repairs: this.repairs,
      violations: this.violations
    })
  }
}
