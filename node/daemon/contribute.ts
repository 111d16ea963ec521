/**
 * What a daemon with no application contributes to reductions: per virtual node v and
 * element, 1 (`ones`: a sum counts the virtual nodes), v (`vnode`) or 0 (`zeros`),
 * pre-combined over this peer's virtual nodes with the reduction's operation. Unknown
 * operations get zeros.
 */
import type { ContributeFn } from '../../overlay/reduction.ts'
import type { IntervalSet } from '../../virtual-nodes/interval-set.ts'
import type { Contribution } from './config.ts'

/** Most virtual nodes iterated one by one (ops without a closed form); past it: zeros. */
const MAX_ITERATED = 1 << 20

function combineOnes (op: string, vnodes: IntervalSet): number {
  switch (op) {
    case 'sum': return vnodes.size
    case 'bxor': return vnodes.size & 1
    case 'prod': case 'min': case 'max': case 'band': case 'bor': return 1
    default: return 0
  }
}

function combineIndex (op: string, vnodes: IntervalSet): number {
  const r = vnodes.ranges
  if (r.length === 0) return 0
  switch (op) {
    case 'sum': { let s = 0; for (const [a, b] of r) s += ((a + b - 1) * (b - a)) / 2; return s }
    case 'min': return r[0]![0]
    case 'max': return r[r.length - 1]![1] - 1
    case 'prod': return r[0]![0] === 0 ? 0 : iterate(vnodes, 1, (x, v) => x * v)
    case 'band': return iterate(vnodes, -1, (x, v) => x & v)
    case 'bor': return iterate(vnodes, 0, (x, v) => x | v)
    case 'bxor': return iterate(vnodes, 0, (x, v) => x ^ v)
    default: return 0
  }
}

function iterate (vnodes: IntervalSet, init: number, f: (acc: number, v: number) => number): number {
  if (vnodes.size > MAX_ITERATED) return 0
  let acc = init
  for (const v of vnodes.values()) acc = f(acc, v)
  return acc
}

export function contribution (kind: Contribution): ContributeFn {
  return (_id, start, vnodes) => {
    const out = new Float64Array(start.length)
    if (kind === 'zeros') return out
    out.fill(kind === 'ones' ? combineOnes(start.op, vnodes) : combineIndex(start.op, vnodes))
    return out
  }
}
