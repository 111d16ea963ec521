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
}

/** The state of one segment of a reduction (the whole array when unsegmented). */
interface Seg {
  acc: Float64Array | null
  covered: IntervalSet
  sent: boolean
}

interface Red {
  readonly id: string
  readonly root: PeerId
  readonly start: ReduceStart
  readonly upstream: PeerId | null
  /** The sibling this peer's partial goes to (a combining plan), if any. */
  readonly via: PeerId | null
  expected: IntervalSet
  own: IntervalSet
  /** Elements per segment (the array length when unsegmented). */
  readonly segLen: number
  readonly segs: Seg[]
  done: boolean
  readonly startedAt: number
  /** Receivers that acknowledged the start, with the part each took, until they report. */
  readonly acked: Map<PeerId, IntervalSet>
  /** Segments received from each receiver, until it has sent them all. */
  readonly segsFrom: Map<PeerId, number>
  /** Peers a partial came from: what they did not cover is late, no longer under way. */
  readonly reported: Set<PeerId>
  /** Peers this peer's own segments went to (more than one when its target changed). */
  readonly sentTo: Set<PeerId>
  /** Parts announced by `reduce-ack` (siblings, or receivers whose upstream is gone), awaited within their patience. */
  readonly announced: Map<PeerId, Patient>
  /** Root only: what each owner was asked for, and when: awaited while it is alive, for PULL_PATIENCE rounds. */
  readonly pulled: Map<PeerId, Patient>
  /** Root only: rounds of pulls so far (each waits twice as long as the one before, up to 16x). */
  pullRounds: number
}

/**
 * Longest array a single partial may carry whole: reduceSegmentBytes is at most 1 MiB, and
 * the wire's frames carry 1 MiB + 64 KiB. Longer arrays are pulled and answered per segment.
 */
export const MAX_UNSEGMENTED_LENGTH = (1024 * 1024) / 8

/** The start of a reduction: arrays longer than one segment of `segmentBytes` travel in segments. */
export function reduceStart (op: string, rootVnode: number, length: number, segmentBytes: number): ReduceStart {
  const segment = Math.max(1, Math.floor(segmentBytes / 8))
  return length > segment ? { op, rootVnode, length, segment } : { op, rootVnode, length }
}

/** Counters of reduction activity. */
export interface ReductionStats { partialsMerged: number, partialsForwarded: number, overlapsDropped: number, pulls: number, late: number, siblingsAnnounced: number }

/** The reduction engine of one peer. */
export class Reductions {
  private readonly active = new Map<string, Red>()
  private readonly finished = new Set<string>()
  readonly stats: ReductionStats = { partialsMerged: 0, partialsForwarded: 0, overlapsDropped: 0, pulls: 0, late: 0, siblingsAnnounced: 0 }

  constructor (private readonly host: ReductionHost, private readonly retryMs: number, private readonly maxDurationMs: number, private readonly finishedCapacity = 4096, private readonly maxActive = 4096) {}

  /** The start stream was routed here: contribute for `fresh`, expect partials for `forwarded`. */
  onRouted (now: number, id: string, root: PeerId, start: ReduceStart, from: PeerId | null, fresh: IntervalSet, forwarded: IntervalSet, combine?: CombinePlan): void {
    if (this.finished.has(id)) return
    let r = this.active.get(id)
    if (r === undefined && this.active.size >= this.maxActive) { this.host.reject('too-many-reductions'); return }
    if (r === undefined) {
      const segLen = start.segment === undefined || start.segment >= start.length ? Math.max(1, start.length) : start.segment
      const segs = Array.from({ length: Math.max(1, Math.ceil(start.length / segLen)) }, () => ({ acc: null, covered: IntervalSet.EMPTY, sent: false }))
      r = { id, root, start, upstream: from, via: viaOf(combine, this.host.self, from, root), expected: IntervalSet.EMPTY, own: IntervalSet.EMPTY, segLen, segs, done: false, startedAt: now, acked: new Map(), segsFrom: new Map(), reported: new Set(), sentTo: new Set(), announced: new Map(), pulled: new Map(), pullRounds: 0 }
      this.active.set(id, r)
      const wait = this.host.timeoutMs()
      this.host.setTimer(now + (root === this.host.self ? 2 * wait : wait), id)
    }
    if (r.start.op !== start.op || r.start.length !== start.length || r.start.segment !== start.segment || r.root !== root) { this.host.reject('reduce-mismatch'); return }
    // A combining plan adds the parts of the siblings that send their partials here.
    r.expected = r.expected.union(forwarded)
    if (combine !== undefined) r.expected = r.expected.union(combine.extra.intersection(IntervalSet.range(0, this.host.vnodeCount())))
    if (!fresh.isEmpty) {
      r.own = r.own.union(fresh)
      this.take(r, fresh, this.host.contribute(id, r.start, fresh), undefined)
    }
    this.check(now, r)
  }

