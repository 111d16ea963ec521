import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { IntervalSet, varintLength } from '../virtual-nodes/interval-set.ts'
import type { Range } from '../virtual-nodes/interval-set.ts'
import { IntervalDecodeError, InvalidIntervalError } from '../virtual-nodes/errors.ts'

const U = 201 // model universe 0..200
const LIMIT = 2 ** 31

interface Sample { set: IntervalSet, model: Set<number> }

function modelOf(ranges: readonly Range[]): Set<number> {
  const m = new Set<number>()
  for (const [s, e] of ranges) for (let v = s; v < e; v++) m.add(v)
  return m
}

function sorted(m: Iterable<number>): number[] {
  return [...m].sort((a, b) => a - b)
}

const arbRanges: fc.Arbitrary<Range[]> = fc.array(
  fc.tuple(fc.nat(U - 1), fc.nat(30)).map(([s, len]): Range => [s, Math.min(s + len, U)]),
  { maxLength: 12 }
)

const arbSample: fc.Arbitrary<Sample> = fc.oneof(
  arbRanges.map(rs => ({ set: IntervalSet.fromRanges(rs), model: modelOf(rs) })),
  fc.array(fc.nat(U - 1), { maxLength: 40 }).map(vs => ({ set: IntervalSet.of(...vs), model: new Set(vs) })),
  fc.tuple(fc.nat(U), fc.nat(U)).map(([a, b]) => {
    const [s, e] = a <= b ? [a, b] : [b, a]
    return { set: IntervalSet.range(s, e), model: modelOf([[s, e]]) }
  })
)

const arbLargeSet: fc.Arbitrary<IntervalSet> = fc.array(
  fc.tuple(
    fc.oneof(fc.integer({ min: 0, max: LIMIT - 1 }), fc.integer({ min: LIMIT - 1000, max: LIMIT - 1 })),
    fc.oneof(fc.nat(10), fc.nat(LIMIT))
  ).map(([s, len]): Range => [s, Math.min(s + len, LIMIT)]),
  { maxLength: 20 }
).map(rs => IntervalSet.fromRanges(rs))

/** Asserts sorted, disjoint, non-adjacent, non-empty ranges inside [0, 2^31) and consistent counters. */
function expectNormalized(set: IntervalSet): void {
  const rs = set.ranges
  let size = 0
  let prevEnd = -1
  for (const [s, e] of rs) {
    expect(Number.isInteger(s) && Number.isInteger(e)).toBe(true)
    expect(s).toBeGreaterThanOrEqual(0)
    expect(e).toBeLessThanOrEqual(LIMIT)
    expect(s).toBeLessThan(e)
    expect(s).toBeGreaterThan(prevEnd) // disjoint and non-adjacent
    prevEnd = e
    size += e - s
  }
  expect(set.rangeCount).toBe(rs.length)
  expect(set.size).toBe(size)
  expect(set.isEmpty).toBe(size === 0)
}

function expectMatches(set: IntervalSet, model: Set<number>): void {
  expectNormalized(set)
  expect([...set.values()]).toEqual(sorted(model))
  expect(set.size).toBe(model.size)
}

/** Test-only unsigned LEB128 encoder (no canonicality guarantees needed beyond the input). */
function varints(...ns: number[]): Uint8Array {
  const out: number[] = []
  for (let n of ns) {
    while (n >= 0x80) {
      out.push((n % 0x80) | 0x80)
      n = Math.floor(n / 0x80)
    }
    out.push(n)
  }
  return Uint8Array.from(out)
}

function decodeOutcome(bytes: Uint8Array, limits?: { maxRanges?: number, universe?: number }): IntervalSet | Error {
  try {
    return IntervalSet.decode(bytes, limits)
  } catch (err) {
    return err as Error
  }
}

