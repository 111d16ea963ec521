/**
 * A tiny in-test message loop over several composed cores (overlay/core.ts): per-pair fixed
 * latency, FIFO links, a transfer time for bulky messages, timers at `nextTimeoutAt()`.
 * Shared by test/core*.test.ts, test/collective.test.ts, test/fallback-fanout.test.ts and
 * test/tree-restarts.test.ts.
 */
import { isTreeRoot } from '../overlay/tree-roots.ts'
import { expect } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { TreecastCore } from '../overlay/core.ts'
import type { CoreInit } from '../overlay/config.ts'
import type { FactsMessage, Message } from '../overlay/messages.ts'
import type { Output } from '../overlay/outputs.ts'
import type { ContributeFn } from '../overlay/reduction.ts'
import type { CombineFn } from '../overlay/reduce-ops.ts'
import { decodeMessage, encodeMessage } from '../overlay/codec.ts'

/** Bulk bytes per ms on every link (10 MB/s): a 128 KB probe download takes ~13 ms. */
export const BYTES_PER_MS = 10_000

/** Deterministic uniform numbers in [0,1). */
export function mulberry32 (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Each virtual node v contributes [v + 1, 1, v * v] (max: v; absmax: -v). */
export const contribute: ContributeFn = (_id, start, vnodes) => {
  const out = new Float64Array(start.length)
  for (const v of vnodes.values()) {
    if (start.op === 'max') { out[0] = Math.max(out[0] as number, v); continue }
    if (start.op === 'absmax') { out[0] = Math.min(out[0] as number, -v); continue }
    out[0] = (out[0] as number) + v + 1
    if (start.length > 1) out[1] = (out[1] as number) + 1
    if (start.length > 2) out[2] = (out[2] as number) + v * v
  }
  return out
}

export interface Ev { at: number, seq: number, run: () => void }

/** Inserts `e` into `events`, kept sorted by time, then by scheduling order (FIFO among equal times). */
export function insertEvent (events: Ev[], e: Ev): void {
  let i = events.length
  while (i > 0) {
    const p = events[i - 1] as Ev
    if (p.at < e.at || (p.at === e.at && p.seq < e.seq)) break
    i--
  }
  events.splice(i, 0, e)
}
export interface Logged { at: number, peer: PeerId, out: Output }
export interface SentMsg { at: number, from: PeerId, to: PeerId, message: Message }

export interface LoopOptions {
  config?: CoreInit
  /** Round-trip every message through the wire codec. */
  wire?: boolean
  /** Delay between a crash and the survivors' peerDown. */
  detectMs?: number
  ops?: Record<string, CombineFn>
  /** One-way latency per pair (ms); default 1-3 ms from the peers' creation order. */
  latency?: (a: PeerId, b: PeerId) => number
  /** Called with every contribution a core asks for (default: none). */
  onContribute?: (peer: PeerId, id: string, vnodes: IntervalSet) => void
  /** The contribution of `peer` instead of {@link contribute}'s (a misbehaving application). */
  contributeOverride?: (peer: PeerId, id: string, start: Parameters<ContributeFn>[1], vnodes: IntervalSet) => Float64Array
}

/** A handful of cores and the network between them. */
export class Loop {
  readonly cores = new Map<PeerId, TreecastCore>()
  readonly down = new Set<PeerId>()
  /** Peers that left: their in-flight messages still arrive, nothing reaches them. */
  readonly gracefullyGone = new Set<PeerId>()
  readonly log: Logged[] = []
  readonly sent: SentMsg[] = []
  readonly violations: string[] = []
  now = 0
  private events: Ev[] = []
  private seq = 0
  private readonly linkFree = new Map<string, number>()
  private readonly names: PeerId[] = []
  /** What each core owns as of its last ownership output (the invariant checks of `after`). */
  private readonly ownedNow = new Map<PeerId, IntervalSet>()
  /** Senders told of an unreachable peer (`unreachable`), by `from>to#incarnation`. */
  private readonly toldDown = new Map<string, TreecastCore>()

  constructor (readonly opts: LoopOptions = {}) {}

  create (name: PeerId): TreecastCore {
    this.names.push(name)
    this.ownedNow.delete(name)
    const core = new TreecastCore({
      self: name,
      random: mulberry32(this.names.length * 7919),
      contribute: (id, start, vnodes) => { this.opts.onContribute?.(name, id, vnodes); return this.opts.contributeOverride?.(name, id, start, vnodes) ?? contribute(id, start, vnodes) },
      ...(this.opts.ops !== undefined ? { ops: this.opts.ops } : {}),
      config: { ...this.opts.config }
    })
    this.cores.set(name, core)
    return core
  }

  core (name: PeerId): TreecastCore {
    const c = this.cores.get(name)
    if (c === undefined) throw new Error(`no core ${name}`)
    return c
  }

  /** Founding members: all bootstrap with the same list. */
  bootstrap (vnodes: number, names: PeerId[]): void {
    for (const n of names) this.create(n)
    for (const n of names) this.input(n, (c) => c.bootstrap(this.now, vnodes, names))
  }

  /** Fixed per-pair one-way latency, 1-3 ms. */
  latency (a: PeerId, b: PeerId): number {
    if (this.opts.latency !== undefined) return this.opts.latency(a, b)
    return 1 + ((this.names.indexOf(a) + this.names.indexOf(b)) % 3)
  }

  /** Runs an API call (or any input) on a core and routes what it produced. */
  input<T> (name: PeerId, fn: (c: TreecastCore) => T): T {
    const r = fn(this.core(name))
    this.after(name)
    return r
  }

  running (): PeerId[] {
    return [...this.cores.keys()].filter((n) => !this.down.has(n) && this.core(n).state === 'running')
  }

  /** Crash: no word, in-flight messages to and from it are lost; survivors notice later. */
  crash (name: PeerId): void {
    this.down.add(name)
    this.schedule(this.now + (this.opts.detectMs ?? 20), () => this.peerDownEverywhere(name))
  }

  outputs (type: Output['type'], peer?: PeerId): Logged[] {
    return this.log.filter((l) => l.out.type === type && (peer === undefined || l.peer === peer))
  }

  /** Deliveries of one stream: who got which virtual nodes. */
  deliveries (id: string): Array<{ peer: PeerId, at: number, out: Extract<Output, { type: 'deliver' }> }> {
    const out: Array<{ peer: PeerId, at: number, out: Extract<Output, { type: 'deliver' }> }> = []
    for (const l of this.log) if (l.out.type === 'deliver' && l.out.id === id) out.push({ peer: l.peer, at: l.at, out: l.out })
    return out
  }

  /** Everyone up knows everyone up, nobody probes, everyone has a parent in every tree. */
  stable (): boolean {
    for (const [n, c] of this.cores) if (!this.down.has(n) && (c.state === 'joining' || c.state === 'leaving')) return false
    const up = this.running()
    for (const n of up) {
      const c = this.core(n)
      if (c.isProbing) return false
      if (c.members.alive().length !== up.length) return false
      // Both trees of every other root (with a treeRootStride, only the tree roots have trees).
      const roots = up.filter((p) => p !== n && isTreeRoot(p, this.opts.config?.treeRootStride ?? 1)).length
      if (c.trees.connectedCount !== 2 * roots) return false
    }
    return true
  }

  /** Processes every event due up to now + ms. */
  run (ms: number): void {
    const until = this.now + ms
    while (this.step(until));
    this.now = Math.max(this.now, until)
  }

  /** Processes events until `pred` holds; fails after `maxMs` of virtual time. */
  runUntil (pred: () => boolean, maxMs = 10_000, what = 'condition'): void {
    const until = this.now + maxMs
    while (!pred()) {
      if (!this.step(until)) throw new Error(`${what} not reached by t=${until} (now ${this.now})`)
    }
  }

  /** Asserts no invariant was broken so far. */
  ok (): void {
    expect(this.violations).toEqual([])
  }

  /** Runs `run` at `at` (virtual time), after what is due before. */
  schedule (at: number, run: () => void): void {
    insertEvent(this.events, { at, seq: this.seq++, run })
  }

  private step (until: number): boolean {
    let timerPeer: PeerId | undefined
    let timerAt = Infinity
    for (const [n, c] of this.cores) {
      if (this.down.has(n)) continue
      const t = c.nextTimeoutAt()
      if (t !== undefined && t < timerAt) { timerAt = t; timerPeer = n }
    }
    const head = this.events[0]
    const evAt = head?.at ?? Infinity
    if (Math.min(evAt, timerAt) > until) return false
    if (head !== undefined && evAt <= timerAt) {
      this.events.shift()
      this.now = Math.max(this.now, evAt)
      head.run()
      return true
    }
    if (timerPeer === undefined) return false
    this.now = Math.max(this.now, timerAt)
    const p = timerPeer
    this.input(p, (c) => c.handleTimeout(this.now))
    return true
  }

  private after (name: PeerId): void {
    const core = this.core(name)
    const outs = core.takeOutputs()
    // One input may change the owned set more than once: the last change must be the state.
    const lastOwnership = outs.filter((o) => o.type === 'ownership').pop()
    for (const out of outs) {
      if (out.type === 'send') { this.send(name, out.to, out.message); continue }
      this.log.push({ at: this.now, peer: name, out })
      // Against what it owned at that point of its outputs: one input may take ranges over, deliver there and hand them on.
      if (out.type === 'ownership') this.ownedNow.set(name, out.owned)
      if (out.type === 'deliver' && out.mode !== 'direct' && !(this.ownedNow.get(name) ?? IntervalSet.EMPTY).containsAll(out.vnodes)) {
        this.violations.push(`t=${this.now} ${name} delivered ${out.vnodes.toString()} of ${out.id} without owning them`)
      }
      if (out === lastOwnership && out.type === 'ownership' && !out.owned.equals(core.ownedSet)) {
        this.violations.push(`t=${this.now} ${name} ownership output ${out.owned.toString()} differs from ownedSet`)
      }
      if (out.type === 'left') {
        // The driver closes its connections once the core says it may: each peer sees the
        // close after whatever was already sent to it on that connection (TCP order).
        // The close is that incarnation's (a restart under the name may have joined by then), as the node says.
        const inc = core.members.incarnationOf(name)
        for (const n of this.cores.keys()) {
          if (n === name) continue
          const at = Math.max(this.now + 1, (this.linkFree.get(`${name}>${n}`) ?? 0) + 0.001)
          this.schedule(at, () => { if (!this.down.has(n)) this.input(n, (c) => c.peerDown(this.now, name, inc)) })
        }
        this.gracefullyGone.add(name)
      }
    }
    this.checkOwners()
  }

  /** No virtual node has two owners at any instant. */
  private checkOwners (): void {
    const up = [...this.cores].filter(([n]) => !this.down.has(n))
    for (let i = 0; i < up.length; i++) {
      for (let j = i + 1; j < up.length; j++) {
        const [a, ca] = up[i] as [PeerId, TreecastCore]
        const [b, cb] = up[j] as [PeerId, TreecastCore]
        const both = ca.ownedSet.intersection(cb.ownedSet)
        if (!both.isEmpty) this.violations.push(`t=${this.now} ${a} and ${b} both own ${both.toString()}`)
      }
    }
  }

  /**
   * A message from `from` to a peer that crashed or left: as the node's failed dial does,
   * `from` is told the peer is down (once per incarnation; it may have joined after the close
   * that the others saw, or not been told of it yet).
   */
  private unreachable (from: PeerId, to: PeerId): void {
    const gone = this.cores.get(to)
    const sender = this.cores.get(from)
    if (gone === undefined || sender === undefined) return
    const inc = gone.members.incarnationOf(to)
    const key = `${from}>${to}#${inc}`
    if (this.toldDown.get(key) === sender) return
    this.toldDown.set(key, sender)
    this.schedule(this.now + 1, () => { if (!this.down.has(from) && this.cores.get(from) === sender) this.input(from, (c) => c.peerDown(this.now, to, inc)) })
  }

  private peerDownEverywhere (gone: PeerId): void {
    for (const n of this.cores.keys()) {
      if (n === gone || this.down.has(n)) continue
      this.input(n, (c) => c.peerDown(this.now, gone))
    }
  }

  private send (from: PeerId, to: PeerId, message: Message): void {
    if (this.down.has(from) || this.gracefullyGone.has(from)) return
    const m = this.opts.wire === true ? decodeMessage(encodeMessage(message)) : message
    this.sent.push({ at: this.now, from, to, message: m })
    const bytes = m.t === 'probe-rep' ? m.padding : m.t === 'chunk' ? m.data.length : m.t === 'partial' ? m.value.byteLength : 0
    const key = `${from}>${to}`
    const at = Math.max(this.now + this.latency(from, to) + bytes / BYTES_PER_MS, this.linkFree.get(key) ?? 0)
    this.linkFree.set(key, at)
    // A restart (a new core under the name) loses what was in flight from or to the one before.
    const sender = this.cores.get(from)
    const receiver = this.cores.get(to)
    this.schedule(at, () => {
      if (this.down.has(from) || this.cores.get(from) !== sender) return
      if (this.down.has(to) || this.gracefullyGone.has(to)) { this.unreachable(from, to); return }
      const c = this.cores.get(to)
      if (c === undefined || (receiver !== undefined && c !== receiver)) return
      this.input(to, (core) => core.handle(this.now, from, m))
    })
  }
}

export const PEERS5 = ['p0', 'p1', 'p2', 'p3', 'p4']

/** Five founding members, trees settled. */
export function settled (vnodes = 23, opts: LoopOptions = {}, names = PEERS5): Loop {
  const loop = new Loop(opts)
  loop.bootstrap(vnodes, names)
  loop.runUntil(() => loop.stable(), 10_000, 'stable trees')
  loop.ok()
  return loop
}

/** Every virtual node 0..V-1 got stream `id` exactly once, at its owner. */
export function expectExactlyOnce (loop: Loop, id: string, vnodes: number, among?: ReadonlySet<PeerId>): void {
  let all = IntervalSet.EMPTY
  let total = 0
  for (const d of loop.deliveries(id)) {
    if (among !== undefined && !among.has(d.peer)) continue
    expect(all.intersects(d.out.vnodes), `${id}: ${d.out.vnodes.toString()} delivered twice`).toBe(false)
    all = all.union(d.out.vnodes)
    total += d.out.vnodes.size
  }
  expect(all.equals(IntervalSet.range(0, vnodes)), `${id} reached ${all.toString()}`).toBe(true)
  expect(total).toBe(vnodes)
}

/** A lone core `a` of members a, b and c (8 virtual nodes) that has just declared `b` dead, its outputs so far taken. */
export function coreThatDeclaredBDead (): TreecastCore {
  const a = new TreecastCore({ self: 'a', random: () => 0.5, config: { suspectGraceMs: 0 } })
  a.bootstrap(0, 8, ['a', 'b', 'c'])
  a.peerDown(1, 'b')
  a.takeOutputs()
  return a
}

/** Once quiet: every virtual node owned by exactly one running peer, which every running view names; a broadcast from `root` reaches each once. */
export function expectAgreed (loop: Loop, vnodes: number, root: PeerId = 'p0'): void {
  const up = loop.running()
  for (let v = 0; v < vnodes; v++) {
    const owners = up.filter((n) => loop.core(n).ownedSet.has(v))
    expect([v, owners.length]).toEqual([v, 1])
    for (const n of up) expect([n, v, loop.core(n).view.ownerOf(v)]).toEqual([n, v, owners[0]])
  }
  const id = loop.input(root, (c) => c.broadcast(loop.now, Uint8Array.of(1)))
  loop.run(1000)
  expectExactlyOnce(loop, id, vnodes)
  loop.ok()
}

/** A `facts` message of an overlay of `vnodeCount` virtual nodes: empty but for `f`. */
export function factsMessage (vnodeCount: number, f: Partial<FactsMessage>): FactsMessage {
  return { t: 'facts', vnodeCount, members: [], records: [], welcome: false, ...f }
}

/** {@link settled}, then `leaver` leaves (its ranges go to its successor) and is known to have left everywhere. */
export function settledAfterLeave (vnodes: number, leaver: PeerId): Loop {
  const loop = settled(vnodes)
  loop.input(leaver, (c) => c.leave(loop.now))
  loop.run(500)
  for (const n of loop.running()) expect([n, loop.core(n).members.statusOf(leaver)]).toEqual([n, 'left'])
  return loop
}
