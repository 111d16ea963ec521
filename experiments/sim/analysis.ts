/**
 * Facts computed from a run for checks and benchmarks: the reductions' expected results
 * and the shape of a root's trees.
 */
import { BUILTIN_OPS } from '../../overlay/reduce-ops.ts'
import { contributionWithSalt, idSalt } from './ground-truth.ts'

/** The exact result of reduction `id` over virtual nodes 0..vnodes-1. */
export function groundTruth (id: string, op: string, length: number, vnodes: number): number[] {
  const combine = BUILTIN_OPS.get(op)
  const acc = new Float64Array(length)
  const one = new Float64Array(length)
  const salt = idSalt(id)
  for (let v = 0; v < vnodes; v++) {
    for (let i = 0; i < length; i++) one[i] = contributionWithSalt(salt, v, i)
    if (v === 0) acc.set(one)
    else combine?.(acc, one)
  }
  return [...acc]
}

/**
 * Whether a reduction's result `got` is the ground truth `want`. Exact, except for `prod`:
 * products of the contributions (1..1000) pass 2^53 after a few virtual nodes, so their
 * rounding depends on the order the tree combined them in (relative differences of about
 * 1e-16 were reported as wrong results). A contribution counted twice or missing changes a
 * product by a factor of at least 2 (or not at all, for a contribution of 1, as exactly).
 */
export function matchesTruth (op: string, want: readonly number[], got: ArrayLike<number>): boolean {
  if (got.length !== want.length) return false
  return want.every((x, i) => {
    const y = got[i] as number
    return x === y || (op === 'prod' && Math.abs(x - y) <= PROD_TOLERANCE * Math.abs(x))
  })
}

/** Relative rounding a product of many contributions may carry (n * 2^-53 for n far above any simulated count). */
const PROD_TOLERANCE = 1e-9

/** Depth, widest fan-out, edges crossing clusters and peers without a parent, of one tree. */
export interface TreeShape { depth: number, maxChildren: number, wanEdges: number, parentless: number }

/**
 * The shape of both trees of one root. `parentOf(kind, i)` is peer i's parent index,
 * null when it has none, undefined when it is not in that tree (or is the root).
 */
export function treeShape (peerCount: number, parentOf: (kind: 'lat' | 'bw', i: number) => number | null | undefined, clusterOf: (i: number) => number): Record<'lat' | 'bw', TreeShape> {
  const shape = (kind: 'lat' | 'bw'): TreeShape => {
    const parent = new Map<number, number>()
    const kids = new Map<number, number>()
    let parentless = 0
    for (let i = 0; i < peerCount; i++) {
      const q = parentOf(kind, i)
      if (q === undefined) continue
      if (q === null) { parentless++; continue }
      parent.set(i, q)
      kids.set(q, (kids.get(q) ?? 0) + 1)
    }
    let depth = 0
    let wanEdges = 0
    for (const [c, q] of parent) {
      if (clusterOf(c) !== clusterOf(q)) wanEdges++
      let d = 0
      for (let x: number | undefined = c; x !== undefined && d < 10000; x = parent.get(x)) d++
      if (d > depth) depth = d
    }
    return { depth, maxChildren: Math.max(0, ...kids.values()), wanEdges, parentless }
  }
  return { lat: shape('lat'), bw: shape('bw') }
}

/** Per virtual node, ms from `startMs` to the first delivery (`firstMs`, NaN: never; none at all: every one NaN). */
export function arrivalTimes (startMs: number, firstMs: ArrayLike<number> | undefined, vnodes: number): Float64Array {
  const out = new Float64Array(vnodes).fill(NaN)
  if (firstMs !== undefined) for (let v = 0; v < vnodes; v++) out[v] = (firstMs[v] as number) - startMs
  return out
}
