/**
 * A small network of `Probing` instances (overlay/probing.ts) for the probing fuzz
 * (test/probing-fuzz.test.ts): FIFO links with a fixed latency per pair plus jitter, a toy
 * tree model (a probe of c gives a parent in c's tree and in every tree c has a parent
 * in), joins, leaves, crashes noticed after a delay, restarts (noticed or not), and remote
 * input that is forged, duplicated or late. The host answers pings and probe requests as
 * overlay/core.ts does. Invariants are checked by `check()`.
 */
import { Probing, MAX_OFFERS, MAX_DETOURS, MAX_PONGS_TRACKED, type ProbingConfig } from '../overlay/probing.ts'
import type { Message, ProbeTreeEntry } from '../overlay/messages.ts'
import { firstNumberOf } from '../overlay/incarnation-numbers.ts'
import { MAX_NEAR_HINTS } from '../overlay/near-peers.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { insertEvent, mulberry32, type Ev } from './core-loop.ts'


/** One incarnation of a peer. */
export class NetPeer {
  readonly probing: Probing
  /** Root -> parent, for the other members' trees. */
  readonly parents = new Map<PeerId, PeerId>()
  /** Pending 'probe' timers of this incarnation. */
  readonly probeTimers: number[] = []
  running = true
  /** Bursts started (membership changes that affected it). */
  /** Roots of trees reached through a far parent here (probeDetour's detours), made up by `judged` while the net churns. */
  readonly detours = new Set<PeerId>()
  triggers = 0
  lastTriggerAt = -Infinity

  constructor (readonly net: ProbingNet, readonly name: PeerId, readonly incarnation: number, readonly cfg: ProbingConfig) {
    const random = mulberry32(net.seed * 1009 + net.peerSeq++)
    this.probing = new Probing({
      self: name,
      random,
      alive: () => net.members(),
      isAlive: (p) => net.isMember(p),
      send: (to, msg) => { net.send(this, to, msg) },
      setTimer: (at, kind) => { net.timer(this, at, kind) },
      judged: (now, cand) => { this.judged(now, cand) },
      wantsDownload: () => random() < 0.5,
      parentlessCount: () => this.parentless(),
      isDetour: (root) => this.detours.has(root),
      detourRoots: (_far, max) => [...this.detours].slice(0, max),
      isRunning: () => this.running
    }, cfg)
    this.probing.numberFrom(firstNumberOf(incarnation))
  }

  /** Other members whose tree has no parent here. */
  parentless (): number {
    let n = 0
    for (const m of this.net.members()) if (m !== this.name && !this.parents.has(m)) n++
    return n
  }

  entries (): ProbeTreeEntry[] {
    const roots = [this.name, ...this.parents.keys()]
    return roots.map((root) => ({ root, dist: 1, est: 1, latChildren: 0, bwChildren: 0 }))
  }

  private judged (now: number, cand: PeerId): void {
    this.detours.delete(cand)
    const c = this.net.peer(cand)
    if (c === undefined || !this.net.isMember(cand)) return
    if (this.net.slowMs > 0 && this.net.random() < 0.1) {
      const roots = [...this.parents.keys()]
      const root = roots[Math.floor(this.net.random() * roots.length)]
      if (root !== undefined) { this.detours.add(root); this.probing.detourSeen(now, root, 1e9, 1e9) }
    }
    let better = false
    for (const e of c.entries()) {
      if (e.root === this.name || !this.net.isMember(e.root) || this.parents.has(e.root)) continue
      // No cycles of two: c's parent there is not this peer.
      if (c.parents.get(e.root) === this.name) continue
      this.parents.set(e.root, cand)
      better = true
    }
    if (better && this.net.news) this.probing.news(now)
  }
}

/** The network. */
export class ProbingNet {
  now = 0
  peerSeq = 0
  private readonly events: Ev[] = []
  private seq = 0
  private readonly live = new Map<PeerId, NetPeer>()
  private readonly memberSet = new Set<PeerId>()
  private readonly linkFree = new Map<string, number>()
  private readonly incarnations = new Map<PeerId, number>()
  /** Messages sent, for replaying some of them later (duplicates, forgeries). */
  readonly sent: Array<{ from: PeerId, to: PeerId, msg: Message }> = []
  readonly violations: string[] = []
  readonly random: () => number
  news = false
  /** Members whose probe replies carry made-up hints. */
  readonly liars = new Set<PeerId>()
  /** What the event being run is (for messages). */
  private lastEvent = ''
  /** Some messages are held up to this long (their link waits behind them); 0 when quiet. */
  slowMs = 300

  constructor (readonly seed: number, readonly cfg: ProbingConfig, readonly detectMs = 20) {
    this.random = mulberry32(seed)
  }

