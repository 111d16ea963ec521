/**
 * Ownership (virtual-nodes/ownership-map.ts) and range assignment (virtual-nodes/assignment.ts):
 * the deterministic, order-independent pieces every peer computes on its own and must agree
 * on (the member list: test/membership.test.ts).
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { Range } from '../virtual-nodes/interval-set.ts'
import { claimBeats, OwnershipMap, type OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import { initialAssignment, joinShare, mostLoaded, successorOf } from '../virtual-nodes/assignment.ts'
import { InvalidIntervalError } from '../virtual-nodes/errors.ts'
import { comparePeerIds, type PeerId } from '../virtual-nodes/peer-id.ts'

const SIZE = 64
const OWNERS = ['a', 'b', 'c', 'd'] as const

const rec = (ranges: IntervalSet, owner: PeerId, version: number): OwnershipRecord => ({ ranges, owner, version })

/** A plain model of the map: per virtual node, the winning (owner, version). */
function model (size: number, records: readonly OwnershipRecord[]): Array<{ owner: PeerId, version: number }> {
  const m = Array.from({ length: size }, () => ({ owner: '', version: -1 }))
  for (const r of records) {
    for (const v of r.ranges.values()) {
      if (v >= size) continue
      const cur = m[v] as { owner: PeerId, version: number }
      if (claimBeats(r.version, r.owner, cur.version, cur.owner)) m[v] = { owner: r.owner, version: r.version }
    }
  }
  return m
}

/** A comparable form of a map's records. */
function recordsKey (map: OwnershipMap): Array<[number, number, PeerId, number]> {
  return map.records().map((r) => [r.ranges.min ?? -1, (r.ranges.max ?? -2) + 1, r.owner, r.version])
}

const arbRanges: fc.Arbitrary<IntervalSet> = fc.array(
  fc.tuple(fc.nat(SIZE + 8), fc.integer({ min: 1, max: 24 })).map(([s, len]): Range => [s, s + len]),
  { minLength: 1, maxLength: 4 }
).map((rs) => IntervalSet.fromRanges(rs))

const arbRecord: fc.Arbitrary<OwnershipRecord> = fc.record({
  ranges: arbRanges,
  owner: fc.constantFrom(...OWNERS),
  version: fc.integer({ min: 0, max: 4 })
})

describe('claimBeats', () => {
  it('higher version wins; equal versions go to the larger owner id; identical claims do not beat', () => {
    expect(claimBeats(2, 'a', 1, 'z')).toBe(true)
    expect(claimBeats(1, 'z', 2, 'a')).toBe(false)
    expect(claimBeats(3, 'b', 3, 'a')).toBe(true)
    expect(claimBeats(3, 'a', 3, 'b')).toBe(false)
    expect(claimBeats(3, 'a', 3, 'a')).toBe(false)
  })
})