  /** `to` acknowledged the start of reduction `id` for `part`: its partial is on the way. */
  onStartAcked (id: string, to: PeerId, part: IntervalSet): void {
    const r = this.active.get(id)
    if (r === undefined || r.done || r.reported.has(to)) return
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
    if (r === undefined || r.done || r.root !== root || r.reported.has(from)) return
    const expected = r.expected.intersection(part)
    if (expected.isEmpty) return
    this.stats.siblingsAnnounced++
    const prev = r.announced.get(from)
    r.announced.set(from, { part: prev === undefined ? expected : prev.part.union(expected), at: now, patienceMs: this.patienceMs() })
  }

  /**
   * What this peer's partial of reduction `id` will bring to where it goes now, for an
   * announcement: empty when not active here, or when a segment already went to another
   * peer (announcing it would make the new target wait for data that is not coming).
   */
  partOf (id: string): IntervalSet {
    const r = this.active.get(id)
    return r === undefined || this.sentElsewhere(r, this.target(r)) ? IntervalSet.EMPTY : r.expected.union(r.own)
  }

  /**
   * This peer acknowledged the start of reduction `id` as away: the message that tells the
   * peer its partial goes to (a sibling, or the root) what is coming, so that it waits for
   * it past its timeout; undefined when there is nothing to announce.
   */
  announcement (id: string): { to: PeerId, msg: ReduceAckMessage } | undefined {
    const r = this.active.get(id)
    const part = this.partOf(id)
    if (r === undefined || part.isEmpty || this.target(r) === this.host.self) return undefined
    return { to: this.target(r), msg: { t: 'reduce-ack', id, root: r.root, part } }
  }

  /**
   * Whether `from`, which sent this peer the start of reduction `id`, should not wait for
   * this peer's partial: it goes elsewhere, or some of it already went elsewhere (its
   * target changed when a peer died). Acknowledging normally then made `from` wait for
   * data that was not coming, as long as this peer lived (swarm seeds 346, 571, 1663, 1681).
   */
  partialAway (id: string, from: PeerId): boolean {
    const r = this.active.get(id)
    return r === undefined || this.target(r) !== from || this.sentElsewhere(r, from)
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
    const r = this.active.get(msg.id)
    if (r === undefined) {
      if (this.finished.has(msg.id) || msg.root === this.host.self) { this.stats.late++; return }
      this.stats.partialsForwarded++
      this.host.send(msg.root, msg)
      return
    }
    if (msg.op !== r.start.op) { this.host.reject('partial-mismatch'); return }
    const seg = msg.seg
    if (seg === undefined ? msg.value.length !== r.start.length : seg >= r.segs.length || msg.value.length !== segLength(r, seg)) { this.host.reject('partial-mismatch'); return }
    if (!IntervalSet.range(0, this.host.vnodeCount()).containsAll(msg.covered)) { this.host.reject('partial-out-of-range'); return }
    // A receiver sends each segment of its partial once: whatever of its part is still
    // missing after its last segment comes late, if at all, and is not waited for.
    const got = (r.segsFrom.get(from) ?? 0) + (seg === undefined ? r.segs.length : 1)
    if (got >= r.segs.length) {
      r.segsFrom.delete(from)
      r.reported.add(from)
      r.acked.delete(from)
      r.announced.delete(from)
    } else r.segsFrom.set(from, got)
    // An owner asked has answered: whatever of its part is still missing after this (it no
    // longer owned it, or its answer overlapped a late partial and was dropped) is asked of
    // whoever owns it at the next round, instead of after this owner's patience. (Answers
    // in segments may be partly on their way still: those wait out the patience.)
    if (seg === undefined) r.pulled.delete(from)
    this.take(r, msg.covered, msg.value, seg)
    this.check(now, r)
  }