  members (): PeerId[] { return [...this.memberSet].sort() }
  isMember (p: PeerId): boolean { return this.memberSet.has(p) }
  peer (p: PeerId): NetPeer | undefined { return this.live.get(p) }
  peers (): NetPeer[] { return [...this.live.values()] }

  /** Founding members: each triggers once. */
  bootstrap (names: PeerId[]): void {
    for (const n of names) { this.memberSet.add(n); this.live.set(n, new NetPeer(this, n, 0, this.cfg)); this.incarnations.set(n, 0) }
    for (const n of names) this.trigger(this.live.get(n) as NetPeer)
  }

  /** `name` joins (a new incarnation if it ran before): every member gets a new tree to join. */
  join (name: PeerId): void {
    const inc = (this.incarnations.get(name) ?? -1) + 1
    this.incarnations.set(name, inc)
    const old = this.live.get(name)
    if (old !== undefined && this.memberSet.has(name)) this.gone(name, true)
    if (old !== undefined) old.running = false
    const p = new NetPeer(this, name, inc, this.cfg)
    this.live.set(name, p)
    this.memberSet.add(name)
    for (const q of this.live.values()) if (q.running && this.memberSet.has(q.name)) this.trigger(q)
  }

  /** A graceful leave: stops probing, answers until it is gone. */
  leave (name: PeerId): void {
    const p = this.live.get(name)
    if (p === undefined || !p.running) return
    p.probing.stop()
    p.running = false
    this.gone(name, false)
  }

  /** A crash: silent at once, noticed by the others `detectMs` later (unless it restarted). */
  crash (name: PeerId): void {
    const p = this.live.get(name)
    if (p === undefined || !p.running) return
    p.running = false
    this.at(this.now + this.detectMs, () => { if (this.live.get(name) === p && this.memberSet.has(name)) this.gone(name, false) })
  }

  /** `name` is no longer a member: it is forgotten as a probe target, its trees go, its children probe. */
  private gone (name: PeerId, restarted: boolean): void {
    this.memberSet.delete(name)
    for (const q of this.live.values()) {
      if (q.name === name || !q.running) continue
      q.probing.targetGone(this.now, name)
      q.parents.delete(name)
      q.detours.delete(name)
      let orphaned = false
      for (const [root, parent] of q.parents) if (parent === name) { q.parents.delete(root); orphaned = true }
      if (orphaned) this.trigger(q)
    }
    if (restarted) this.memberSet.add(name)
  }

  private trigger (p: NetPeer): void {
    p.triggers++
    p.lastTriggerAt = this.now
    p.probing.trigger(this.now)
  }

  latency (a: PeerId, b: PeerId): number {
    let h = 0
    for (const ch of a < b ? a + b : b + a) h = (h * 31 + ch.charCodeAt(0)) >>> 0
    return 0.2 + (h % 50) / 10
  }

  send (from: NetPeer, to: PeerId, msg: Message, extraMs = 0): void {
    if (!from.running && msg.t !== 'pong' && msg.t !== 'probe-rep') return
    this.sent.push({ from: from.name, to, msg })
    if (this.sent.length > 4096) this.sent.splice(0, 2048)
    const key = `${from.name}>${to}`
    const bulk = msg.t === 'probe-rep' ? msg.padding / 10_000 : 0
    const at = Math.max(this.now + this.latency(from.name, to) + bulk + extraMs + (this.slowMs > 0 && this.random() < 0.02 ? this.random() * this.slowMs : 0), this.linkFree.get(key) ?? 0)
    this.linkFree.set(key, at)
    const receiver = this.live.get(to)
    this.at(at, () => {
      if (this.live.get(from.name) !== from) return // a crash loses what was in flight
      const r = this.live.get(to)
      if (r === undefined || r !== receiver) return
      this.deliver(r, from.name, msg)
    })
  }

  /** Handles `msg` at `r` as overlay/core.ts does. */
  deliver (r: NetPeer, from: PeerId, msg: Message): void {
    if (!r.running) return
    this.lastEvent = `${msg.t} from ${from}`
    const now = this.now
    switch (msg.t) {
      case 'ping': r.probing.pinged(now, from, msg.nonce); this.send(r, from, { t: 'pong', nonce: msg.nonce }); break
      case 'pong': r.probing.onPong(now, from, msg.nonce); break
      case 'offer': r.probing.offered(now, from); break
      case 'probe-req': {
        const near = r.probing.requested(now, from, msg.nonce)
        // A liar's hints name peers that do not exist.
        const hints = this.liars.has(r.name) ? Array.from({ length: MAX_NEAR_HINTS }, () => ({ peer: `x${Math.floor(this.random() * 1e9)}`, rttMs: this.random() })) : near
        this.send(r, from, { t: 'probe-rep', nonce: msg.nonce, trees: r.entries(), padding: msg.light === true ? 0 : 128 * 1024, near: hints })
        break
      }
      case 'probe-rep': r.probing.onReply(now, from, msg); break
      default: break
    }
  }

