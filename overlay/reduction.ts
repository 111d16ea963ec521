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
 * receivers are awaited peers) turn a hang into a crash. So is a receiver the start is
 * still on its way to (not acknowledged yet, `inFlight`): on busy links acknowledgements
 * come late, and the root pulling such parts as lost sent every remote owner's whole array
 * over the wide area at each of a stream of long reductions.
 *
 * Segments. A start with `segment` splits the array into segments, and every rule above
 * applies to each segment on its own: a peer sends segment k up as soon as segment k
 * covers its part, while later segments are still arriving, so a long partial is pipelined
 * up the tree instead of stored and forwarded whole at each hop (003 pipelines broadcasts
 * the same way). A receiver counts as reported once all its segments have come.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipMap } from '../virtual-nodes/ownership-map.ts'
import type { CombinePlan, Message, PartialMessage, PullMessage, ReduceAckMessage, ReduceStart } from './messages.ts'
import type { OpRegistry } from './reduce-ops.ts'
import { PullAnswers } from './pull-answers.ts'
import { allSent, collectiveStart, concat, coveredAll, forgetPeer, MAX_UNSEGMENTED_LENGTH, newRed, partialOf, PULL_PATIENCE, segLength, sentElsewhere, viaOf, type Red, type Seg } from './reduction-state.ts'

export { MAX_UNSEGMENTED_LENGTH, PULL_PATIENCE, reduceStart } from './reduction-state.ts'

/** Supplies a peer's contribution for a set of its virtual nodes. */
export type ContributeFn = (id: string, start: ReduceStart, vnodes: IntervalSet) => Float64Array

/** What the reduction engine needs from the peer around it. */
export interface ReductionHost {
  readonly self: PeerId
  readonly view: OwnershipMap
  vnodeCount (): number
  owned (): IntervalSet
  isAlive (peer: PeerId): boolean
  /** What the start of reduction `id` still carries down from here, unacknowledged, to live receivers. */
  inFlight (id: string): IntervalSet
  send (to: PeerId, msg: Message): void
  contribute: ContributeFn
  readonly ops: OpRegistry
  timeoutMs (): number
  setTimer (at: number, id: string): void
  reduced (id: string, value: Float64Array, covered: IntervalSet, startedAt: number): void
  failed (id: string, missing: IntervalSet): void
  reject (reason: string): void
  /** This peer's parent in `root`'s latency tree (null: none) and what its live children there reach. */
  route (root: PeerId): { parent: PeerId | null, below: IntervalSet }
  /** Of `vnodes`, those no owner contributed to collective reduction `id` yet, now marked contributed (the mark travels with hand-offs). */
  claim (id: string, vnodes: IntervalSet): IntervalSet
}

/** Counters of reduction activity. */
export interface ReductionStats { partialsMerged: number, partialsForwarded: number, overlapsDropped: number, pulls: number, late: number, siblingsAnnounced: number }

/** The reduction engine of one peer. */
export class Reductions {
  private readonly active = new Map<string, Red>()
  private readonly finished = new Set<string>()
  /** Collective reductions called here, the latest `finishedCapacity`. */
  private readonly called = new Set<string>()
  readonly stats: ReductionStats = { partialsMerged: 0, partialsForwarded: 0, overlapsDropped: 0, pulls: 0, late: 0, siblingsAnnounced: 0 }

  /** Reductions this peer (not their root) sent all of up: kept without arrays and outside `maxActive` to forward late
   * partials the same way (counted in, they made every peer but the root refuse new ones after 4,096 in a minute). */
  private readonly sentUp = new Set<Red>()
  private readonly pulls: PullAnswers

  constructor (private readonly host: ReductionHost, private readonly retryMs: number, private readonly maxDurationMs: number, private readonly finishedCapacity = 4096, private readonly maxActive = 4096) {
    this.pulls = new PullAnswers(host)
  }

  /** Reductions under way here (those only kept to forward late partials aside). */
  private get busy (): number { return this.active.size - this.sentUp.size }