describe('IntervalSet vs Set<number> model', () => {
  it('constructors, queries and iteration match the model', () => {
    fc.assert(fc.property(arbSample, ({ set, model }) => {
      expectMatches(set, model)
      const vs = sorted(model)
      expect(set.min).toBe(vs[0])
      expect(set.max).toBe(vs[vs.length - 1])
      for (let v = -2; v <= U + 1; v++) expect(set.has(v)).toBe(model.has(v))
      expect(set.has(0.5)).toBe(false)
      for (let i = 0; i < vs.length; i++) expect(set.nth(i)).toBe(vs[i])
      expect(set.nth(vs.length)).toBeUndefined()
      expect(set.nth(-1)).toBeUndefined()
      expect(IntervalSet.fromRanges(set.ranges).equals(set)).toBe(true)
      expect(IntervalSet.of(...vs).equals(set)).toBe(true)
      expect(set.toJSON()).toEqual(set.ranges.map(r => [...r]))
    }), { numRuns: 300 })
  })

  it('unionAll of any number of sets matches the model and a fold of union', () => {
    fc.assert(fc.property(fc.array(arbSample, { maxLength: 6 }), (samples) => {
      const model = new Set(samples.flatMap(s => [...s.model]))
      const all = IntervalSet.unionAll(samples.map(s => s.set))
      expectMatches(all, model)
      expect(all.equals(samples.reduce((acc, s) => acc.union(s.set), IntervalSet.EMPTY))).toBe(true)
    }), { numRuns: 500 })
    const a = IntervalSet.range(0, 10)
    expect(IntervalSet.unionAll([])).toBe(IntervalSet.EMPTY)
    expect(IntervalSet.unionAll([IntervalSet.EMPTY, a])).toBe(a)
    expect(IntervalSet.unionAll([IntervalSet.range(2, 4), a, IntervalSet.range(9, 10)])).toBe(a)
  })

  it('union, difference and intersection match the model', () => {
    fc.assert(fc.property(arbSample, arbSample, (a, b) => {
      const union = new Set([...a.model, ...b.model])
      const diff = new Set([...a.model].filter(v => !b.model.has(v)))
      const inter = new Set([...a.model].filter(v => b.model.has(v)))
      expectMatches(a.set.union(b.set), union)
      expectMatches(a.set.difference(b.set), diff)
      expectMatches(a.set.intersection(b.set), inter)
      expect(a.set.union(b.set).equals(b.set.union(a.set))).toBe(true)
      expect(a.set.intersection(b.set).equals(b.set.intersection(a.set))).toBe(true)
    }), { numRuns: 500 })
  })

  it('containsAll, intersects and equals match the model', () => {
    fc.assert(fc.property(arbSample, arbSample, (a, b) => {
      const subset = [...b.model].every(v => a.model.has(v))
      const overlap = [...b.model].some(v => a.model.has(v))
      const same = subset && a.model.size === b.model.size
      expect(a.set.containsAll(b.set)).toBe(subset)
      expect(a.set.intersects(b.set)).toBe(overlap)
      expect(a.set.equals(b.set)).toBe(same)
      expect(b.set.equals(a.set)).toBe(same)
      // Derived sets exercise the true branches too.
      const sub = a.set.intersection(b.set)
      expect(a.set.containsAll(sub)).toBe(true)
      expect(a.set.intersects(sub)).toBe(!sub.isEmpty)
      expect(a.set.difference(b.set).union(sub).equals(a.set)).toBe(true)
    }), { numRuns: 500 })
  })

  it('containsAll and intersects catch near misses (one element off)', () => {
    fc.assert(fc.property(arbSample, fc.nat(U), fc.nat(U), ({ set, model }, v, w) => {
      // b = (a without w) plus v: a subset of a exactly when v is in a (or v === w and w in a).
      const b = set.difference(IntervalSet.of(w)).union(IntervalSet.of(v))
      expect(set.containsAll(b)).toBe(model.has(v))
      const single = IntervalSet.of(v)
      expect(set.intersects(single)).toBe(model.has(v))
      expect(single.intersects(set)).toBe(model.has(v))
      expect(single.containsAll(set)).toBe(model.size === 0 || (model.size === 1 && model.has(v)))
    }), { numRuns: 1000 })
  })

  it('take, splitHalf and nth match the model', () => {
    fc.assert(fc.property(arbSample, fc.nat(U + 5), ({ set, model }, count) => {
      const vs = sorted(model)
      const [first, rest] = set.take(count)
      expectMatches(first, new Set(vs.slice(0, count)))
      expectMatches(rest, new Set(vs.slice(count)))
      expect(first.union(rest).equals(set)).toBe(true)
      expect(first.intersects(rest)).toBe(false)
      const [lower, upper] = set.splitHalf()
      const half = Math.floor(vs.length / 2)
      expectMatches(lower, new Set(vs.slice(0, half)))
      expectMatches(upper, new Set(vs.slice(half)))
    }), { numRuns: 300 })
  })

  it('returns existing instances when the result is unchanged', () => {
    fc.assert(fc.property(arbSample, arbSample, ({ set: a }, { set: b }) => {
      const e = IntervalSet.EMPTY
      expect(a.union(e)).toBe(a)
      expect(e.union(a)).toBe(a)
      expect(a.union(a)).toBe(a)
      expect(a.difference(e)).toBe(a)
      expect(a.intersection(a)).toBe(a)
      const ab = a.union(b)
      expect(ab.union(a)).toBe(ab)
      expect(a.intersection(ab)).toBe(a)
      expect(a.difference(b.difference(a))).toBe(a)
      expect(a.take(0)[1]).toBe(a)
      expect(a.take(a.size)[0]).toBe(a)
    }))
  })
})

