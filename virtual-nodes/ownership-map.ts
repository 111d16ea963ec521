/**
 * The ownership map: which peer owns each virtual node, as versioned records.
 *
 * Every peer keeps one of these as its *view*. Records only ever win by version (then by
 * owner id, so that two records of the same version resolve the same way at every peer):
 * a stale claim never overwrites a newer one, and applying the same records in any order
 * gives the same map.
 */
import { IntervalSet } from './interval-set.ts'
import type { PeerId } from './peer-id.ts'

/** One claim: `owner` owns `ranges` as of `version`. */
export interface OwnershipRecord {
  readonly ranges: IntervalSet
  readonly owner: PeerId
  readonly version: number
  /**
   * The owner's incarnation when the claim was made. A peer that hears of a claim by a
   * newer incarnation than it knows learns that incarnation is alive (it restarted).
   */
  readonly ownerIncarnation?: number
}

/** Does a claim (version a, owner ownerA) beat an existing one (version b, owner ownerB)? */
export function claimBeats (versionA: number, ownerA: PeerId, versionB: number, ownerB: PeerId): boolean {
  return versionA > versionB || (versionA === versionB && ownerA > ownerB)
}

interface Segment { start: number, end: number, owner: PeerId, version: number, ownerIncarnation?: number }

/** A total map from 0..size-1 to (owner, version), kept as sorted segments. */
export class OwnershipMap {
  readonly size: number
  private segments: Segment[]
  /**
   * Whether another map holds the same segment array (see {@link clone}): then it is
   * replaced, never changed in place. Segment objects are never changed once in a map.
   */
  private sharesSegments = false

  /**
   * A map in which `initialOwner` owns everything at `initialVersion`. With the defaults
   * (nobody, version -1) any record wins, so a view can be built from a snapshot's records.
   */
  constructor (size: number, initialOwner: PeerId = '', initialVersion = -1) {
    this.size = size
    this.segments = size > 0 ? [{ start: 0, end: size, owner: initialOwner, version: initialVersion }] : []
  }

  /** Builds a view from records (a snapshot, or an initial assignment at version 0). */
  static fromRecords (size: number, records: Iterable<OwnershipRecord>): OwnershipMap {
    const map = new OwnershipMap(size)
    const list = [...records]
    // A snapshot or an initial assignment lists disjoint ranges in order: built in one pass
    // (each peer of a 2,000-peer bootstrap builds a map of 2,000 records). Anything else is
    // applied record by record, which resolves overlaps by version.
    if (!map.buildInOrder(list)) for (const r of list) map.apply(r)
    return map
  }

  /**
   * A copy that shares this map's segments until either changes (copy on write): the
   * founders of one overlay all start from the same view, and 2,000 copies of 2,000
   * segments took 300 MB of a 2,000-peer simulation's heap (SCALE.md).
   */
  clone (): OwnershipMap {
    const copy = new OwnershipMap(0)
    ;(copy as { size: number }).size = this.size
    copy.segments = this.segments
    copy.sharesSegments = true
    this.sharesSegments = true
    return copy
  }

  /** Builds this (empty) map from records whose ranges are disjoint and in order; false, untouched, if they are not. */
  private buildInOrder (records: readonly OwnershipRecord[]): boolean {
    const next: Segment[] = []
    let cursor = 0
    for (const r of records) {
      if (r.version < 0 || r.owner === '') return false
      for (const [s, e] of r.ranges.ranges) {
        const lo = Math.max(s, 0)
        const hi = Math.min(e, this.size)
        if (lo >= hi) continue
        if (lo < cursor) return false
        pushSeg(next, cursor, lo, '', -1, undefined)
        pushSeg(next, lo, hi, r.owner, r.version, r.ownerIncarnation)
        cursor = hi
      }
    }
    pushSeg(next, cursor, this.size, '', -1, undefined)
    this.segments = next
    this.sharesSegments = false
    return true
  }

  /** True when every virtual node has a real owner (no gap left from an empty start). */
  isComplete (): boolean {
    return this.segments.every((s) => s.version >= 0 && s.owner !== '')
  }

  /** The owner of `vnode` in this view. */
  ownerOf (vnode: number): PeerId | undefined {
    const i = this.indexOf(vnode)
    return i < 0 ? undefined : this.segments[i]?.owner
  }

  /** The version of the record that covers `vnode`. */
  versionOf (vnode: number): number {
    const i = this.indexOf(vnode)
    return i < 0 ? -1 : (this.segments[i]?.version ?? -1)
  }

  /** The highest version among the records covering any of `set`. */
  maxVersionIn (set: IntervalSet): number {
    let max = -1
    for (const [s, e] of set.ranges) {
      for (const seg of this.segments) {
        if (seg.end <= s) continue
        if (seg.start >= e) break
        if (seg.version > max) max = seg.version
      }
    }
    return max
  }

  /**
   * Everything `peer` owns in this view. With `upToIncarnation`, only what was claimed for
   * an incarnation of `peer` no newer than it (records without an incarnation count as
   * old): after a crash, what a restarted incarnation was already given is not the dead
   * one's.
   */
  rangesOf (peer: PeerId, upToIncarnation = Infinity): IntervalSet {
    const out: Array<[number, number]> = []
    for (const seg of this.segments) {
      if (seg.owner === peer && (seg.ownerIncarnation === undefined || seg.ownerIncarnation <= upToIncarnation)) out.push([seg.start, seg.end])
    }
    return IntervalSet.fromRanges(out)
  }