  /** The start stream was routed here: contribute for `fresh`, expect partials for `forwarded`. */
  onRouted (now: number, id: string, root: PeerId, start: ReduceStart, from: PeerId | null, fresh: IntervalSet, forwarded: IntervalSet, combine?: CombinePlan): void {
    if (this.finished.has(id)) return
    let r = this.active.get(id)
    if (r === undefined && this.busy >= this.maxActive) { this.host.reject('too-many-reductions'); return }
    if (r === undefined) {
      r = newRed(now, id, root, start, from, viaOf(combine, this.host.self, from, root), false)
      this.active.set(id, r)
      const wait = this.host.timeoutMs()
      this.host.setTimer(now + (root === this.host.self ? 2 * wait : wait), id)
    }
    if (r.collective || r.start.op !== start.op || r.start.length !== start.length || r.start.segment !== start.segment || r.root !== root) { this.host.reject('reduce-mismatch'); return }
    if (from !== null && allSent(r)) r.late.add(from) // all sent up already: see `partialAway`
    // A combining plan adds the parts of the siblings that send their partials here.
    r.expected = r.expected.union(forwarded)
    if (combine !== undefined) r.expected = r.expected.union(combine.extra.intersection(IntervalSet.range(0, this.host.vnodeCount())))
    if (!fresh.isEmpty) {
      r.own = r.own.union(fresh)
      this.take(r, fresh, this.host.contribute(id, r.start, fresh), undefined)
    }
    this.check(now, r)
  }

  /**
   * The application called collective reduction `id` here (003 §IV-E: every peer calls the
   * reduction and leaves begin by sending up; no start travels down). Contributes for the
   * owned virtual nodes that no earlier owner contributed for, waits for this peer's
   * children in the root's latency tree up to the timeout (set now, as 003 says), then
   * sends up to its parent there. At the root, the result is output once every virtual
   * node is in; what is missing after twice the timeout is pulled, as for a started one.
   * The caller checks {@link collectiveState} first.
   */
  collect (now: number, id: string, root: PeerId, start: ReduceStart): void {
    this.markCalled(id)
    const r = this.active.get(id) ?? this.relay(now, id, root, start)
    r.called = true
    const wait = this.host.timeoutMs()
    this.host.setTimer(now + (root === this.host.self ? 2 * wait : wait), id)
    if (root !== this.host.self) r.expected = r.expected.union(this.host.route(root).below)
    const fresh = this.host.claim(id, this.host.owned())
    if (!fresh.isEmpty) {
      r.own = r.own.union(fresh)
      this.take(r, fresh, this.host.contribute(id, r.start, fresh), undefined)
    }
    this.check(now, r)
  }

  /**
   * Where collective reduction `id` stands here: `relaying` when partials (or, for a long
   * one, its start) came before the call, `mismatch` when it runs with another shape,
   * operation or root.
   */
  collectiveState (id: string, root: PeerId, start: ReduceStart): 'new' | 'relaying' | 'called' | 'ended' | 'mismatch' | 'full' {
    if (this.called.has(id)) return 'called'
    if (this.finished.has(id)) return 'ended'
    const r = this.active.get(id)
    if (r === undefined) return this.busy >= this.maxActive ? 'full' : 'new'
    if (r.root !== root || r.start.op !== start.op || r.start.length !== start.length || r.start.segment !== start.segment) return 'mismatch'
    // A started one here (a long collective's start came first) was called only at its root.
    if (!r.collective) return root === this.host.self ? 'called' : 'relaying'
    return r.called ? 'called' : 'relaying'
  }

  /** The application called collective reduction `id` here (a second call is refused). */
  markCalled (id: string): void {
    this.called.add(id)
    if (this.called.size > this.finishedCapacity) {
      const oldest = this.called.values().next().value
      if (oldest !== undefined) this.called.delete(oldest)
    }
  }

  /**
   * A collective reduction this peer has not called (yet): it relays its children's
   * partials, expecting its own part too, until its timeout (the root: until it is called).
   */
  private relay (now: number, id: string, root: PeerId, start: ReduceStart): Red {
    const route = this.host.route(root)
    const r = newRed(now, id, root, start, route.parent, null, true)
    this.active.set(id, r)
    if (root === this.host.self) this.host.setTimer(now + this.maxDurationMs + 1, id)
    else {
      r.expected = route.below.union(this.host.owned())
      this.host.setTimer(now + this.host.timeoutMs(), id)
    }
    return r
  }

