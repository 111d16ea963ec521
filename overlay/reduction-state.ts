/**
 * The per-reduction state of overlay/reduction.ts (one record per reduction in flight at a
 * peer, its segments) and the small pure helpers over it.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { CollectiveShape, CombinePlan, PartialMessage, ReduceStart } from './messages.ts'

/**
 * Longest array a single partial may carry whole: reduceSegmentBytes is at most 1 MiB, and
 * the wire's frames carry 1 MiB + 64 KiB. Longer arrays are pulled and answered per segment.
 */
export const MAX_UNSEGMENTED_LENGTH = (1024 * 1024) / 8

/**
 * Segments one reduction has at most, here and on the wire (a segment is a record at every
 * peer it passes): longer arrays get longer segments. The defaults give at most 8,192
 * (2^24 elements in segments of 2,048).
 */
export const MAX_REDUCE_SEGMENTS = 65_536

/** Segments a segmented array is cut into at least, while they stay at the minimum segment size or more. */
export const REDUCE_PIPELINE_SEGMENTS = 8

/**
 * The start of a reduction: arrays longer than one segment of `segmentBytes` travel in
 * segments of at most `segmentBytes`, and in at least {@link REDUCE_PIPELINE_SEGMENTS} of
 * them as long as each keeps `minSegmentBytes` (capped at `segmentBytes`; default
 * `segmentBytes`): a 128 KiB array in two 64 KiB segments was pipelined two deep only and
 * took 1.5-1.7x MagPIe-like's time in fig8, in eight of 16 KiB 1.07-1.14x.
 */
export function reduceStart (op: string, rootVnode: number, length: number, segmentBytes: number, minSegmentBytes = segmentBytes): ReduceStart {
  const segment = Math.max(1, Math.floor(segmentBytes / 8))
  if (length <= segment) return { op, rootVnode, length }
  const least = Math.max(1, Math.floor(Math.min(minSegmentBytes, segmentBytes) / 8))
  const size = Math.min(segment, Math.max(least, Math.ceil(length / REDUCE_PIPELINE_SEGMENTS)))
  return { op, rootVnode, length, segment: Math.max(size, Math.ceil(length / MAX_REDUCE_SEGMENTS)) }
}

/** The state of one segment of a reduction (the whole array when unsegmented). */
export interface Seg {
  acc: Float64Array | null
  covered: IntervalSet
  sent: boolean
}

/** One reduction in flight at a peer. */
export interface Red {
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
  /** A collective reduction (every peer calls it; its partials go up the root's latency tree). */
  readonly collective: boolean
  /** Collective only: the application called it here (until then this peer only relays). */
  called: boolean
  /**
   * Senders of a start that came once every segment had gone up (a part re-routed here): what it brings is only
   * forwarded as late partials, awaited by nobody, so their starts are acknowledged as away and announce nothing.
   */
  readonly late: Set<PeerId>
}

/** A new reduction record: `upstream` is where its partial goes, `via` a combining plan's sibling. */
export function newRed (now: number, id: string, root: PeerId, start: ReduceStart, upstream: PeerId | null, via: PeerId | null, collective: boolean): Red {
  const segLen = start.segment === undefined || start.segment >= start.length ? Math.max(1, start.length) : start.segment
  const segs = Array.from({ length: Math.max(1, Math.ceil(start.length / segLen)) }, () => ({ acc: null, covered: IntervalSet.EMPTY, sent: false }))
  return { id, root, start, upstream, via, expected: IntervalSet.EMPTY, own: IntervalSet.EMPTY, segLen, segs, done: false, startedAt: now, acked: new Map(), segsFrom: new Map(), reported: new Set(), sentTo: new Set(), announced: new Map(), pulled: new Map(), pullRounds: 0, collective, called: !collective, late: new Set() }
}

/** The start-equivalent of a collective reduction's shape. */
export function collectiveStart (op: string, shape: CollectiveShape): ReduceStart {
  return shape.segment === undefined ? { op, rootVnode: 0, length: shape.length } : { op, rootVnode: 0, length: shape.length, segment: shape.segment }
}

/** The shape a collective reduction's partials carry. */
export function shapeOf (start: ReduceStart): CollectiveShape {
  return start.segment === undefined ? { length: start.length } : { length: start.length, segment: start.segment }
}

/** A part awaited on someone's word (a pull, an announcement) until `at + patienceMs`. */
export interface Patient { part: IntervalSet, at: number, patienceMs: number }

/**
 * The sibling a combining plan sends this peer's partial to; null when there is none or
 * it names this peer, the sender of the start or the root (remote input: a plan naming
 * this peer itself had it send its partial to itself without end).
 */
export function viaOf (combine: CombinePlan | undefined, self: PeerId, from: PeerId | null, root: PeerId): PeerId | null {
  const to = combine?.to
  return to === undefined || to === self || to === from || to === root ? null : to
}

/** An owner asked for its contributions is not asked again for this many retry intervals while it is alive. */
export const PULL_PATIENCE = 16

/** Elements in segment `k` of `r`. */
export function segLength (r: Red, k: number): number {
  return Math.min(r.segLen, r.start.length - k * r.segLen)
}

/** Segment `k` of `r`'s partial covering `covered` (the whole array when unsegmented). */
export function partialOf (r: Red, k: number, covered: IntervalSet, value: Float64Array): PartialMessage {
  const base: PartialMessage = { t: 'partial', id: r.id, root: r.root, op: r.start.op, covered, value }
  const msg = r.collective ? { ...base, coll: shapeOf(r.start) } : base
  return r.segs.length === 1 ? msg : { ...msg, seg: k }
}

/** Whether `r`'s partials went to anyone but `to`. */
export function sentElsewhere (r: Red, to: PeerId): boolean {
  for (const p of r.sentTo) if (p !== to) return true
  return false
}

/**
 * `peer` is gone (left or died): nothing it acknowledged, announced or was asked is awaited
 * any more, and its segment count starts over. A peer declared dead may come back as a new
 * incarnation under the same id, without the state of the old one: an acknowledgement kept
 * from before would make its part look in progress for ever, and it would never be pulled.
 */
export function forgetPeer (r: Red, peer: PeerId): void {
  r.acked.delete(peer)
  r.announced.delete(peer)
  r.pulled.delete(peer)
  r.segsFrom.delete(peer)
  r.reported.delete(peer)
}

export function allSent (r: Red): boolean {
  return r.segs.every((s) => s.sent)
}

/** What every segment covers. */
export function coveredAll (r: Red): IntervalSet {
  let out = (r.segs[0] as Seg).covered
  for (let k = 1; k < r.segs.length; k++) out = out.intersection((r.segs[k] as Seg).covered)
  return out
}

export function concat (r: Red): Float64Array {
  if (r.segs.length === 1) return (r.segs[0] as Seg).acc as Float64Array
  const out = new Float64Array(r.start.length)
  r.segs.forEach((s, k) => { out.set(s.acc as Float64Array, k * r.segLen) })
  return out
}