describe('OwnershipMap', () => {
  it('a fresh map is owned by nobody and incomplete; records fill it in', () => {
    const m = new OwnershipMap(10)
    expect(m.isComplete()).toBe(false)
    expect(m.ownerOf(3)).toBe('')
    expect(m.versionOf(3)).toBe(-1)
    expect(m.ownerOf(10)).toBeUndefined()
    expect(m.ownerOf(-1)).toBeUndefined()
    m.apply(rec(IntervalSet.range(0, 6), 'a', 0))
    expect(m.isComplete()).toBe(false)
    m.apply(rec(IntervalSet.range(6, 10), 'b', 0))
    expect(m.isComplete()).toBe(true)
    expect(m.ownerOf(5)).toBe('a')
    expect(m.ownerOf(6)).toBe('b')
    expect(m.segmentCount).toBe(2)
  })

  it('an empty map (size 0) has no segments and is trivially complete', () => {
    const m = new OwnershipMap(0)
    expect(m.segmentCount).toBe(0)
    expect(m.isComplete()).toBe(true)
    expect(m.apply(rec(IntervalSet.range(0, 5), 'a', 3)).isEmpty).toBe(true)
    expect(m.records()).toEqual([])
  })

  it('apply returns exactly the part it won', () => {
    const m = OwnershipMap.fromRecords(20, [rec(IntervalSet.range(0, 10), 'a', 1), rec(IntervalSet.range(10, 20), 'b', 3)])
    // Version 2 beats a's 1 but not b's 3.
    const won = m.apply(rec(IntervalSet.range(5, 15), 'c', 2))
    expect(won.equals(IntervalSet.range(5, 10))).toBe(true)
    expect(m.rangesOf('c').equals(IntervalSet.range(5, 10))).toBe(true)
    expect(m.rangesOf('b').equals(IntervalSet.range(10, 20))).toBe(true)
    expect(m.rangesOf('a').equals(IntervalSet.range(0, 5))).toBe(true)
    expect(m.versionOf(7)).toBe(2)
    expect(m.versionOf(12)).toBe(3)
  })

  it('higher version wins regardless of owner id', () => {
    const m = OwnershipMap.fromRecords(10, [rec(IntervalSet.range(0, 10), 'z', 4)])
    expect(m.apply(rec(IntervalSet.range(0, 10), 'a', 5)).size).toBe(10)
    expect(m.ownerOf(0)).toBe('a')
  })

  it('equal versions: the larger owner id wins, whichever arrives first', () => {
    const m1 = OwnershipMap.fromRecords(10, [rec(IntervalSet.range(0, 10), 'a', 2)])
    expect(m1.apply(rec(IntervalSet.range(2, 4), 'b', 2)).equals(IntervalSet.range(2, 4))).toBe(true)
    const m2 = OwnershipMap.fromRecords(10, [rec(IntervalSet.range(0, 10), 'b', 2)])
    expect(m2.apply(rec(IntervalSet.range(2, 4), 'a', 2)).isEmpty).toBe(true)
    expect(m2.ownerOf(3)).toBe('b')
  })

  it('stale claims never win, and re-applying the current claim wins nothing', () => {
    const m = OwnershipMap.fromRecords(10, [rec(IntervalSet.range(0, 10), 'b', 5)])
    for (let v = 0; v < 5; v++) {
      for (const owner of ['a', 'b', 'c', 'zzz']) {
        expect(m.apply(rec(IntervalSet.range(0, 10), owner, v)).isEmpty).toBe(true)
      }
    }
    expect(m.apply(rec(IntervalSet.range(0, 10), 'b', 5)).isEmpty).toBe(true)
    expect(m.rangesOf('b').size).toBe(10)
  })

  it('ranges outside 0..size-1 are ignored', () => {
    const m = OwnershipMap.fromRecords(10, [rec(IntervalSet.range(0, 10), 'a', 0)])
    const won = m.apply(rec(IntervalSet.fromRanges([[8, 15], [20, 30]]), 'b', 1))
    expect(won.equals(IntervalSet.range(8, 10))).toBe(true)
    expect(m.apply(rec(IntervalSet.range(10, 40), 'c', 9)).isEmpty).toBe(true)
    expect(m.loads()).toEqual(new Map([['a', 8], ['b', 2]]))
  })

  it('rangesOf with an incarnation bound leaves out what a newer incarnation was given', () => {
    const m = OwnershipMap.fromRecords(30, [
      rec(IntervalSet.range(0, 10), 'a', 0),
      { ranges: IntervalSet.range(10, 20), owner: 'a', version: 2000, ownerIncarnation: 1 },
      { ranges: IntervalSet.range(20, 30), owner: 'a', version: 1000, ownerIncarnation: 0 }
    ])
    expect(m.rangesOf('a').equals(IntervalSet.range(0, 30))).toBe(true)
    expect(m.rangesOf('a', 0).equals(IntervalSet.fromRanges([[0, 10], [20, 30]]))).toBe(true)
    expect(m.rangesOf('a', 1).equals(IntervalSet.range(0, 30))).toBe(true)
  })

  it('partition splits a set by owner; rangesOf, loads and maxVersionIn agree with it', () => {
    const m = OwnershipMap.fromRecords(30, [
      rec(IntervalSet.range(0, 10), 'a', 0),
      rec(IntervalSet.range(10, 20), 'b', 0),
      rec(IntervalSet.range(20, 30), 'a', 0),
      rec(IntervalSet.range(15, 25), 'c', 3)
    ])
    expect(m.rangesOf('a').equals(IntervalSet.fromRanges([[0, 10], [25, 30]]))).toBe(true)
    expect(m.rangesOf('nobody').isEmpty).toBe(true)
    const p = m.partition(IntervalSet.fromRanges([[5, 12], [18, 28]]))
    expect([...p.keys()].sort()).toEqual(['a', 'b', 'c'])
    expect(p.get('a')?.equals(IntervalSet.fromRanges([[5, 10], [25, 28]]))).toBe(true)
    expect(p.get('b')?.equals(IntervalSet.range(10, 12))).toBe(true)
    expect(p.get('c')?.equals(IntervalSet.range(18, 25))).toBe(true)
    expect(m.partition(IntervalSet.EMPTY).size).toBe(0)
    expect(m.loads()).toEqual(new Map([['a', 15], ['b', 5], ['c', 10]]))
    expect(m.maxVersionIn(IntervalSet.range(0, 15))).toBe(0)
    expect(m.maxVersionIn(IntervalSet.of(3, 16))).toBe(3)
    expect(m.maxVersionIn(IntervalSet.EMPTY)).toBe(-1)
  })

  it('fromRecords(records()) reproduces the map (a snapshot for a joiner)', () => {
    const m = OwnershipMap.fromRecords(40, [
      rec(IntervalSet.range(0, 40), 'a', 0),
      rec(IntervalSet.range(5, 9), 'b', 1),
      rec(IntervalSet.of(30), 'c', 7)
    ])
    const copy = OwnershipMap.fromRecords(40, m.records())
    expect(recordsKey(copy)).toEqual(recordsKey(m))
    expect(copy.isComplete()).toBe(true)
    // Adjacent segments of the same owner and version are merged.
    const merged = OwnershipMap.fromRecords(10, [rec(IntervalSet.range(0, 5), 'a', 0), rec(IntervalSet.range(5, 10), 'a', 0)])
    expect(merged.segmentCount).toBe(1)
  })

  it('property: apply matches the per-node model, and returns exactly the nodes it took', () => {
    fc.assert(fc.property(fc.array(arbRecord, { maxLength: 12 }), (records) => {
      const m = new OwnershipMap(SIZE)
      const applied: OwnershipRecord[] = []
      for (const r of records) {
        const before = model(SIZE, applied)
        const won = m.apply(r)
        applied.push(r)
        const after = model(SIZE, applied)
        for (let v = 0; v < SIZE; v++) {
          const changed = before[v]?.owner !== after[v]?.owner || before[v]?.version !== after[v]?.version
          if (won.has(v) !== changed) return false
        }
        if (won.intersection(IntervalSet.range(SIZE, SIZE + 100)).size !== 0) return false
        // apply rewrites only the segments it overlaps: the map must stay canonical
        // (no two neighbouring segments with the same owner, version and incarnation).
        const recs = m.records()
        for (let i = 1; i < recs.length; i++) {
          const a = recs[i - 1] as OwnershipRecord
          const b = recs[i] as OwnershipRecord
          if (a.owner === b.owner && a.version === b.version && a.ownerIncarnation === b.ownerIncarnation) return false
        }
      }
      const want = model(SIZE, applied)
      for (let v = 0; v < SIZE; v++) {
        if (m.ownerOf(v) !== want[v]?.owner || m.versionOf(v) !== want[v]?.version) return false
      }
      return true
    }), { numRuns: 400 })
  })

  it('property: fromRecords builds the same map in one pass as record by record, disjoint and in order or not', () => {
    // Disjoint records in order (a snapshot, an initial assignment): the one-pass build.
    const arbInOrder = fc.array(fc.tuple(fc.nat(6), fc.integer({ min: 1, max: 9 }), fc.constantFrom(...OWNERS), fc.integer({ min: 0, max: 3 }), fc.option(fc.nat(2), { nil: undefined })), { maxLength: 12 })
      .map((parts) => {
        let at = 0
        return parts.map(([gap, len, owner, version, inc]): OwnershipRecord => {
          const s = at + gap
          at = s + len
          return { ranges: IntervalSet.range(s, s + len), owner, version, ...(inc !== undefined ? { ownerIncarnation: inc } : {}) }
        })
      })
    const full = (m: OwnershipMap): unknown => m.records().map((r) => [r.ranges.ranges, r.owner, r.version, r.ownerIncarnation])
    fc.assert(fc.property(fc.oneof(arbInOrder, fc.array(arbRecord, { maxLength: 10 })), (records) => {
      const oneByOne = new OwnershipMap(SIZE)
      for (const r of records) oneByOne.apply(r)
      const built = OwnershipMap.fromRecords(SIZE, records)
      expect(full(built)).toEqual(full(oneByOne))
      expect(built.isComplete()).toBe(oneByOne.isComplete())
    }), { numRuns: 400 })
  })

  it('property: any order of the same records gives the same records()', () => {
    const arb = fc.array(arbRecord, { minLength: 1, maxLength: 10 }).chain((records) =>
      fc.tuple(fc.constant(records), fc.shuffledSubarray(records, { minLength: records.length, maxLength: records.length })))
    fc.assert(fc.property(arb, ([records, shuffled]) => {
      const a = OwnershipMap.fromRecords(SIZE, records)
      const b = OwnershipMap.fromRecords(SIZE, shuffled)
      expect(recordsKey(b)).toEqual(recordsKey(a))
      // Applying everything again (duplicates, as gossip does) changes nothing.
      for (const r of shuffled) expect(a.apply(r).isEmpty).toBe(true)
      expect(recordsKey(a)).toEqual(recordsKey(b))
    }), { numRuns: 200 })
  })

  it('property: partition covers the set exactly and agrees with rangesOf; loads sum to the size', () => {
    fc.assert(fc.property(fc.array(arbRecord, { maxLength: 8 }), arbRanges, (records, set) => {
      const m = OwnershipMap.fromRecords(SIZE, [rec(IntervalSet.range(0, SIZE), 'a', 0), ...records])
      expect(m.isComplete()).toBe(true)
      const inRange = set.intersection(IntervalSet.range(0, SIZE))
      let union = IntervalSet.EMPTY
      let total = 0
      for (const [owner, part] of m.partition(set)) {
        expect(part.isEmpty).toBe(false)
        expect(m.rangesOf(owner).containsAll(part)).toBe(true)
        for (const v of part.values()) expect(m.ownerOf(v)).toBe(owner)
        union = union.union(part)
        total += part.size
      }
      expect(union.equals(inRange)).toBe(true)
      expect(total).toBe(inRange.size)
      let loads = 0
      for (const [owner, n] of m.loads()) { loads += n; expect(m.rangesOf(owner).size).toBe(n) }
      expect(loads).toBe(SIZE)
    }), { numRuns: 150 })
  })

  it('property: recordsIn covers the set exactly, in order, each piece with the owner and version of every virtual node in it', () => {
    fc.assert(fc.property(fc.array(arbRecord, { maxLength: 8 }), arbRanges, (records, set) => {
      const m = OwnershipMap.fromRecords(SIZE, [rec(IntervalSet.range(0, SIZE), 'a', 0), ...records])
      const inRange = set.intersection(IntervalSet.range(0, SIZE))
      let union = IntervalSet.EMPTY
      let last = -1
      for (const r of m.recordsIn(set)) {
        expect(r.ranges.rangeCount).toBe(1)
        expect(r.ranges.min as number).toBeGreaterThan(last)
        last = r.ranges.max as number
        expect(union.intersects(r.ranges)).toBe(false)
        for (const v of r.ranges.values()) {
          expect(m.ownerOf(v)).toBe(r.owner)
          expect(m.versionOf(v)).toBe(r.version)
        }
        union = union.union(r.ranges)
      }
      expect(union.equals(inRange)).toBe(true)
    }), { numRuns: 150 })
  })
})