  /**
   * `to` acknowledged the start of reduction `id` for `part`: its partial is on the way. Not
   * from a peer known gone (its acknowledgement crossed its leave: no partial comes; kept,
   * its next incarnation was waited for up to reduceMaxDurationMs: migration-fuzz 30449).
   */
  onStartAcked (id: string, to: PeerId, part: IntervalSet): void {
    const r = this.active.get(id)
    if (r === undefined || r.done || r.reported.has(to) || !this.host.isAlive(to)) return
    r.acked.set(to, (r.acked.get(to) ?? IntervalSet.EMPTY).union(part))
  }

  /**
   * `from` announced that its partial of reduction `id`, covering `part`, comes here (it is
   * a sibling under a combining plan, or its upstream is gone): waited for past the timeout
   * while `from` is alive, but, as any peer can send this, only within a patience. Only
   * what this peer expects counts.
   */
  onReduceAck (now: number, from: PeerId, id: string, root: PeerId, part: IntervalSet): void {
    const r = this.active.get(id)
    if (r === undefined || r.done || r.root !== root || r.reported.has(from) || !this.host.isAlive(from)) return
    const expected = r.expected.intersection(part)
    if (expected.isEmpty) return
    this.stats.siblingsAnnounced++
    const prev = r.announced.get(from)
    r.announced.set(from, { part: prev === undefined ? expected : prev.part.union(expected), at: now, patienceMs: this.patienceMs() })
  }

  /** What this peer's partial of reduction `id` brings to where it goes now, for an announcement: empty when not active
   * here, or when a segment already went to another peer (announced, the new target waited for data not coming). */
  partOf (id: string): IntervalSet {
    const r = this.active.get(id)
    return r === undefined || sentElsewhere(r, this.target(r)) ? IntervalSet.EMPTY : r.expected.union(r.own)
  }

  /**
   * This peer acknowledged the start of reduction `id` as away: the message that tells the
   * peer its partial goes to (a sibling, or the root) what is coming, so that it waits for
   * it past its timeout; undefined when there is nothing to announce.
   */
  announcement (id: string, from: PeerId): { to: PeerId, msg: ReduceAckMessage } | undefined {
    const r = this.active.get(id)
    const part = this.partOf(id)
    if (r === undefined || r.late.has(from) || part.isEmpty || this.target(r) === this.host.self) return undefined
    return { to: this.target(r), msg: { t: 'reduce-ack', id, root: r.root, part } }
  }

