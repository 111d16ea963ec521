/**
 * Immutable sets of virtual node ids stored as sorted, disjoint, non-adjacent
 * half-open ranges in a flat number array, with linear-time set algebra and a
 * compact canonical varint wire encoding.
 */
import { IntervalDecodeError, InvalidIntervalError } from './errors.ts'

/** A half-open range `[start, end)` of virtual node ids. */
export type Range = readonly [start: number, end: number]

/** Exclusive upper bound on virtual node ids (members are `< 2^31`). */
const LIMIT = 2 ** 31
const DEFAULT_MAX_RANGES = 65536
const MAX_VARINT_BYTES = 5

/**
 * Number of bytes the unsigned LEB128 encoding of `n` occupies.
 * Accepts integers in `[0, 2^35)`; throws {@link InvalidIntervalError} otherwise.
 */
export function varintLength(n: number): number {
  if (!Number.isInteger(n) || n < 0 || n >= 2 ** 35) {
    throw new InvalidIntervalError(`varint value out of range: ${n}`)
  }
  if (n < 0x80) return 1
  if (n < 0x4000) return 2
  if (n < 0x200000) return 3
  if (n < 0x10000000) return 4
  return 5
}

function writeVarint(out: Uint8Array, pos: number, n: number): number {
  while (n >= 0x80) {
    out[pos++] = (n % 0x80) | 0x80
    n = Math.floor(n / 0x80)
  }
  out[pos++] = n
  return pos
}

/** Cursor over remote bytes; every failure is an {@link IntervalDecodeError}. */
class Reader {
  pos = 0
  constructor(readonly bytes: Uint8Array) {}

  get remaining(): number {
    return this.bytes.length - this.pos
  }

  varint(what: string): number {
    let value = 0
    let scale = 1
    for (let i = 0; i < MAX_VARINT_BYTES; i++) {
      if (this.pos >= this.bytes.length) throw new IntervalDecodeError(`truncated input reading ${what}`)
      const b = this.bytes[this.pos++]!
      value += (b & 0x7f) * scale
      if ((b & 0x80) === 0) {
        // Canonical encoding only: a multi-byte varint may not end in a zero byte.
        if (b === 0 && i > 0) throw new IntervalDecodeError(`overlong varint for ${what}`)
        return value
      }
      scale *= 0x80
    }
    throw new IntervalDecodeError(`varint for ${what} longer than ${MAX_VARINT_BYTES} bytes`)
  }
}

function checkMember(v: number, what: string): void {
  if (!Number.isInteger(v) || v < 0 || v >= LIMIT) {
    throw new InvalidIntervalError(`${what} must be an integer in [0, 2^31), got ${v}`)
  }
}

function checkRange(start: number, end: number): void {
  if (!Number.isInteger(start) || !Number.isInteger(end)) {
    throw new InvalidIntervalError(`range bounds must be integers, got [${start}, ${end})`)
  }
  if (start < 0 || end > LIMIT) {
    throw new InvalidIntervalError(`range [${start}, ${end}) outside [0, 2^31)`)
  }
  if (start > end) throw new InvalidIntervalError(`range start ${start} > end ${end}`)
}

/** Appends `[s, e)` to a flat array being built in ascending start order, merging overlap/adjacency. */
function pushMerged(out: number[], s: number, e: number): void {
  const n = out.length
  if (n > 0 && s <= out[n - 1]!) {
    if (e > out[n - 1]!) out[n - 1] = e
  } else {
    out.push(s, e)
  }
}

function flatSize(flat: readonly number[]): number {
  let size = 0
  for (let i = 0; i < flat.length; i += 2) size += flat[i + 1]! - flat[i]!
  return size
}

/**
 * An immutable set of non-negative integer virtual node ids (`< 2^31`),
 * stored as sorted, disjoint, non-adjacent, non-empty half-open ranges.
 */
export class IntervalSet {
  /** The shared empty set. */
  static readonly EMPTY: IntervalSet = new IntervalSet([], 0)

  /** Flat `[s0, e0, s1, e1, ...]`, normalized. Never mutated after construction. */
  private readonly flat: readonly number[]
  private readonly count: number

  private constructor(flat: readonly number[], size: number) {
    this.flat = flat
    this.count = size
  }

  private static wrap(flat: number[]): IntervalSet {
    return flat.length === 0 ? IntervalSet.EMPTY : new IntervalSet(flat, flatSize(flat))
  }