  /** The root asks for contributions of virtual nodes it is missing. */
  onPull (msg: PullMessage, maxHops: number): void {
    // An unsegmented answer is one partial: it must fit one frame.
    if ((msg.seg === undefined || msg.segment === undefined) && msg.length > MAX_UNSEGMENTED_LENGTH) { this.host.reject('bad-pull'); return }
    const owned = this.host.owned()
    const mine = msg.want.intersection(owned)
    const start: ReduceStart = { op: msg.op, rootVnode: 0, length: msg.length }
    if (!mine.isEmpty) {
      const whole = this.host.contribute(msg.id, start, mine)
      const { seg, segment } = msg
      if (seg === undefined || segment === undefined) this.host.send(msg.root, { t: 'partial', id: msg.id, root: msg.root, op: msg.op, covered: mine, value: whole })
      else this.host.send(msg.root, { t: 'partial', id: msg.id, root: msg.root, op: msg.op, covered: mine, value: whole.slice(seg * segment, (seg + 1) * segment), seg })
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
      if (!allSent(r)) {
        const missing = r.expected.union(r.own).difference(coveredAll(r))
        if (!missing.isEmpty && this.inProgress(r, now).containsAll(missing) && now - r.startedAt <= this.maxDurationMs) {
          this.host.setTimer(now + this.host.timeoutMs(), id)
          return
        }
        this.sendUp(r)
      }
      if (now - r.startedAt > this.maxDurationMs) this.forget(r)
      else this.host.setTimer(now + this.maxDurationMs, id)
      return
    }
    if (now - r.startedAt > this.maxDurationMs) {
      this.forget(r)
      this.host.failed(id, IntervalSet.range(0, this.host.vnodeCount()).difference(coveredAll(r)))
      return
    }
    // Pulls back off: a reply of a long array takes its transfer time, on links that are
    // busy when a crash left much to pull; asking again every retry while the first answers
    // were still under way fed a pull storm (a crash of 2 in 42 peers during back-to-back
    // 128 KB reductions: 50,000 pulls, 6 GB over the wide area, 12 of 100 reductions never
    // done; test/sim-scenarios.test.ts). An owner asked is not asked again while it is
    // alive, for PULL_PATIENCE base intervals (its reply may be queued behind others).
    const baseMs = Math.max(this.retryMs, this.host.timeoutMs())
    this.pull(r, this.inProgress(r, now), now, baseMs * PULL_PATIENCE)
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
    // A receiver that never acknowledges while alive (it refused or dropped the start, or
    // parked part of it) is waited for only so long: then its part is pulled.
    let parts = now - r.startedAt < this.patienceMs() ? this.host.inFlight(r.id) : IntervalSet.EMPTY
    for (const [peer, part] of r.acked) if (this.host.isAlive(peer)) parts = parts.union(part)
    for (const waits of [r.pulled, r.announced]) {
      for (const [peer, p] of waits) if (this.host.isAlive(peer) && now < p.at + p.patienceMs) parts = parts.union(p.part)
    }
    return parts.difference(coveredAll(r))
  }

  /** How long a part is awaited on someone's word alone: PULL_PATIENCE retry intervals. */
  private patienceMs (): number {
    return Math.max(this.retryMs, this.host.timeoutMs()) * PULL_PATIENCE
  }