  /**
   * Whether `from`, which sent this peer the start of reduction `id`, should not wait for this peer's partial: it goes
   * elsewhere, some of it already went elsewhere (its target changed when a peer died), or it had all gone up when
   * `from`'s start came (`late`: nothing more is awaited here; migration-fuzz 126787). Acknowledging normally then made
   * `from` wait for data that was not coming, as long as this peer lived (swarm seeds 346, 571, 1663, 1681).
   */
  partialAway (id: string, from: PeerId): boolean {
    const r = this.active.get(id)
    return r === undefined || r.late.has(from) || this.target(r) !== from || sentElsewhere(r, from)
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
      if (r.done || (allSent(r) && r.root !== this.host.self)) continue
      const covered = coveredAll(r)
      for (const [peer, part] of r.acked) if (!covered.containsAll(part)) out.add(peer)
      for (const [peer, p] of r.announced) if (!covered.containsAll(p.part)) out.add(peer)
      for (const [peer, p] of r.pulled) if (!covered.containsAll(p.part)) out.add(peer)
    }
    return out
  }

  /** A partial result arrived from `from`. */
  onPartial (now: number, from: PeerId, msg: PartialMessage): void {
    const combine = this.host.ops.get(msg.op)
    if (combine === undefined) { this.host.reject('unknown-op'); return }
    let r = this.active.get(msg.id)
    if (r === undefined && msg.coll !== undefined && !this.finished.has(msg.id)) {
      if (this.busy >= this.maxActive) { this.host.reject('too-many-reductions'); return }
      r = this.relay(now, msg.id, msg.root, collectiveStart(msg.op, msg.coll))
    }
    if (r === undefined) {
      // Not (or no longer) known here: up to the root, which counts only what it still misses.
      if (msg.root === this.host.self) { this.stats.late++; return }
      this.stats.partialsForwarded++
      this.host.send(msg.root, msg)
      return
    }
    // (A pull's answer carries no shape, whatever the reduction.) An empty partial (nothing covered, no value) only
    // reports that its sender has nothing more to send.
    const empty = msg.covered.isEmpty && msg.value.length === 0
    if (msg.op !== r.start.op || msg.root !== r.root ||
      (msg.coll !== undefined && (!r.collective || msg.coll.length !== r.start.length || msg.coll.segment !== r.start.segment))) { this.host.reject('partial-mismatch'); return }
    const seg = msg.seg
    if (seg === undefined ? !empty && msg.value.length !== r.start.length : seg >= r.segs.length || (!empty && msg.value.length !== segLength(r, seg))) { this.host.reject('partial-mismatch'); return }
    if (!IntervalSet.range(0, this.host.vnodeCount()).containsAll(msg.covered)) { this.host.reject('partial-out-of-range'); return }
    // A receiver sends each segment of its partial once: whatever of its part is still missing after its last segment
    // comes late, if at all, and is not waited for.
    const got = (r.segsFrom.get(from) ?? 0) + (seg === undefined ? r.segs.length : 1)
    if (got >= r.segs.length) {
      r.segsFrom.delete(from)
      r.reported.add(from)
      r.acked.delete(from)
      r.announced.delete(from)
    } else {
      r.segsFrom.set(from, got)
      // Collective: no start was acknowledged, but a peer whose first segments came sends the rest.
      if (r.collective) r.acked.set(from, (r.acked.get(from) ?? IntervalSet.EMPTY).union(msg.covered))
    }
    // An owner asked has answered: what of its part is still missing after this (it no longer owned it, or its
    // answer overlapped a late partial and was dropped) is asked of whoever owns it at the next round, not after
    // this owner's patience. (Answers in segments may be partly on their way still: they wait out the patience.)
    if (seg === undefined) r.pulled.delete(from)
    this.take(r, msg.covered, msg.value, seg)
    this.check(now, r)
  }

  /** The root asks for contributions of virtual nodes it is missing (overlay/pull-answers.ts). */
  onPull (msg: PullMessage, maxHops: number): void { this.pulls.answer(msg, maxHops) }

  /** A reduction's timer fired. */
  onTimer (now: number, id: string): void {
    const r = this.active.get(id)
    if (r === undefined || r.done) return
    if (r.root !== this.host.self) {
      if (!allSent(r)) {
        const missing = r.expected.union(r.own).difference(coveredAll(r))
        if (!missing.isEmpty && this.inProgress(r, now).containsAll(missing) && now - r.startedAt <= this.maxDurationMs) {
          this.host.setTimer(now + this.host.timeoutMs(), id)
          return
        }
        this.sendUp(r)
      }
      this.retireIfSent(r)
      if (now - r.startedAt > this.maxDurationMs) this.forget(r)
      else this.host.setTimer(now + this.maxDurationMs, id)
      return
    }
    if (!r.called) {
      // A collective reduction whose root never called it: nobody waits for its result.
      if (now - r.startedAt > this.maxDurationMs) this.forget(r)
      else this.host.setTimer(r.startedAt + this.maxDurationMs + 1, id)
      return
    }
    if (now - r.startedAt > this.maxDurationMs) {
      this.forget(r)
      this.host.failed(id, IntervalSet.range(0, this.host.vnodeCount()).difference(coveredAll(r)))
      return
    }
    // Pulls back off: a reply of a long array takes its transfer time, on links that are busy when a crash left much
    // to pull; asking again every retry while the first answers were still under way fed a pull storm (a crash of 2
    // in 42 peers during back-to-back 128 KB reductions: 50,000 pulls, 6 GB over the wide area, 12 of 100 reductions
    // never done; test/sim-scenarios.test.ts). An owner asked is not asked again while it is alive, for PULL_PATIENCE
    // base intervals (its reply may be queued behind others).
    const baseMs = Math.max(this.retryMs, this.host.timeoutMs())
    this.pull(r, this.inProgress(r, now), now, baseMs * PULL_PATIENCE)
    // The root may have contributed the last part itself (virtual nodes it owns by now).
    this.check(now, r)
    if (r.done) return
    r.pullRounds++
    this.host.setTimer(now + baseMs * 2 ** Math.min(r.pullRounds - 1, 4), id)
  }

  /**
   * What live receivers are still working on: those that acknowledged the start, those the
   * start is still on its way to (on busy links acknowledgements come late, and pulling
   * everything routed but not yet acknowledged sent every remote owner's whole array over
   * the wide area at each of a stream of long reductions), and (at the root) owners asked,
   * within their patience.
   */
  private inProgress (r: Red, now: number): IntervalSet {
    // A receiver that never acknowledges while alive (it refused or dropped the start, or parked part of it) is
    // waited for only so long: then its part is pulled.
    let parts = now - r.startedAt < this.patienceMs() ? this.host.inFlight(r.id) : IntervalSet.EMPTY
    for (const [peer, part] of r.acked) if (this.host.isAlive(peer)) parts = parts.union(part)
    for (const waits of [r.pulled, r.announced]) {
      for (const [peer, p] of waits) if (this.host.isAlive(peer) && now < p.at + p.patienceMs) parts = parts.union(p.part)
    }
    return parts.difference(coveredAll(r))
  }

  /** How long a part is awaited on someone's word alone: PULL_PATIENCE retry intervals. */
  private patienceMs (): number { return Math.max(this.retryMs, this.host.timeoutMs()) * PULL_PATIENCE }

  /** Leaving: send every partial result on now. */
  flush (): void { for (const r of this.active.values()) if (!allSent(r) && r.root !== this.host.self) this.sendUp(r) }

  /** `peer` left or died (reduction-state.ts `forgetPeer`). */
  peerGone (peer: PeerId): void { for (const r of this.active.values()) forgetPeer(r, peer) }

  /** Reductions in flight here. */
  get activeCount (): number { return this.active.size }

  /** Takes data covering `covered`: segment `seg` of the array, or the whole array. */
  private take (r: Red, covered: IntervalSet, value: Float64Array, seg: number | undefined): void {
    if (covered.isEmpty) return
    if (seg !== undefined) { this.takeSeg(r, seg, covered, value); return }
    if (r.segs.length === 1) { this.takeSeg(r, 0, covered, value); return }
    for (let k = 0; k < r.segs.length; k++) this.takeSeg(r, k, covered, value.subarray(k * r.segLen, k * r.segLen + segLength(r, k)))
  }

  private takeSeg (r: Red, k: number, covered: IntervalSet, value: Float64Array): void {
    const s = r.segs[k] as Seg
    const disjoint = !s.covered.intersects(covered)
    if (disjoint && !(s.sent && r.root !== this.host.self)) {
      if (s.acc === null) s.acc = Float64Array.from(value)
      else (this.host.ops.get(r.start.op) ?? noop)(s.acc, value)
      s.covered = s.covered.union(covered)
      this.stats.partialsMerged++
      return
    }
    if (r.root === this.host.self) {
      // Overlapping data at the root: dropped; whatever it alone covered is pulled again.
      this.stats.overlapsDropped++
      return
    }
    this.stats.partialsForwarded++
    this.host.send(this.target(r), partialOf(r, k, covered, Float64Array.from(value)))
  }

  private check (now: number, r: Red): void {
    if (r.root === this.host.self) {
      if (!r.called) return
      const all = IntervalSet.range(0, this.host.vnodeCount())
      if (r.segs.every((s) => s.acc !== null && s.covered.containsAll(all))) {
        this.forget(r)
        this.host.reduced(r.id, concat(r), all, r.startedAt)
      }
      return
    }
    const need = r.expected.union(r.own)
    r.segs.forEach((s, k) => { if (!s.sent && s.covered.containsAll(need)) this.sendSeg(r, k) })
    this.retireIfSent(r)
    void now
  }

  /** A record all sent up (and, collective, called here) is kept aside, without its arrays (see `sentUp`). */
  private retireIfSent (r: Red): void {
    if (r.root === this.host.self || r.done || this.sentUp.has(r) || !allSent(r) || (r.collective && !r.called)) return
    for (const s of r.segs) s.acc = null
    this.sentUp.add(r)
    if (this.sentUp.size > this.finishedCapacity) this.forget(this.sentUp.values().next().value as Red)
  }

  private sendUp (r: Red): void { for (let k = 0; k < r.segs.length; k++) if (!(r.segs[k] as Seg).sent) this.sendSeg(r, k) }

  private sendSeg (r: Red, k: number): void {
    const s = r.segs[k] as Seg
    s.sent = true
    if (s.acc === null || s.covered.isEmpty) {
      // Nothing to send (what this peer waited for went with a crashed peer, and was pulled or taken by its new
      // owner): the peer that sent the start waits for this one while it is alive, so it is told, by an empty partial
      // (swarm seed 2061: a root waited for ever).
      if (!r.collective) this.host.send(this.target(r), partialOf(r, k, IntervalSet.EMPTY, new Float64Array(0)))
      return
    }
    const to = this.target(r)
    r.sentTo.add(to)
    this.host.send(to, partialOf(r, k, s.covered, s.acc))
  }

  /** The sibling of a combining plan, else the peer the start came from, else the root, whichever is alive first. */
  private target (r: Red): PeerId {
    if (r.collective) {
      // The parent in the root's latency tree now: the tree may have changed since the call.
      const parent = this.host.route(r.root).parent
      return parent !== null && parent !== this.host.self && this.host.isAlive(parent) ? parent : r.root
    }
    if (r.via !== null && this.host.isAlive(r.via)) return r.via
    return r.upstream !== null && this.host.isAlive(r.upstream) ? r.upstream : r.root
  }

  /**
   * Asks the owners of what the root still misses, apart from `inProgress`, for their
   * contributions: one pull for the whole array when every segment misses the same, else
   * one per segment (a reply for the whole array would overlap the segments that have part).
   */
  private pull (r: Red, inProgress: IntervalSet, now: number, patienceMs: number): void {
    const all = IntervalSet.range(0, this.host.vnodeCount())
    const missing = r.segs.map((s) => all.difference(s.covered).difference(inProgress))
    const first = missing[0] as IntervalSet
    // A whole array answers in one partial, so only while it fits one frame.
    const uniform = missing.every((m) => m.equals(first)) && (r.segs.length === 1 || r.start.length <= MAX_UNSEGMENTED_LENGTH)
    const owned = this.host.owned()
    const groups: Array<{ seg: number | undefined, want: IntervalSet }> = uniform ? [{ seg: undefined, want: first }] : missing.map((want, seg) => ({ seg, want }))
    // Its own contribution, computed once for every segment (a take-over mid-reduction of 10^7 elements cost 1,221 of them).
    let own: { mine: IntervalSet, value: Float64Array } | undefined
    for (const { seg, want } of groups) {
      if (want.isEmpty) continue
      const mine = want.intersection(owned)
      if (!mine.isEmpty) {
        if (own === undefined || !own.mine.equals(mine)) own = { mine, value: this.host.contribute(r.id, r.start, mine) }
        this.take(r, mine, seg === undefined ? own.value : own.value.subarray(seg * r.segLen, seg * r.segLen + segLength(r, seg)), seg)
      }
      for (const [owner, part] of this.host.view.partition(want.difference(mine))) {
        if (owner === this.host.self || !this.host.isAlive(owner)) continue
        this.stats.pulls++
        const prev = r.pulled.get(owner)
        r.pulled.set(owner, { part: prev !== undefined && now < prev.at + prev.patienceMs ? prev.part.union(part) : part, at: now, patienceMs })
        const base: PullMessage = { t: 'pull', id: r.id, root: r.root, op: r.start.op, length: r.start.length, want: part, hops: 0 }
        const msg: PullMessage = r.collective ? { ...base, coll: true } : base
        this.host.send(owner, seg === undefined ? msg : { ...msg, seg, segment: r.segLen })
      }
    }
  }

  private forget (r: Red): void {
    r.done = true
    this.active.delete(r.id)
    this.sentUp.delete(r)
    this.finished.add(r.id)
    if (this.finished.size > this.finishedCapacity) {
      const oldest = this.finished.values().next().value
      if (oldest !== undefined) this.finished.delete(oldest)
    }
  }
}

function noop (): void {}
