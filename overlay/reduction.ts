/**
 * Reductions (003 §IV-E). The root starts a reduction with a stream down its latency tree;
 * every peer contributes for the virtual nodes the start was delivered to (so each virtual
 * node contributes once), waits for the peers it forwarded the start to, but only up to a
 * timeout derived from its largest known distance to a root, then sends what it has to the
 * peer it got the start from. Late data and data from non-children are forwarded as they
 * arrive. Every partial result carries the exact interval set it covers; the root merges
 * only disjoint partials, so nothing is counted twice, and asks the owners of whatever is
 * still missing after its timeout directly (that covers partials lost with a crashed peer).
 *
 * The timeout guards against a start that went astray, which is a matter of latency; a
 * long array's partials also take their transfer time, hop by hop, and a timeout fired
 * during it turned every partial below into a late one forwarded on its own (an array of
 * 2^17 elements took 65x MagPIe-like's time). So a part whose receiver acknowledged the
 * start (its whole subtree has it) is waited for past the timeout as long as that receiver
 * is alive: a partial always goes to the peer that sent the start, whatever the trees do
 * meanwhile, so only a crash or a hang stops it, and the driver's liveness checks (these
 * receivers are awaited peers) turn a hang into a crash.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipMap } from '../virtual-nodes/ownership-map.ts'
import type { Message, PartialMessage, PullMessage, ReduceStart } from './messages.ts'
import type { OpRegistry } from './reduce-ops.ts'

/** Supplies a peer's contribution for a set of its virtual nodes. */
export type ContributeFn = (id: string, start: ReduceStart, vnodes: IntervalSet) => Float64Array

/** What the reduction engine needs from the peer around it. */
export interface ReductionHost {
  readonly self: PeerId
  readonly view: OwnershipMap
  vnodeCount (): number
  owned (): IntervalSet
  isAlive (peer: PeerId): boolean
  send (to: PeerId, msg: Message): void
  contribute: ContributeFn
  readonly ops: OpRegistry
  timeoutMs (): number
  setTimer (at: number, id: string): void
  reduced (id: string, value: Float64Array, covered: IntervalSet, startedAt: number): void
  failed (id: string, missing: IntervalSet): void
  reject (reason: string): void
}

interface Red {
  readonly id: string
  readonly root: PeerId
  readonly start: ReduceStart
  readonly upstream: PeerId | null
  expected: IntervalSet
  own: IntervalSet
  acc: Float64Array | null
  covered: IntervalSet
  sent: boolean
  done: boolean
  readonly startedAt: number
  /** Receivers that acknowledged the start, with the part each took, until they report. */
  readonly acked: Map<PeerId, IntervalSet>
  /** Peers a partial came from: what they did not cover is late, no longer under way. */
  readonly reported: Set<PeerId>
}

/** Counters of reduction activity. */
export interface ReductionStats { partialsMerged: number, partialsForwarded: number, overlapsDropped: number, pulls: number, late: number }

/** The reduction engine of one peer. */
export class Reductions {
  private readonly active = new Map<string, Red>()
  private readonly finished = new Set<string>()
  readonly stats: ReductionStats = { partialsMerged: 0, partialsForwarded: 0, overlapsDropped: 0, pulls: 0, late: 0 }

  constructor (private readonly host: ReductionHost, private readonly retryMs: number, private readonly maxDurationMs: number, private readonly finishedCapacity = 4096, private readonly maxActive = 4096) {}

