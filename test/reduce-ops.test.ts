/** overlay/reduce-ops.ts: the built-in reduction operations and the registry of custom ones. */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { BUILTIN_OPS, OpRegistry, type CombineFn } from '../overlay/reduce-ops.ts'
import { InvalidArgumentError } from '../overlay/errors.ts'

describe('reduction operations', () => {
  const combine = (name: string, a: number[], b: number[]): number[] => {
    const fn = BUILTIN_OPS.get(name) as CombineFn
    const acc = Float64Array.from(a)
    fn(acc, Float64Array.from(b))
    return [...acc]
  }

  it('has exactly the documented built-ins', () => {
    expect([...BUILTIN_OPS.keys()].sort()).toEqual(['band', 'bor', 'bxor', 'max', 'min', 'prod', 'sum'])
  })

  it('every built-in combines element-wise, in place', () => {
    expect(combine('sum', [1, 2, 3.5], [10, -2, 0.25])).toEqual([11, 0, 3.75])
    expect(combine('prod', [2, -3, 0.5], [4, 5, 8])).toEqual([8, -15, 4])
    expect(combine('min', [1, 9, -4], [2, 3, -5])).toEqual([1, 3, -5])
    expect(combine('max', [1, 9, -4], [2, 3, -5])).toEqual([2, 9, -4])
    expect(combine('band', [0b1100, 0xff, -1], [0b1010, 0x0f, 6])).toEqual([0b1000, 0x0f, 6])
    expect(combine('bor', [0b1100, 0, -8], [0b1010, 5, 1])).toEqual([0b1110, 5, -7])
    expect(combine('bxor', [0b1100, 7, -1], [0b1010, 7, 0])).toEqual([0b0110, 0, -1])
    // Bitwise ones work on 32-bit integers.
    expect(combine('bor', [2 ** 32 + 1], [2])).toEqual([3])
    // Scalars are arrays of length 1; empty arrays are fine.
    expect(combine('sum', [5], [6])).toEqual([11])
    expect(combine('max', [], [])).toEqual([])
    const acc = Float64Array.of(1, 2)
    ;(BUILTIN_OPS.get('sum') as CombineFn)(acc, Float64Array.of(3, 4))
    expect([...acc]).toEqual([4, 6])
  })

  it('property: every built-in is commutative and associative (exactly, on small integers)', () => {
    const arbVec = fc.array(fc.integer({ min: -1000, max: 1000 }), { minLength: 3, maxLength: 3 })
    fc.assert(fc.property(fc.constantFrom(...BUILTIN_OPS.keys()), arbVec, arbVec, arbVec, (name, a, b, c) => {
      if (name === 'prod') { a = a.map((x) => x % 50); b = b.map((x) => x % 50); c = c.map((x) => x % 50) }
      expect(combine(name, a, b)).toEqual(combine(name, b, a))
      expect(combine(name, combine(name, a, b), c)).toEqual(combine(name, a, combine(name, b, c)))
    }), { numRuns: 300 })
  })

  it('property: min and max are commutative on any doubles, NaN and signed zeros included', () => {
    const arbVec = fc.array(fc.oneof(fc.double(), fc.constantFrom(NaN, 0, -0, Infinity, -Infinity)), { minLength: 3, maxLength: 3 })
    const same = (x: number[], y: number[]): boolean => x.every((v, i) => Object.is(v, y[i]))
    fc.assert(fc.property(fc.constantFrom('min', 'max'), arbVec, arbVec, arbVec, (name, a, b, c) => {
      expect(same(combine(name, a, b), combine(name, b, a))).toBe(true)
      expect(same(combine(name, combine(name, a, b), c), combine(name, a, combine(name, b, c)))).toBe(true)
    }), { numRuns: 500 })
    expect(combine('min', [NaN, 1, 0], [1, NaN, -0]).map(String)).toEqual(['NaN', 'NaN', '0'])
    expect(Object.is(combine('min', [0], [-0])[0], -0) && Object.is(combine('max', [-0], [0])[0], 0)).toBe(true)
  })

  it('a registry knows the built-ins and registered ones', () => {
    const r = new OpRegistry()
    for (const name of BUILTIN_OPS.keys()) expect(r.has(name)).toBe(true)
    expect(r.has('avg')).toBe(false)
    expect(r.get('avg')).toBeUndefined()
    const sumsq: CombineFn = (a, b) => { for (let i = 0; i < a.length; i++) a[i] = Math.hypot(a[i] as number, b[i] as number) }
    r.register('hypot', sumsq)
    expect(r.has('hypot')).toBe(true)
    expect(r.get('hypot')).toBe(sumsq)
    r.register('a', sumsq)
    r.register('x_y-9', sumsq)
    r.register('a' + 'b'.repeat(31), sumsq)
    // Registries are independent.
    expect(new OpRegistry().has('hypot')).toBe(false)
  })

  it('bad names and duplicates throw InvalidArgumentError', () => {
    const r = new OpRegistry()
    // Not a function (from JavaScript): refused here, not a TypeError when a partial arrives.
    expect(() => r.register('obj', {} as unknown as CombineFn)).toThrow(InvalidArgumentError)
    expect(r.has('obj')).toBe(false)
    const fn: CombineFn = () => {}
    for (const bad of ['', 'Sum', '9lives', '_x', '-x', 'with space', 'a.b', 'a' + 'b'.repeat(32), 'é', 'x\n']) {
      expect(() => r.register(bad, fn), JSON.stringify(bad)).toThrow(InvalidArgumentError)
    }
    for (const name of BUILTIN_OPS.keys()) expect(() => r.register(name, fn)).toThrow(InvalidArgumentError)
    r.register('mine', fn)
    expect(() => r.register('mine', fn)).toThrow(/already registered/)
    try { r.register('mine', fn) } catch (e) { expect((e as Error).name).toBe('InvalidArgumentError') }
    // A failed registration changes nothing.
    expect(r.get('sum')).toBe(BUILTIN_OPS.get('sum'))
    expect(r.has('Sum')).toBe(false)
  })
})
