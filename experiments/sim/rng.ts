/**
 * Seeded pseudo-random numbers for the simulator: sfc32 (Chris Doty-Humphrey's Small
 * Fast Counting generator, 128-bit state) seeded through splitmix32. Every stream is a
 * pure function of its 32-bit seed, so simulations replay exactly.
 */

const TWO_POW_32 = 2 ** 32
const GOLDEN_GAMMA = 0x9e3779b9
/** Outputs discarded after seeding, as recommended for sfc32. */
const WARMUP_ROUNDS = 12
/** Mixed into the parent seed when forking, so a fork's seed is not a plain function of the label hash. */
const FORK_SALT = 0x6a09e667
const FNV_OFFSET_BASIS = 0x811c9dc5
const FNV_PRIME = 0x01000193

const utf8 = new TextEncoder()

/**
 * 32-bit FNV-1a hash of the UTF-8 bytes of `s`, as an unsigned integer.
 * `hashString('') === 0x811c9dc5`, `hashString('a') === 0xe40c292c`.
 */
export function hashString(s: string): number {
  let h = FNV_OFFSET_BASIS
  for (const byte of utf8.encode(s)) h = Math.imul(h ^ byte, FNV_PRIME)
  return h >>> 0
}

/** The murmur3 32-bit finaliser: a bijective mix of a 32-bit integer. */
function fmix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b)
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35)
  return (x ^ (x >>> 16)) >>> 0
}

/**
 * A deterministic random stream. Create one per simulation from a seed, and derive
 * independent sub-streams with {@link Rng.fork} (for example one per peer) so that adding
 * draws in one component does not shift the numbers another component sees.
 */
export class Rng {
  private readonly seedValue: number
  private a: number
  private b: number
  private c: number
  private d: number

  /**
   * Seeds the stream from an integer; it is reduced to 32 bits (`seed >>> 0`).
   * Throws a `RangeError` when `seed` is not an integer.
   */
  constructor(seed: number) {
    if (!Number.isInteger(seed)) throw new RangeError(`Rng seed must be an integer, got ${seed}`)
    this.seedValue = seed >>> 0
    // splitmix32: a Weyl sequence through a bijective mixer fills the sfc32 state.
    let s = this.seedValue
    s = (s + GOLDEN_GAMMA) | 0
    this.a = fmix32(s)
    s = (s + GOLDEN_GAMMA) | 0
    this.b = fmix32(s)
    s = (s + GOLDEN_GAMMA) | 0
    this.c = fmix32(s)
    s = (s + GOLDEN_GAMMA) | 0
    this.d = fmix32(s)
    for (let i = 0; i < WARMUP_ROUNDS; i++) this.uint32()
  }

  /** The 32-bit seed this stream was created from. */
  get seed(): number {
    return this.seedValue
  }

  /** The next uniformly distributed unsigned 32-bit integer. */
  uint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0
    this.d = (this.d + 1) | 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) | 0
    this.c = (((this.c << 21) | (this.c >>> 11)) + t) | 0
    return t >>> 0
  }

  /** A uniform float in `[0, 1)` with 32 bits of resolution. */
  next(): number {
    return this.uint32() / TWO_POW_32
  }

  /**
   * A uniform integer in `[0, n)`, without modulo bias (rejection sampling).
   * Throws a `RangeError` unless `n` is an integer in `[1, 2^32]`.
   */
  int(n: number): number {
    if (!Number.isInteger(n) || n <= 0 || n > TWO_POW_32) {
      throw new RangeError(`Rng.int: n must be an integer in [1, 2^32], got ${n}`)
    }
    const limit = TWO_POW_32 - (TWO_POW_32 % n)
    let x = this.uint32()
    while (x >= limit) x = this.uint32()
    return x % n
  }

  /** A uniformly chosen element of `arr`. Throws a `RangeError` when `arr` is empty. */
  pick<T>(arr: readonly T[]): T {
    if (arr.length === 0) throw new RangeError('Rng.pick: empty array')
    return arr[this.int(arr.length)] as T
  }

  /** Shuffles `arr` in place (Fisher-Yates) and returns it. */
  shuffle<T>(arr: T[]): T[] {
    for (let i = arr.length - 1; i > 0; i--) {
      const j = this.int(i + 1)
      const tmp = arr[i] as T
      arr[i] = arr[j] as T
      arr[j] = tmp
    }
    return arr
  }

  /**
   * A new stream derived from this stream's seed and `label`, without drawing from this
   * stream: the same seed and label always give the same stream, whatever has been drawn
   * so far, and different labels give unrelated streams.
   */
  fork(label: string): Rng {
    return new Rng(fmix32(fmix32(this.seedValue ^ FORK_SALT) ^ hashString(label)))
  }
}