  /** The start stream was routed here: contribute for `fresh`, expect partials for `forwarded`. */
  onRouted (now: number, id: string, root: PeerId, start: ReduceStart, from: PeerId | null, fresh: IntervalSet, forwarded: IntervalSet): void {
    if (this.finished.has(id)) return
    let r = this.active.get(id)
    if (r === undefined && this.active.size >= this.maxActive) { this.host.reject('too-many-reductions'); return }
    if (r === undefined) {
      r = { id, root, start, upstream: from, expected: IntervalSet.EMPTY, own: IntervalSet.EMPTY, acc: null, covered: IntervalSet.EMPTY, sent: false, done: false, startedAt: now, acked: new Map(), reported: new Set() }
      this.active.set(id, r)
      const wait = this.host.timeoutMs()
      this.host.setTimer(now + (root === this.host.self ? 2 * wait : wait), id)
    }
    if (r.start.op !== start.op || r.start.length !== start.length || r.root !== root) { this.host.reject('reduce-mismatch'); return }
    r.expected = r.expected.union(forwarded)
    if (!fresh.isEmpty) {
      r.own = r.own.union(fresh)
      this.take(r, fresh, this.host.contribute(id, r.start, fresh))
    }
    this.check(now, r)
  }

  /** `to` acknowledged the start of reduction `id` for `part`: its partial is on the way. */
  onStartAcked (id: string, to: PeerId, part: IntervalSet): void {
    const r = this.active.get(id)
    if (r === undefined || r.done || r.reported.has(to)) return
    r.acked.set(to, (r.acked.get(to) ?? IntervalSet.EMPTY).union(part))
  }

  /** Where this peer's partial of reduction `id` goes (undefined: not active here). */
  sendsTo (id: string): PeerId | undefined {
    const r = this.active.get(id)
    return r === undefined ? undefined : this.target(r)
  }

  /** Receivers whose partials this peer still waits for (the driver checks they are alive). */
  awaitedPeers (): Set<PeerId> {
    const out = new Set<PeerId>()
    for (const r of this.active.values()) {
      if (r.done || (r.sent && r.root !== this.host.self)) continue
      for (const [peer, part] of r.acked) if (!r.covered.containsAll(part)) out.add(peer)
    }
    return out
  }

  /** A partial result arrived from `from`. */
  onPartial (now: number, from: PeerId, msg: PartialMessage): void {
    const combine = this.host.ops.get(msg.op)
    if (combine === undefined) { this.host.reject('unknown-op'); return }
    const r = this.active.get(msg.id)
    if (r === undefined) {
      if (this.finished.has(msg.id) || msg.root === this.host.self) { this.stats.late++; return }
      this.stats.partialsForwarded++
      this.host.send(msg.root, msg)
      return
    }
    if (msg.value.length !== r.start.length || msg.op !== r.start.op) { this.host.reject('partial-mismatch'); return }
    if (!IntervalSet.range(0, this.host.vnodeCount()).containsAll(msg.covered)) { this.host.reject('partial-out-of-range'); return }
    // A receiver sends its partial once: whatever of its part is still missing after that
    // comes late, if at all, and is not waited for.
    r.reported.add(from)
    r.acked.delete(from)
    this.take(r, msg.covered, msg.value)
    this.check(now, r)
  }

  /** The root asks for contributions of virtual nodes it is missing. */
  onPull (msg: PullMessage, maxHops: number): void {
    const owned = this.host.owned()
    const mine = msg.want.intersection(owned)
    const start: ReduceStart = { op: msg.op, rootVnode: 0, length: msg.length }
    if (!mine.isEmpty) {
      const value = this.host.contribute(msg.id, start, mine)
      this.host.send(msg.root, { t: 'partial', id: msg.id, root: msg.root, op: msg.op, covered: mine, value })
    }
    const rest = msg.want.difference(mine)
    if (rest.isEmpty || msg.hops >= maxHops) return
    for (const [owner, part] of this.host.view.partition(rest)) {
      if (owner === this.host.self || !this.host.isAlive(owner)) continue
      this.host.send(owner, { ...msg, want: part, hops: msg.hops + 1 })
    }
  }

