/**
 * The simulated application: each virtual node's contribution to a reduction is a fixed
 * function of the reduction id and the virtual node, so the expected result is known
 * whatever churn happens (state moves with the virtual node).
 */
import type { IntervalSet } from '../../virtual-nodes/interval-set.ts'
import { BUILTIN_OPS } from '../../overlay/reduce-ops.ts'
import { hashString } from './rng.ts'

/** Element i of virtual node v's contribution: small integers, so sums are exact. */
export function contributionOf (id: string, v: number, i: number): number {
  return contributionWithSalt(idSalt(id), v, i)
}

/** The per-reduction salt of {@link contributionOf}. */
export function idSalt (id: string): number {
  return hashString(id) & 0xffff
}

/** {@link contributionOf} with the salt computed once. */
export function contributionWithSalt (salt: number, v: number, i: number): number {
  return ((v * 7919 + i * 104729 + salt) % 1000) + 1
}

/** The combined contribution of `vnodes`. */
export function contribute (id: string, op: string, length: number, vnodes: IntervalSet): Float64Array {
  const combine = BUILTIN_OPS.get(op)
  if (combine === undefined) throw new Error(`simulated application has no operation '${op}'`)
  let acc: Float64Array | null = null
  const one = new Float64Array(length)
  const salt = idSalt(id)
  for (const v of vnodes.values()) {
    for (let i = 0; i < length; i++) one[i] = contributionWithSalt(salt, v, i)
    if (acc === null) acc = Float64Array.from(one)
    else combine(acc, one)
  }
  return acc ?? new Float64Array(length)
}