  /** Returns the empty set. */
  static empty(): IntervalSet {
    return IntervalSet.EMPTY
  }

  /**
   * The set `[start, end)`. `start === end` gives the empty set. Throws
   * {@link InvalidIntervalError} unless `0 <= start <= end <= 2^31` are integers.
   */
  static range(start: number, end: number): IntervalSet {
    checkRange(start, end)
    return start === end ? IntervalSet.EMPTY : new IntervalSet([start, end], end - start)
  }

  /** The set of the given ids (any order, duplicates ok). Throws {@link InvalidIntervalError} on invalid ids. */
  static of(...vnodes: number[]): IntervalSet {
    for (const v of vnodes) checkMember(v, 'virtual node id')
    const sorted = vnodes.slice().sort((a, b) => a - b)
    const flat: number[] = []
    for (const v of sorted) pushMerged(flat, v, v + 1)
    return IntervalSet.wrap(flat)
  }

  /** The union of the given ranges (any order, overlapping ok). Throws {@link InvalidIntervalError} on bad ranges. */
  static fromRanges(ranges: Iterable<Range>): IntervalSet {
    const list: Array<[number, number]> = []
    for (const [start, end] of ranges) {
      checkRange(start, end)
      if (start < end) list.push([start, end])
    }
    list.sort((a, b) => a[0] - b[0])
    const flat: number[] = []
    for (const [s, e] of list) pushMerged(flat, s, e)
    return IntervalSet.wrap(flat)
  }

  /** A fresh copy of the normalized ranges. */
  get ranges(): Range[] {
    const out: Range[] = []
    for (let i = 0; i < this.flat.length; i += 2) out.push([this.flat[i]!, this.flat[i + 1]!])
    return out
  }

  /** Number of maximal ranges. */
  get rangeCount(): number {
    return this.flat.length >> 1
  }

  /** Number of members. */
  get size(): number {
    return this.count
  }

  /** Whether the set has no members. */
  get isEmpty(): boolean {
    return this.count === 0
  }

  /** Smallest member, or `undefined` when empty. */
  get min(): number | undefined {
    return this.flat[0]
  }

  /** Largest member, or `undefined` when empty. */
  get max(): number | undefined {
    const n = this.flat.length
    return n === 0 ? undefined : this.flat[n - 1]! - 1
  }