  /** A reduction's timer fired. */
  onTimer (now: number, id: string): void {
    const r = this.active.get(id)
    if (r === undefined || r.done) return
    if (r.root !== this.host.self) {
      if (!r.sent) {
        const missing = r.expected.union(r.own).difference(r.covered)
        if (!missing.isEmpty && this.inProgress(r).containsAll(missing) && now - r.startedAt <= this.maxDurationMs) {
          this.host.setTimer(now + this.host.timeoutMs(), id)
          return
        }
        this.sendUp(r)
      }
      if (now - r.startedAt > this.maxDurationMs) this.forget(r)
      else this.host.setTimer(now + this.maxDurationMs, id)
      return
    }
    const missing = IntervalSet.range(0, this.host.vnodeCount()).difference(r.covered)
    if (now - r.startedAt > this.maxDurationMs) {
      this.forget(r)
      this.host.failed(id, missing)
      return
    }
    this.pull(r, missing.difference(this.inProgress(r)))
    this.host.setTimer(now + Math.max(this.retryMs, this.host.timeoutMs()), id)
  }

  /** What live receivers that acknowledged the start are still working on. */
  private inProgress (r: Red): IntervalSet {
    let parts = IntervalSet.EMPTY
    for (const [peer, part] of r.acked) if (this.host.isAlive(peer)) parts = parts.union(part)
    return parts.difference(r.covered)
  }

  /** Leaving: send every partial result on now. */
  flush (): void {
    for (const r of this.active.values()) if (!r.sent && r.root !== this.host.self) this.sendUp(r)
  }

  /** Reductions in flight here. */
  get activeCount (): number { return this.active.size }

  private take (r: Red, covered: IntervalSet, value: Float64Array): void {
    if (covered.isEmpty) return
    const disjoint = !r.covered.intersects(covered)
    if (disjoint && !(r.sent && r.root !== this.host.self)) {
      if (r.acc === null) r.acc = Float64Array.from(value)
      else (this.host.ops.get(r.start.op) ?? noop)(r.acc, value)
      r.covered = r.covered.union(covered)
      this.stats.partialsMerged++
      return
    }
    if (r.root === this.host.self) {
      // Overlapping data at the root: dropped; whatever it alone covered is pulled again.
      this.stats.overlapsDropped++
      return
    }
    this.stats.partialsForwarded++
    this.host.send(this.target(r), { t: 'partial', id: r.id, root: r.root, op: r.start.op, covered, value })
  }

  private check (now: number, r: Red): void {
    if (r.root === this.host.self) {
      if (r.covered.containsAll(IntervalSet.range(0, this.host.vnodeCount())) && r.acc !== null) {
        this.forget(r)
        this.host.reduced(r.id, r.acc, r.covered, r.startedAt)
      }
      return
    }
    if (!r.sent && r.covered.containsAll(r.expected.union(r.own))) this.sendUp(r)
    void now
  }

  private sendUp (r: Red): void {
    r.sent = true
    if (r.acc === null || r.covered.isEmpty) return
    this.host.send(this.target(r), { t: 'partial', id: r.id, root: r.root, op: r.start.op, covered: r.covered, value: r.acc })
  }

  private target (r: Red): PeerId {
    return r.upstream !== null && this.host.isAlive(r.upstream) ? r.upstream : r.root
  }

  private pull (r: Red, missing: IntervalSet): void {
    const owned = this.host.owned()
    const mine = missing.intersection(owned)
    if (!mine.isEmpty) this.take(r, mine, this.host.contribute(r.id, r.start, mine))
    for (const [owner, part] of this.host.view.partition(missing.difference(mine))) {
      if (owner === this.host.self || !this.host.isAlive(owner)) continue
      this.stats.pulls++
      this.host.send(owner, { t: 'pull', id: r.id, root: r.root, op: r.start.op, length: r.start.length, want: part, hops: 0 })
    }
  }

  private forget (r: Red): void {
    r.done = true
    this.active.delete(r.id)
    this.finished.add(r.id)
    if (this.finished.size > this.finishedCapacity) {
      const oldest = this.finished.values().next().value
      if (oldest !== undefined) this.finished.delete(oldest)
    }
  }
}

function noop (): void {}