describe('encoding', () => {
  it('round-trips small and large sets; encodedLength matches', () => {
    const arb = fc.oneof(arbSample.map(s => s.set), arbLargeSet)
    fc.assert(fc.property(arb, set => {
      const bytes = set.encode()
      expect(set.encodedLength()).toBe(bytes.length)
      const back = IntervalSet.decode(bytes)
      expect(back.equals(set)).toBe(true)
      expectNormalized(back)
      expect(back.size).toBe(set.size)
    }), { numRuns: 500 })
  })

  it('arbitrary bytes decode to a canonical normalized set or throw IntervalDecodeError', () => {
    const raw = fc.uint8Array({ maxLength: 48 })
    const structured = fc.tuple(
      fc.nat(6),
      fc.array(fc.oneof(fc.nat(3), fc.nat(300), fc.nat(LIMIT + 5), fc.nat(2 ** 35 - 1)), { maxLength: 14 }),
      fc.uint8Array({ maxLength: 2 })
    ).map(([n, xs, tail]) => Uint8Array.from([...varints(n, ...xs), ...tail]))
    const limits = fc.option(fc.record({ maxRanges: fc.nat(8), universe: fc.nat(LIMIT) }), { nil: undefined })
    fc.assert(fc.property(fc.oneof(raw, structured), limits, (bytes, lim) => {
      const out = decodeOutcome(bytes, lim)
      if (out instanceof IntervalSet) {
        expectNormalized(out)
        expect(out.encode()).toEqual(bytes)
        if (lim !== undefined) {
          expect(out.rangeCount).toBeLessThanOrEqual(lim.maxRanges)
          expect(out.max ?? -1).toBeLessThan(lim.universe)
        }
      } else {
        expect(out).toBeInstanceOf(IntervalDecodeError)
        expect(out.name).toBe('IntervalDecodeError')
      }
    }), { numRuns: 2000 })
  })

  it('rejects every truncation and any trailing bytes', () => {
    fc.assert(fc.property(fc.oneof(arbSample.map(s => s.set), arbLargeSet), fc.uint8Array({ minLength: 1, maxLength: 4 }), (set, tail) => {
      const bytes = set.encode()
      for (let k = 0; k < bytes.length; k++) {
        expect(() => IntervalSet.decode(bytes.subarray(0, k))).toThrow(IntervalDecodeError)
      }
      expect(() => IntervalSet.decode(Uint8Array.from([...bytes, ...tail]))).toThrow(IntervalDecodeError)
    }))
  })

  it('examples and specific rejections', () => {
    expect([...IntervalSet.EMPTY.encode()]).toEqual([0])
    expect([...IntervalSet.fromRanges([[0, 5], [7, 9]]).encode()]).toEqual([2, 0, 5, 2, 2])
    expect(IntervalSet.decode(varints(1, 0, 3)).toString()).toBe('{[0,3)}')
    const full = IntervalSet.range(0, LIMIT)
    expect(IntervalSet.decode(full.encode()).equals(full)).toBe(true)
    const bad = (bytes: Uint8Array, limits?: { maxRanges?: number, universe?: number }): void => {
      expect(() => IntervalSet.decode(bytes, limits)).toThrow(IntervalDecodeError)
    }
    bad(new Uint8Array(0)) // missing count
    bad(varints(1, 0)) // truncated range
    bad(varints(0, 0)) // trailing byte
    bad(varints(1, 0, 0)) // zero-length range
    bad(varints(2, 0, 1, 0, 1)) // adjacent ranges
    bad(varints(1, LIMIT - 1, 2)) // past default universe
    bad(varints(1, 0, LIMIT + 1))
    expect(IntervalSet.decode(varints(1, 0, 10), { universe: 10 }).size).toBe(10)
    bad(varints(1, 0, 11), { universe: 10 })
    bad(varints(1, 10, 1), { universe: 10 })
    bad(varints(3, 0, 1, 1, 1, 1, 1), { maxRanges: 2 })
    expect(IntervalSet.decode(varints(2, 0, 1, 1, 1), { maxRanges: 2 }).rangeCount).toBe(2)
    const manyRanges = (n: number): Uint8Array => {
      const head = varints(n)
      const bytes = new Uint8Array(head.length + 2 * n).fill(1) // each range: gap 1, length 1
      bytes.set(head)
      return bytes
    }
    expect(IntervalSet.decode(manyRanges(65536)).rangeCount).toBe(65536)
    bad(manyRanges(65537)) // default maxRanges 65536
    bad(varints(70000)) // huge count with no bytes behind it
    bad(Uint8Array.from([0x81, 0x80, 0x80, 0x80, 0x80, 0x00])) // 6-byte varint
    bad(Uint8Array.from([0x80, 0x00])) // overlong zero
    bad(Uint8Array.from([1, 0x85, 0x00, 1])) // overlong gap
  })

  it('varintLength matches the encoder', () => {
    for (const [n, len] of [[0, 1], [127, 1], [128, 2], [16383, 2], [16384, 3], [LIMIT, 5], [2 ** 35 - 1, 5]] as const) {
      expect(varintLength(n)).toBe(len)
      expect(varints(n).length).toBe(len)
    }
    expect(() => varintLength(-1)).toThrow(InvalidIntervalError)
    expect(() => varintLength(1.5)).toThrow(InvalidIntervalError)
  })
})