  /** Splits `set` by owner: one entry per owner with the part of `set` it owns. */
  partition (set: IntervalSet): Map<PeerId, IntervalSet> {
    const parts = new Map<PeerId, Array<[number, number]>>()
    for (const [s, e] of set.ranges) {
      let i = Math.max(0, this.indexOf(s))
      for (; i < this.segments.length; i++) {
        const seg = this.segments[i]
        if (seg === undefined || seg.start >= e) break
        const lo = Math.max(s, seg.start)
        const hi = Math.min(e, seg.end)
        if (lo >= hi) continue
        let list = parts.get(seg.owner)
        if (list === undefined) { list = []; parts.set(seg.owner, list) }
        list.push([lo, hi])
      }
    }
    const out = new Map<PeerId, IntervalSet>()
    for (const [peer, list] of parts) out.set(peer, IntervalSet.fromRanges(list))
    return out
  }

  /** The records covering `set`, clipped to it, one per segment of this view (in order). */
  recordsIn (set: IntervalSet): OwnershipRecord[] {
    const out: OwnershipRecord[] = []
    for (const [s, e] of set.ranges) {
      for (let i = Math.max(0, this.indexOf(s)); i < this.segments.length; i++) {
        const seg = this.segments[i]
        if (seg === undefined || seg.start >= e) break
        const lo = Math.max(s, seg.start)
        const hi = Math.min(e, seg.end)
        if (lo >= hi) continue
        out.push({ ranges: IntervalSet.range(lo, hi), owner: seg.owner, version: seg.version, ...(seg.ownerIncarnation !== undefined ? { ownerIncarnation: seg.ownerIncarnation } : {}) })
      }
    }
    return out
  }

  /** Number of virtual nodes each owner holds. */
  loads (): Map<PeerId, number> {
    const out = new Map<PeerId, number>()
    for (const seg of this.segments) out.set(seg.owner, (out.get(seg.owner) ?? 0) + seg.end - seg.start)
    return out
  }

  /**
   * Applies a record; returns the part of its ranges where it won (possibly empty).
   * Ranges outside 0..size-1 are ignored.
   */
  apply (record: OwnershipRecord): IntervalSet {
    const clipped = record.ranges.intersection(IntervalSet.range(0, this.size))
    if (clipped.isEmpty) return IntervalSet.EMPTY
    const ranges = clipped.ranges
    // Only the segments the record overlaps can change, plus one neighbour on each side
    // that a changed segment may merge with; the rest stay as they are (segments are
    // always maximal: no two neighbours could merge), so a record costs its window, not
    // the whole map (a 2,000-peer bootstrap applies 2,000 records).
    const segs = this.segments
    const from = Math.max(0, this.indexOf(clipped.min as number) - 1)
    const last = this.indexOf((clipped.max as number))
    const to = Math.min(segs.length, (last < 0 ? segs.length - 1 : last) + 2)
    const won: Array<[number, number]> = []
    const next: Segment[] = []
    let r = 0
    for (let i = from; i < to; i++) {
      const seg = segs[i] as Segment
      let cursor = seg.start
      while (cursor < seg.end) {
        while (r < ranges.length && (ranges[r]?.[1] ?? 0) <= cursor) r++
        const range = ranges[r]
        if (range === undefined || range[0] >= seg.end) {
          pushSeg(next, cursor, seg.end, seg.owner, seg.version, seg.ownerIncarnation)
          cursor = seg.end
          break
        }
        if (range[0] > cursor) {
          pushSeg(next, cursor, range[0], seg.owner, seg.version, seg.ownerIncarnation)
          cursor = range[0]
        }
        const hi = Math.min(range[1], seg.end)
        if (claimBeats(record.version, record.owner, seg.version, seg.owner)) {
          pushSeg(next, cursor, hi, record.owner, record.version, record.ownerIncarnation)
          won.push([cursor, hi])
        } else {
          pushSeg(next, cursor, hi, seg.owner, seg.version, seg.ownerIncarnation)
        }
        cursor = hi
      }
    }
    if (from === 0 && to === segs.length) this.segments = next
    else if (next.length <= 1024 && !this.sharesSegments) segs.splice(from, to - from, ...next)
    else this.segments = segs.slice(0, from).concat(next, segs.slice(to))
    if (this.segments !== segs) this.sharesSegments = false
    return IntervalSet.fromRanges(won)
  }

  /** All records of this view, for a snapshot sent to a joining peer. */
  records (): OwnershipRecord[] {
    return this.segments.map((s) => ({ ranges: IntervalSet.range(s.start, s.end), owner: s.owner, version: s.version, ...(s.ownerIncarnation !== undefined ? { ownerIncarnation: s.ownerIncarnation } : {}) }))
  }

  /** Number of segments (a bound on snapshot size). */
  get segmentCount (): number { return this.segments.length }

  private indexOf (vnode: number): number {
    let lo = 0
    let hi = this.segments.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      const seg = this.segments[mid]
      if (seg === undefined) return -1
      if (vnode < seg.start) hi = mid - 1
      else if (vnode >= seg.end) lo = mid + 1
      else return mid
    }
    return -1
  }
}

function pushSeg (out: Segment[], start: number, end: number, owner: PeerId, version: number, ownerIncarnation: number | undefined): void {
  if (start >= end) return
  const last = out[out.length - 1]
  if (last !== undefined && last.end === start && last.owner === owner && last.version === version && last.ownerIncarnation === ownerIncarnation) {
    last.end = end
    return
  }
  out.push(ownerIncarnation === undefined ? { start, end, owner, version } : { start, end, owner, version, ownerIncarnation })
}