describe('initialAssignment', () => {
  it('spreads 10 over three peers as 4/3/3, contiguous, in the given order', () => {
    const a = initialAssignment(10, ['p2', 'p0', 'p1'])
    expect([...a.keys()]).toEqual(['p2', 'p0', 'p1'])
    expect(a.get('p2')?.equals(IntervalSet.range(0, 4))).toBe(true)
    expect(a.get('p0')?.equals(IntervalSet.range(4, 7))).toBe(true)
    expect(a.get('p1')?.equals(IntervalSet.range(7, 10))).toBe(true)
  })

  it('property: even (sizes differ by at most one), contiguous, disjoint and covering', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 500 }), fc.uniqueArray(fc.string({ minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 20 }), (n, peers) => {
      const a = initialAssignment(n, peers)
      expect(a.size).toBe(peers.length)
      let next = 0
      const sizes: number[] = []
      for (const p of peers) {
        const s = a.get(p) as IntervalSet
        expect(s.rangeCount).toBeLessThanOrEqual(1)
        if (!s.isEmpty) expect(s.min).toBe(next)
        next += s.size
        sizes.push(s.size)
      }
      expect(next).toBe(n)
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1)
      // Larger shares first.
      expect([...sizes].sort((x, y) => y - x)).toEqual(sizes)
    }), { numRuns: 200 })
  })

  it('more peers than virtual nodes: the first ones get one each, the rest nothing', () => {
    const a = initialAssignment(2, ['a', 'b', 'c'])
    expect(a.get('a')?.equals(IntervalSet.of(0))).toBe(true)
    expect(a.get('b')?.equals(IntervalSet.of(1))).toBe(true)
    expect(a.get('c')?.isEmpty).toBe(true)
  })

  it('rejects bad input with InvalidIntervalError', () => {
    expect(() => initialAssignment(-1, ['a'])).toThrow(InvalidIntervalError)
    expect(() => initialAssignment(2.5, ['a'])).toThrow(InvalidIntervalError)
    expect(() => initialAssignment(NaN, ['a'])).toThrow(InvalidIntervalError)
    expect(() => initialAssignment(4, [])).toThrow(InvalidIntervalError)
  })

  // Fixed bug, kept as a regression test: virtual-nodes/assignment.ts:21-25 (initialAssignment) stores each share with
  // `out.set(peer, ...)`, so a peer listed twice keeps only its last range and the earlier
  // one is owned by nobody: initialAssignment(10, ['a','b','a']) gives a=[7,10), b=[4,7)
  // and [0,4) is lost. TreecastCore.bootstrap (overlay/core.ts) passes its `members` list
  // straight through, so a duplicated founding member leaves an ownerless gap in every
  // view (broadcasts to it park forever). Suggested fix: throw InvalidIntervalError on
  // duplicate peers (and InvalidArgumentError in bootstrap), or de-duplicate first.
  it('a duplicated peer either throws or still gets every virtual node assigned', () => {
    let a: Map<PeerId, IntervalSet> | undefined
    try { a = initialAssignment(10, ['a', 'b', 'a']) } catch (e) { expect(e).toBeInstanceOf(InvalidIntervalError); return }
    let covered = IntervalSet.EMPTY
    for (const s of a.values()) covered = covered.union(s)
    expect(covered.equals(IntervalSet.range(0, 10))).toBe(true)
  })
})

