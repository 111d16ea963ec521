import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Rng, hashString } from '../experiments/sim/rng.ts'

describe('Rng', () => {
  const draws = (r: Rng, n = 20) => Array.from({ length: n }, () => r.uint32())

  it('hashes with 32-bit FNV-1a over UTF-8', () => {
    expect(hashString('')).toBe(0x811c9dc5)
    expect(hashString('a')).toBe(0xe40c292c)
    expect(hashString('foobar')).toBe(0xbf9cf968)
    expect(hashString('é')).not.toBe(hashString('e'))
  })

  it('is deterministic per seed', () => {
    fc.assert(fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }), seed => {
      expect(draws(new Rng(seed))).toEqual(draws(new Rng(seed)))
      expect(new Rng(seed).seed).toBe(seed >>> 0)
    }))
    expect(draws(new Rng(1))).not.toEqual(draws(new Rng(2)))
    expect(new Rng(-1).seed).toBe(0xffffffff)
    expect(() => new Rng(1.5)).toThrow(RangeError)
  })

  it('forks independent, reproducible streams without consuming the parent', () => {
    const parent = new Rng(42)
    const untouched = new Rng(42)
    const f1 = parent.fork('peer-1')
    expect(draws(parent)).toEqual(draws(untouched))
    // A fork depends only on the seed and the label, not on what was drawn.
    expect(draws(parent.fork('peer-1'))).toEqual(draws(f1))
    expect(draws(new Rng(42).fork('peer-1'))).toEqual(draws(new Rng(42).fork('peer-1')))
    const streams = [draws(new Rng(42)), draws(new Rng(42).fork('peer-1')), draws(new Rng(42).fork('peer-2')), draws(new Rng(43).fork('peer-1')), draws(new Rng(42).fork(''))]
    expect(new Set(streams.map(s => s.join(','))).size).toBe(streams.length)
  })

  it('draws floats in [0, 1) and integers in [0, n)', () => {
    fc.assert(fc.property(fc.integer(), fc.integer({ min: 1, max: 2 ** 32 }), (seed, n) => {
      const r = new Rng(seed)
      for (let i = 0; i < 50; i++) {
        const x = r.int(n)
        expect(Number.isInteger(x) && x >= 0 && x < n).toBe(true)
        const f = r.next()
        expect(f >= 0 && f < 1).toBe(true)
      }
    }))
    const r = new Rng(3)
    for (const bad of [0, -1, 1.5, NaN, 2 ** 32 + 1]) expect(() => r.int(bad)).toThrow(RangeError)
    expect(r.int(1)).toBe(0)
  })

  it('is roughly uniform', () => {
    const r = new Rng(9)
    const counts = new Array<number>(6).fill(0)
    for (let i = 0; i < 60_000; i++) counts[r.int(6)]! += 1
    for (const c of counts) expect(Math.abs(c - 10_000)).toBeLessThan(500)
  })

  it('shuffles in place and picks members', () => {
    fc.assert(fc.property(fc.integer(), fc.array(fc.integer(), { maxLength: 50 }), (seed, arr) => {
      const copy = [...arr]
      const out = new Rng(seed).shuffle(copy)
      expect(out).toBe(copy)
      expect([...out].sort((x, y) => x - y)).toEqual([...arr].sort((x, y) => x - y))
      expect(new Rng(seed).shuffle([...arr])).toEqual(out)
      if (arr.length > 0) expect(arr).toContain(new Rng(seed).pick(arr))
    }))
    expect(() => new Rng(1).pick([])).toThrow(RangeError)
  })
})
