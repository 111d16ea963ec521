/**
 * Reduction operations: associative and commutative combinations of equal-length numeric
 * arrays (scalars are arrays of length 1). Custom ones are registered by name.
 */
import { InvalidArgumentError } from './errors.ts'

/** Combines `b` into `a` in place (a and b have the same length). */
export type CombineFn = (a: Float64Array, b: Float64Array) => void

function elementwise (f: (x: number, y: number) => number): CombineFn {
  return (a, b) => { for (let i = 0; i < a.length; i++) a[i] = f(a[i] as number, b[i] as number) }
}

/** The built-in operations. Bitwise ones work on the values as 32-bit integers. */
export const BUILTIN_OPS: ReadonlyMap<string, CombineFn> = new Map<string, CombineFn>([
  ['sum', (a, b) => { for (let i = 0; i < a.length; i++) a[i] = (a[i] as number) + (b[i] as number) }],
  ['prod', elementwise((x, y) => x * y)],
  // Math.min/max, not a comparison: commutative with NaN (NaN wins) and signed zeros (-0 is less).
  ['min', elementwise(Math.min)],
  ['max', elementwise(Math.max)],
  ['band', elementwise((x, y) => x & y)],
  ['bor', elementwise((x, y) => x | y)],
  ['bxor', elementwise((x, y) => x ^ y)]
])

/** The operations one core knows: the built-ins plus registered ones. */
export class OpRegistry {
  private readonly ops = new Map<string, CombineFn>(BUILTIN_OPS)

  /** Registers a custom operation; it must be associative and commutative. InvalidArgumentError: a bad name, a taken one, not a function. */
  register (name: string, fn: CombineFn): void {
    if (!/^[a-z][a-z0-9_-]{0,31}$/.test(name)) throw new InvalidArgumentError(`operation name must match [a-z][a-z0-9_-]{0,31}, got '${name}'`)
    if (this.ops.has(name)) throw new InvalidArgumentError(`operation '${name}' is already registered`)
    if (typeof fn !== 'function') throw new InvalidArgumentError(`operation '${name}' must be a function (a, b) => void, got ${typeof fn}`)
    this.ops.set(name, fn)
  }

  get (name: string): CombineFn | undefined {
    return this.ops.get(name)
  }

  has (name: string): boolean {
    return this.ops.has(name)
  }
}