describe('local misuse', () => {
  const invalid = (fn: () => unknown): void => {
    let caught: unknown
    try {
      fn()
    } catch (err) {
      caught = err
    }
    expect(caught).toBeInstanceOf(InvalidIntervalError)
    expect((caught as Error).name).toBe('InvalidIntervalError')
  }

  it('rejects bad ranges and ids', () => {
    invalid(() => IntervalSet.range(5, 3))
    invalid(() => IntervalSet.range(-1, 3))
    invalid(() => IntervalSet.range(0, 1.5))
    invalid(() => IntervalSet.range(Number.NaN, 1))
    invalid(() => IntervalSet.range(0, Infinity))
    invalid(() => IntervalSet.range(0, LIMIT + 1))
    invalid(() => IntervalSet.of(1, -1))
    invalid(() => IntervalSet.of(LIMIT))
    invalid(() => IntervalSet.of(0.5))
    invalid(() => IntervalSet.fromRanges([[0, 1], [3, 2]]))
    invalid(() => IntervalSet.fromRanges([[0, 1.5]]))
    invalid(() => IntervalSet.range(0, 10).take(-1))
    invalid(() => IntervalSet.range(0, 10).take(1.5))
    invalid(() => IntervalSet.decode(varints(0), { maxRanges: -1 }))
    invalid(() => IntervalSet.decode(varints(0), { universe: LIMIT + 1 }))
  })

  it('accepts edge inputs', () => {
    expect(IntervalSet.range(4, 4)).toBe(IntervalSet.EMPTY)
    expect(IntervalSet.empty()).toBe(IntervalSet.EMPTY)
    expect(IntervalSet.of()).toBe(IntervalSet.EMPTY)
    expect(IntervalSet.fromRanges([[3, 3]]).isEmpty).toBe(true)
    const full = IntervalSet.range(0, LIMIT)
    expect(full.max).toBe(LIMIT - 1)
    expect(full.size).toBe(LIMIT)
    expect(full.has(LIMIT - 1)).toBe(true)
    expect(IntervalSet.of(LIMIT - 1).max).toBe(LIMIT - 1)
    expect(IntervalSet.EMPTY.min).toBeUndefined()
    expect(IntervalSet.EMPTY.max).toBeUndefined()
    expect(IntervalSet.EMPTY.toString()).toBe('{}')
    expect(IntervalSet.of(8, 7, 0, 1, 2, 3, 4).toString()).toBe('{[0,5) [7,9)}')
    expect(JSON.stringify(IntervalSet.fromRanges([[7, 9], [0, 5], [2, 4]]))).toBe('[[0,5],[7,9]]')
    const r = IntervalSet.range(0, 3)
    const copy = r.ranges as Array<[number, number]>
    copy[0]![1] = 100
    expect(r.size).toBe(3)
    expect(r.ranges).toEqual([[0, 3]])
  })
})