  timer (p: NetPeer, at: number, kind: 'probe' | 'steady'): void {
    if (kind === 'probe') p.probeTimers.push(at)
    this.at(at, () => {
      if (kind === 'probe') p.probeTimers.splice(p.probeTimers.indexOf(at), 1)
      if (!p.running) return
      this.lastEvent = `${kind} timer`
      if (kind === 'probe') p.probing.onTimer(this.now)
      else p.probing.onSteadyTimer(this.now)
    })
  }

  at (at: number, run: () => void): void {
    insertEvent(this.events, { at, seq: this.seq++, run })
  }

  /** Runs events up to `until`, checking the invariants after each. */
  run (until: number): void {
    for (;;) {
      const e = this.events[0]
      if (e === undefined || e.at > until) break
      this.events.shift()
      this.now = Math.max(this.now, e.at)
      // Without news, detours and steady probes, a peer probes only in a burst (003: unaffected peers do not probe).
      const only003 = this.cfg.treeNewsGapMs <= 0 && !this.cfg.probeDetour && this.cfg.steadyProbeIntervalMs <= 0
      this.lastEvent = 'churn'
      const idle = only003 ? this.peers().filter((p) => p.running && !p.probing.isProbing).map((p) => ({ p, started: p.probing.started, triggers: p.triggers })) : []
      e.run()
      for (const { p, started, triggers } of idle) {
        if (p.probing.started > started && p.triggers === triggers && this.violations.length < 20) this.violations.push(`seed ${this.seed} t=${this.now.toFixed(3)} ${p.name}#${p.incarnation}: probed outside a burst (on ${this.lastEvent})`)
      }
      this.check()
    }
    this.now = Math.max(this.now, until)
  }

  /** Invariants of every running peer's probing. */
  check (): void {
    const bad = (p: NetPeer, what: string): void => {
      if (this.violations.length < 20) this.violations.push(`seed ${this.seed} t=${this.now.toFixed(3)} ${p.name}#${p.incarnation}: ${what}`)
    }
    const alive = this.memberSet.size
    for (const p of this.live.values()) {
      if (!p.running) continue
      const x = p.probing as unknown as Internals
      for (const [lane, runner] of [['main', x.runner], ['near', x.nearRunner]] as const) {
        const c = runner?.current
        if (c === null || c === undefined) continue
        const deadline = c.sentAt + this.cfg.probeTimeoutMs
        if (!p.probeTimers.some((t) => t <= deadline + 1e-6)) bad(p, `${lane} lane probes ${c.target} with no probe timer by its deadline ${deadline}`)
      }
      if (p.probing.isProbing && !(x.runner.current !== null || x.nearRunner?.current != null || p.probeTimers.length > 0)) bad(p, 'probing with no probe in flight and no timer: stuck')
      if (x.pongAt.size > MAX_PONGS_TRACKED) bad(p, `pongAt holds ${x.pongAt.size}`)
      if (x.offers.length > MAX_OFFERS) bad(p, `offers ${x.offers.length}`)
      if (x.detours.length > MAX_DETOURS) bad(p, `detours ${x.detours.length}`)
      for (const q of x.bandwidths.byPeer.keys()) if (!this.memberSet.has(q)) bad(p, `bandwidth of gone peer ${q} kept`)
      for (const q of this.memberSet) {
        const rtt = p.probing.rttOf(q)
        if (rtt !== undefined && rtt < 2 * this.latency(p.name, q) - 1e-6) bad(p, `measured RTT ${rtt} to ${q}, below the link's ${2 * this.latency(p.name, q)}`)
      }
      const s = p.probing['near' as keyof Probing] as unknown as { size: { measured: number, hinted: number } }
      if (s.size.measured + s.size.hinted > 2 * alive + 16 + 2 * MAX_NEAR_HINTS) bad(p, `near table holds ${s.size.measured} + ${s.size.hinted} for ${alive} members`)
    }
  }
}

/** What the invariants read inside Probing (test-only access). */
interface RunnerInternals { current: { target: PeerId, sentAt: number } | null }
interface Internals {
  runner: RunnerInternals
  nearRunner: RunnerInternals | null
  pongAt: Map<PeerId, unknown>
  offers: PeerId[]
  detours: PeerId[]
  bandwidths: { byPeer: Map<PeerId, unknown> }
}