describe('joinShare', () => {
  it('gives the upper half and keeps the rest; one node is kept, none gives nothing', () => {
    expect(joinShare(IntervalSet.range(0, 10)).equals(IntervalSet.range(5, 10))).toBe(true)
    expect(joinShare(IntervalSet.of(7)).isEmpty).toBe(true)
    expect(joinShare(IntervalSet.EMPTY).isEmpty).toBe(true)
    expect(joinShare(IntervalSet.of(3, 9)).equals(IntervalSet.of(9))).toBe(true)
    const split = IntervalSet.fromRanges([[0, 2], [10, 14], [20, 22]])
    expect(joinShare(split).equals(IntervalSet.fromRanges([[12, 14], [20, 22]]))).toBe(true)
  })

  it('property: the share is a subset, the donor keeps the ceil half, the joiner gets the floor', () => {
    fc.assert(fc.property(fc.array(fc.nat(300), { maxLength: 60 }), (vs) => {
      const owned = IntervalSet.of(...vs)
      const share = joinShare(owned)
      expect(owned.containsAll(share)).toBe(true)
      const kept = owned.difference(share)
      if (owned.size < 2) { expect(share.isEmpty).toBe(true); return }
      expect(kept.size).toBe(Math.ceil(owned.size / 2))
      expect(share.size).toBe(Math.floor(owned.size / 2))
      // Every kept node is below every given one (the upper half moves).
      expect((kept.max ?? -1) < (share.min ?? Infinity)).toBe(true)
    }), { numRuns: 200 })
  })

  // Fixed bug, kept as a regression test: virtual-nodes/assignment.ts:30-35 (joinShare) documents "the donor keeps at least
  // half", but `owned.splitHalf()[1]` is the *larger* half for odd sizes (splitHalf takes
  // floor(size/2) as the lower part), so a donor with 3 nodes keeps 1 and gives 2, with 5
  // keeps 2 and gives 3. Either the comment is wrong or the split is: to match the comment,
  // give `owned.take(Math.ceil(owned.size / 2))[1]` (the joiner gets floor(size/2)).
  it('the donor keeps at least half of an odd-sized set, as documented', () => {
    const owned = IntervalSet.range(0, 5)
    const kept = owned.difference(joinShare(owned))
    expect(kept.size * 2).toBeGreaterThanOrEqual(owned.size)
  })
})

