/**
 * Sibling combining plans (overlay/combine-plan.ts): the binomial tree among a parent's near
 * children that a long reduction's partials follow.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { MIN_COMBINE_CHILDREN, planCombine, type CombineChild } from '../overlay/combine-plan.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'

/** Children c0..c(n-1), child i taking the `sizes[i]` virtual nodes after child i-1's. */
function children (sizes: readonly number[]): CombineChild[] {
  let at = 0
  return sizes.map((n, i) => {
    const header = IntervalSet.range(at, at + n)
    at += n
    return { peer: `c${String(i).padStart(2, '0')}`, header }
  })
}

describe('planCombine', () => {
  it('too few near children: no plan', () => {
    expect(planCombine(children([1, 2]), () => true).size).toBe(0)
    expect(planCombine(children([1, 2, 3, 4]), (p) => p === 'c00' || p === 'c01').size).toBe(0)
    expect(MIN_COMBINE_CHILDREN).toBe(3)
  })

  it('four near children: a binomial tree, ranks by part size', () => {
    // Sizes 4, 1, 3, 2: ranks 0..3 are c01 (1), c03 (2), c02 (3), c00 (4).
    const cs = children([4, 1, 3, 2])
    const plan = planCombine(cs, () => true)
    expect(plan.get('c01')).toEqual({ extra: cs[3]!.header.union(cs[2]!.header).union(cs[0]!.header) })
    expect(plan.get('c03')).toEqual({ to: 'c01', extra: IntervalSet.EMPTY })
    expect(plan.get('c02')).toEqual({ to: 'c01', extra: cs[0]!.header })
    expect(plan.get('c00')).toEqual({ to: 'c02', extra: IntervalSet.EMPTY })
  })

  it('far children are left out and send to the parent', () => {
    const cs = children([1, 1, 1, 1, 1])
    const plan = planCombine(cs, (p) => p !== 'c02')
    expect(plan.has('c02')).toBe(false)
    expect(plan.size).toBe(4)
  })

  it('property: partials reach rank 0 without cycles, each collects exactly the parts routed through it, fan-in about log2(k)', () => {
    fc.assert(fc.property(
      fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 0, maxLength: 40 }),
      fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
      (sizes, far) => {
        const cs = children(sizes)
        const isNear = (p: string): boolean => far[Number(p.slice(1))] !== true
        const near = cs.filter((c) => isNear(c.peer))
        const plan = planCombine(cs, isNear)
        if (near.length < MIN_COMBINE_CHILDREN) { expect(plan.size).toBe(0); return }
        expect([...plan.keys()].sort()).toEqual(near.map((c) => c.peer).sort())
        const header = new Map(cs.map((c) => [c.peer, c.header]))
        const heads = [...plan.entries()].filter(([, p]) => p.to === undefined).map(([peer]) => peer)
        expect(heads).toHaveLength(1)
        // Follow `to` from every child: it ends at the head within k steps; collect what goes through each.
        const through = new Map<string, IntervalSet>()
        const senders = new Map<string, number>()
        for (const c of near) {
          let at = plan.get(c.peer)?.to
          for (let steps = 0; at !== undefined; steps++) {
            expect(steps).toBeLessThan(near.length)
            expect(plan.has(at)).toBe(true)
            through.set(at, (through.get(at) ?? IntervalSet.EMPTY).union(header.get(c.peer) as IntervalSet))
            at = plan.get(at)?.to
          }
          const to = plan.get(c.peer)?.to
          if (to !== undefined) senders.set(to, (senders.get(to) ?? 0) + 1)
        }
        for (const c of near) expect(plan.get(c.peer)?.extra.equals(through.get(c.peer) ?? IntervalSet.EMPTY)).toBe(true)
        const head = plan.get(heads[0] as string)
        let all = IntervalSet.EMPTY
        for (const c of near) all = all.union(c.header)
        expect(head?.extra.union(header.get(heads[0] as string) as IntervalSet).equals(all)).toBe(true)
        for (const n of senders.values()) expect(n).toBeLessThanOrEqual(Math.ceil(Math.log2(near.length)))
      }
    ))
  })
})
