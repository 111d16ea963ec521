/** Small statistics for the comparison: percentiles, medians, rounding. */

/** The p-th percentile (0..100) of `xs` by the nearest-rank method; NaN when empty. */
export function percentile (xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  if (s.length === 0) return NaN
  const rank = Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length)))
  return s[rank - 1] as number
}

/** The median (mean of the two middle values for an even count); NaN when empty. */
export function median (xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  if (s.length === 0) return NaN
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m] as number : ((s[m - 1] as number) + (s[m] as number)) / 2
}

/** `x` rounded to `digits` decimals; null for NaN or infinities (JSON- and table-friendly). */
export function round (x: number, digits = 1): number | null {
  if (!Number.isFinite(x)) return null
  const f = 10 ** digits
  return Math.round(x * f) / f
}