  /** Whether `v` is a member (binary search over ranges). */
  has(v: number): boolean {
    if (!Number.isInteger(v)) return false
    const f = this.flat
    let lo = 0
    let hi = f.length >> 1 // candidate ranges [lo, hi)
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (f[2 * mid + 1]! <= v) lo = mid + 1
      else if (f[2 * mid]! > v) hi = mid
      else return true
    }
    return false
  }

  /** Whether every member of `other` is a member of this set. */
  containsAll(other: IntervalSet): boolean {
    if (other.count > this.count) return false
    const a = this.flat
    const b = other.flat
    let i = 0
    for (let j = 0; j < b.length; j += 2) {
      const s = b[j]!
      while (i < a.length && a[i + 1]! <= s) i += 2
      if (i >= a.length || a[i]! > s || a[i + 1]! < b[j + 1]!) return false
    }
    return true
  }

  /** Whether the two sets share at least one member. */
  intersects(other: IntervalSet): boolean {
    const a = this.flat
    const b = other.flat
    let i = 0
    let j = 0
    while (i < a.length && j < b.length) {
      if (a[i + 1]! <= b[j]!) i += 2
      else if (b[j + 1]! <= a[i]!) j += 2
      else return true
    }
    return false
  }

  /** Members of either set. Returns `this` or `other` when the result equals one of them. */
  union(other: IntervalSet): IntervalSet {
    if (other.count === 0) return this
    if (this.count === 0) return other
    const a = this.flat
    const b = other.flat
    const out: number[] = []
    let i = 0
    let j = 0
    while (i < a.length || j < b.length) {
      if (j >= b.length || (i < a.length && a[i]! <= b[j]!)) {
        pushMerged(out, a[i]!, a[i + 1]!)
        i += 2
      } else {
        pushMerged(out, b[j]!, b[j + 1]!)
        j += 2
      }
    }
    const size = flatSize(out)
    if (size === this.count) return this
    if (size === other.count) return other
    return new IntervalSet(out, size)
  }

  /**
   * Members of any of the sets: like folding `union`, but in one pass that builds one
   * array (a peer's reach is its own set and every child's, recomputed often).
   */
  static unionAll(sets: readonly IntervalSet[]): IntervalSet {
    let k = 0
    let only: IntervalSet = IntervalSet.EMPTY
    for (const s of sets) if (s.count > 0) { k++; only = s }
    if (k <= 1) return only
    const pos = new Array<number>(sets.length).fill(0)
    const out: number[] = []
    for (;;) {
      let best = -1
      let bestStart = Infinity
      for (let x = 0; x < sets.length; x++) {
        const f = (sets[x] as IntervalSet).flat
        const i = pos[x] as number
        if (i < f.length && f[i]! < bestStart) { bestStart = f[i]!; best = x }
      }
      if (best < 0) break
      const f = (sets[best] as IntervalSet).flat
      const i = pos[best] as number
      pushMerged(out, bestStart, f[i + 1]!)
      pos[best] = i + 2
    }
    const size = flatSize(out)
    // A subset of the union as large as the union is the union.
    for (const s of sets) if (s.count === size) return s
    return new IntervalSet(out, size)
  }

  /** Members of this set not in `other`. Returns `this` when nothing is removed. */
  difference(other: IntervalSet): IntervalSet {
    if (this.count === 0 || other.count === 0) return this
    const a = this.flat
    const b = other.flat
    const out: number[] = []
    let j = 0
    for (let i = 0; i < a.length; i += 2) {
      let cur = a[i]!
      const end = a[i + 1]!
      while (j < b.length && b[j + 1]! <= cur) j += 2
      while (j < b.length && b[j]! < end) {
        if (b[j]! > cur) out.push(cur, b[j]!)
        const bEnd = b[j + 1]!
        if (bEnd > cur) cur = bEnd
        if (bEnd > end) break
        j += 2
      }
      if (cur < end) out.push(cur, end)
    }
    const size = flatSize(out)
    return size === this.count ? this : IntervalSet.wrap(out)
  }

  /** Members of both sets. Returns `this` or `other` when the result equals one of them. */
  intersection(other: IntervalSet): IntervalSet {
    if (this.count === 0) return this
    if (other.count === 0) return other
    const a = this.flat
    const b = other.flat
    const out: number[] = []
    let i = 0
    let j = 0
    while (i < a.length && j < b.length) {
      const lo = Math.max(a[i]!, b[j]!)
      const aEnd = a[i + 1]!
      const bEnd = b[j + 1]!
      const hi = Math.min(aEnd, bEnd)
      if (lo < hi) out.push(lo, hi)
      if (aEnd <= bEnd) i += 2
      else j += 2
    }
    const size = flatSize(out)
    if (size === this.count) return this
    if (size === other.count) return other
    return IntervalSet.wrap(out)
  }

  /** Whether both sets have exactly the same members. */
  equals(other: IntervalSet): boolean {
    if (this === other) return true
    if (this.count !== other.count || this.flat.length !== other.flat.length) return false
    for (let i = 0; i < this.flat.length; i++) if (this.flat[i] !== other.flat[i]) return false
    return true
  }

  /**
   * Splits off the `count` smallest members: returns `[first, rest]`. `count`
   * beyond `size` takes everything. Throws {@link InvalidIntervalError} unless
   * `count` is a non-negative integer.
   */
  take(count: number): [first: IntervalSet, rest: IntervalSet] {
    if (!Number.isInteger(count) || count < 0) {
      throw new InvalidIntervalError(`take count must be a non-negative integer, got ${count}`)
    }
    if (count === 0) return [IntervalSet.EMPTY, this]
    if (count >= this.count) return [this, IntervalSet.EMPTY]
    const f = this.flat
    let left = count
    let i = 0
    for (; ; i += 2) {
      const len = f[i + 1]! - f[i]!
      if (len >= left) break
      left -= len
    }
    const cut = f[i]! + left
    const first = f.slice(0, i + 2)
    first[i + 1] = cut
    const rest = f.slice(cut === f[i + 1] ? i + 2 : i)
    if (cut !== f[i + 1]) rest[0] = cut
    return [new IntervalSet(first, count), new IntervalSet(rest, this.count - count)]
  }

  /** `take(Math.floor(size / 2))`: the lower half (smaller when odd) and the upper half. */
  splitHalf(): [lower: IntervalSet, upper: IntervalSet] {
    return this.take(Math.floor(this.count / 2))
  }

  /** The `index`-th smallest member (0-based), or `undefined` if out of bounds or not an integer. */
  nth(index: number): number | undefined {
    if (!Number.isInteger(index) || index < 0 || index >= this.count) return undefined
    const f = this.flat
    let left = index
    for (let i = 0; i < f.length; i += 2) {
      const len = f[i + 1]! - f[i]!
      if (left < len) return f[i]! + left
      left -= len
    }
    return undefined
  }

  /** Iterates the members in ascending order. */
  *values(): IterableIterator<number> {
    const f = this.flat
    for (let i = 0; i < f.length; i += 2) {
      const end = f[i + 1]!
      for (let v = f[i]!; v < end; v++) yield v
    }
  }

  /**
   * Canonical compact encoding: unsigned LEB128 varints `rangeCount`, then per
   * range `start - previousEnd` (previousEnd starts at 0) and `end - start`.
   */
  encode(): Uint8Array {
    const out = new Uint8Array(this.encodedLength())
    const f = this.flat
    let pos = writeVarint(out, 0, f.length >> 1)
    let prev = 0
    for (let i = 0; i < f.length; i += 2) {
      pos = writeVarint(out, pos, f[i]! - prev)
      pos = writeVarint(out, pos, f[i + 1]! - f[i]!)
      prev = f[i + 1]!
    }
    return out
  }

  /** Number of bytes {@link IntervalSet.encode} produces, computed without allocating. */
  encodedLength(): number {
    const f = this.flat
    let n = varintLength(f.length >> 1)
    let prev = 0
    for (let i = 0; i < f.length; i += 2) {
      n += varintLength(f[i]! - prev) + varintLength(f[i + 1]! - f[i]!)
      prev = f[i + 1]!
    }
    return n
  }

  /**
   * Decodes bytes produced by {@link IntervalSet.encode}. Only the canonical
   * encoding is accepted, so `decode(b).encode()` always equals `b`. Throws
   * {@link IntervalDecodeError} on truncated input, trailing bytes, overlong or
   * more-than-5-byte varints, zero-length ranges, zero gaps between ranges
   * (adjacency), members `>= universe` (default 2^31) or more than `maxRanges`
   * (default 65536) ranges. Throws {@link InvalidIntervalError} on bad `limits`.
   */
  static decode(bytes: Uint8Array, limits?: { maxRanges?: number, universe?: number }): IntervalSet {
    const maxRanges = limits?.maxRanges ?? DEFAULT_MAX_RANGES
    const universe = limits?.universe ?? LIMIT
    if (!Number.isInteger(maxRanges) || maxRanges < 0) {
      throw new InvalidIntervalError(`maxRanges must be a non-negative integer, got ${maxRanges}`)
    }
    if (!Number.isInteger(universe) || universe < 0 || universe > LIMIT) {
      throw new InvalidIntervalError(`universe must be an integer in [0, 2^31], got ${universe}`)
    }
    const r = new Reader(bytes)
    const n = r.varint('range count')
    if (n > maxRanges) throw new IntervalDecodeError(`too many ranges: ${n} > ${maxRanges}`)
    if (n * 2 > r.remaining) throw new IntervalDecodeError(`truncated input: ${n} ranges need at least ${n * 2} bytes`)
    const flat: number[] = []
    let size = 0
    let prev = 0
    for (let k = 0; k < n; k++) {
      const gap = r.varint('range gap')
      if (gap === 0 && k > 0) throw new IntervalDecodeError(`range ${k} is adjacent to the previous range`)
      const len = r.varint('range length')
      if (len === 0) throw new IntervalDecodeError(`range ${k} is empty`)
      const start = prev + gap
      const end = start + len
      if (end > universe) throw new IntervalDecodeError(`range ${k} [${start}, ${end}) exceeds universe ${universe}`)
      flat.push(start, end)
      size += len
      prev = end
    }
    if (r.remaining !== 0) throw new IntervalDecodeError(`${r.remaining} trailing bytes`)
    return n === 0 ? IntervalSet.EMPTY : new IntervalSet(flat, size)
  }

  /** Human-readable form, e.g. `{[0,5) [7,9)}`. */
  toString(): string {
    return `{${this.ranges.map(([s, e]) => `[${s},${e})`).join(' ')}}`
  }

  /** JSON form: the list of `[start, end)` pairs. */
  toJSON(): Array<[number, number]> {
    return this.ranges.map(([s, e]) => [s, e])
  }
}