  /** Leaving: send every partial result on now. */
  flush (): void {
    for (const r of this.active.values()) if (!allSent(r) && r.root !== this.host.self) this.sendUp(r)
  }

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
    this.host.send(this.target(r), this.partial(r, k, covered, Float64Array.from(value)))
  }

  private partial (r: Red, k: number, covered: IntervalSet, value: Float64Array): PartialMessage {
    const msg: PartialMessage = { t: 'partial', id: r.id, root: r.root, op: r.start.op, covered, value }
    return r.segs.length === 1 ? msg : { ...msg, seg: k }
  }

  private check (now: number, r: Red): void {
    if (r.root === this.host.self) {
      const all = IntervalSet.range(0, this.host.vnodeCount())
      if (r.segs.every((s) => s.acc !== null && s.covered.containsAll(all))) {
        this.forget(r)
        this.host.reduced(r.id, concat(r), all, r.startedAt)
      }
      return
    }
    const need = r.expected.union(r.own)
    r.segs.forEach((s, k) => { if (!s.sent && s.covered.containsAll(need)) this.sendSeg(r, k) })
    void now
  }

  private sendUp (r: Red): void {
    for (let k = 0; k < r.segs.length; k++) if (!(r.segs[k] as Seg).sent) this.sendSeg(r, k)
  }

  private sendSeg (r: Red, k: number): void {
    const s = r.segs[k] as Seg
    s.sent = true
    if (s.acc === null || s.covered.isEmpty) return
    const to = this.target(r)
    r.sentTo.add(to)
    this.host.send(to, this.partial(r, k, s.covered, s.acc))
  }

  private sentElsewhere (r: Red, to: PeerId): boolean {
    for (const p of r.sentTo) if (p !== to) return true
    return false
  }

  /** The sibling of a combining plan, else the peer the start came from, else the root, whichever is alive first. */
  private target (r: Red): PeerId {
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
    for (const { seg, want } of groups) {
      if (want.isEmpty) continue
      const mine = want.intersection(owned)
      if (!mine.isEmpty) {
        const value = this.host.contribute(r.id, r.start, mine)
        this.take(r, mine, seg === undefined ? value : value.subarray(seg * r.segLen, seg * r.segLen + segLength(r, seg)), seg)
      }
      for (const [owner, part] of this.host.view.partition(want.difference(mine))) {
        if (owner === this.host.self || !this.host.isAlive(owner)) continue
        this.stats.pulls++
        const prev = r.pulled.get(owner)
        r.pulled.set(owner, { part: prev !== undefined && now < prev.at + prev.patienceMs ? prev.part.union(part) : part, at: now, patienceMs })
        const msg: PullMessage = { t: 'pull', id: r.id, root: r.root, op: r.start.op, length: r.start.length, want: part, hops: 0 }
        this.host.send(owner, seg === undefined ? msg : { ...msg, seg, segment: r.segLen })
      }
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

/** A part awaited on someone's word (a pull, an announcement) until `at + patienceMs`. */
interface Patient { part: IntervalSet, at: number, patienceMs: number }

/**
 * The sibling a combining plan sends this peer's partial to; null when there is none or
 * it names this peer, the sender of the start or the root (remote input: a plan naming
 * this peer itself had it send its partial to itself without end).
 */
function viaOf (combine: CombinePlan | undefined, self: PeerId, from: PeerId | null, root: PeerId): PeerId | null {
  const to = combine?.to
  return to === undefined || to === self || to === from || to === root ? null : to
}

/** An owner asked for its contributions is not asked again for this many retry intervals while it is alive. */
export const PULL_PATIENCE = 16

/** Elements in segment `k` of `r`. */
function segLength (r: Red, k: number): number {
  return Math.min(r.segLen, r.start.length - k * r.segLen)
}

function allSent (r: Red): boolean {
  return r.segs.every((s) => s.sent)
}

/** What every segment covers. */
function coveredAll (r: Red): IntervalSet {
  let out = (r.segs[0] as Seg).covered
  for (let k = 1; k < r.segs.length; k++) out = out.intersection((r.segs[k] as Seg).covered)
  return out
}

function concat (r: Red): Float64Array {
  if (r.segs.length === 1) return (r.segs[0] as Seg).acc as Float64Array
  const out = new Float64Array(r.start.length)
  r.segs.forEach((s, k) => { out.set(s.acc as Float64Array, k * r.segLen) })
  return out
}