describe('successorOf', () => {
  it('is the next id after the gone peer, wrapping to the smallest', () => {
    const alive = ['p1', 'p3', 'p5', 'p7']
    expect(successorOf('p3', alive)).toBe('p5')
    expect(successorOf('p4', alive)).toBe('p5')
    expect(successorOf('p7', alive)).toBe('p1')
    expect(successorOf('p9', alive)).toBe('p1')
    expect(successorOf('p0', alive)).toBe('p1')
  })

  it('skips the gone peer itself; undefined when nobody else is left', () => {
    expect(successorOf('a', ['a'])).toBeUndefined()
    expect(successorOf('a', [])).toBeUndefined()
    expect(successorOf('a', ['a', 'b'])).toBe('b')
    expect(successorOf('b', ['a', 'b'])).toBe('a')
  })

  it('property: deterministic in any iteration order, and never the gone peer', () => {
    const arb = fc.uniqueArray(fc.string({ minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 12 }).chain((peers) =>
      fc.tuple(fc.constant(peers), fc.shuffledSubarray(peers, { minLength: peers.length, maxLength: peers.length }), fc.constantFrom(...peers)))
    fc.assert(fc.property(arb, ([peers, shuffled, gone]) => {
      const s = successorOf(gone, peers)
      expect(successorOf(gone, shuffled)).toBe(s)
      expect(successorOf(gone, new Set(shuffled))).toBe(s)
      const others = peers.filter((p) => p !== gone).sort(comparePeerIds)
      if (others.length === 0) { expect(s).toBeUndefined(); return }
      expect(s).not.toBe(gone)
      expect(s).toBe(others.find((p) => comparePeerIds(p, gone) > 0) ?? others[0])
    }), { numRuns: 200 })
  })
})

describe('mostLoaded', () => {
  it('picks the largest load among the allowed peers, ties to the lowest id', () => {
    const loads = new Map([['c', 5], ['a', 3], ['b', 5], ['d', 9]])
    expect(mostLoaded(loads, new Set(['a', 'b', 'c', 'd']))).toBe('d')
    expect(mostLoaded(loads, new Set(['a', 'b', 'c']))).toBe('b')
    expect(mostLoaded(loads, new Set(['c', 'a']))).toBe('c')
    expect(mostLoaded(loads, new Set(['x']))).toBeUndefined()
    expect(mostLoaded(new Map(), new Set(['a']))).toBeUndefined()
    expect(mostLoaded(new Map([['z', 0], ['y', 0]]), new Set(['z', 'y']))).toBe('y')
  })

  it('property: insertion order of the loads does not matter', () => {
    const arb = fc.uniqueArray(fc.tuple(fc.string({ minLength: 1, maxLength: 3 }), fc.nat(5)), { minLength: 1, maxLength: 10, selector: (t) => t[0] })
    fc.assert(fc.property(arb, (entries) => {
      const among = new Set(entries.map(([p]) => p))
      const a = mostLoaded(new Map(entries), among)
      const b = mostLoaded(new Map([...entries].reverse()), among)
      expect(b).toBe(a)
      const best = Math.max(...entries.map(([, n]) => n))
      const want = entries.filter(([, n]) => n === best).map(([p]) => p).sort(comparePeerIds)[0]
      expect(a).toBe(want)
    }), { numRuns: 200 })
  })
})
