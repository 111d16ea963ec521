/**
 * The simulator's invariant checker (experiments/sim/checker.ts) on hand-made event
 * sequences: it must flag what the semantics forbid and nothing else. Every delivery goes
 * through it, point-to-point ones (mode `direct`) included.
 */
import { describe, expect, it } from 'vitest'
import { Checker } from '../experiments/sim/checker.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'

/** A checker over `vnodes` virtual nodes whose peers' owned sets are kept here. */
function rig (vnodes: number, peers: number): { checker: Checker, own: (p: number, s: IntervalSet, takeover?: boolean) => void, alive: boolean[] } {
  const owned: IntervalSet[] = Array.from({ length: peers }, () => IntervalSet.EMPTY)
  const alive = new Array<boolean>(peers).fill(true)
  const checker = new Checker(vnodes, (p) => alive[p] === true, () => 0, (v) => owned.flatMap((s, p) => (s.has(v) ? [p] : [])))
  const own = (p: number, s: IntervalSet, takeover = false): void => {
    const before = owned[p] as IntervalSet
    owned[p] = s
    checker.ownership(p, s.difference(before), before.difference(s), takeover)
    checker.settle()
  }
  return { checker, own, alive }
}

describe('Checker', () => {
  it('accepts one delivery per virtual node at its owner, whatever the mode', () => {
    const { checker, own } = rig(8, 2)
    own(0, IntervalSet.range(0, 4))
    own(1, IntervalSet.range(4, 8))
    checker.delivered('b1', 0, IntervalSet.range(0, 4))
    checker.delivered('b1', 1, IntervalSet.range(4, 8))
    checker.delivered('m1', 1, IntervalSet.of(6))
    expect(checker.violations).toEqual([])
    expect(checker.deliveries.get('b1')?.delivered).toBe(8)
    expect(checker.deliveries.get('m1')?.delivered).toBe(1)
  })

  it('flags a second delivery, and one at a peer that does not own the virtual node', () => {
    const { checker, own } = rig(4, 2)
    own(0, IntervalSet.range(0, 2))
    own(1, IntervalSet.range(2, 4))
    checker.delivered('m1', 0, IntervalSet.of(3))
    checker.delivered('m2', 1, IntervalSet.of(2))
    checker.delivered('m2', 1, IntervalSet.of(2))
    expect(checker.violations).toEqual([
      't=0.000ms delivery of m1 for virtual node 3 at p0, which does not own it',
      't=0.000ms duplicate delivery of m2 for virtual node 2 at p1'
    ])
    expect(checker.deliveries.get('m2')?.duplicates).toBe(1)
  })

  it('a hand-off keeps the lineage: delivering again at the new owner is a duplicate', () => {
    const { checker, own } = rig(4, 2)
    own(0, IntervalSet.range(0, 4))
    checker.delivered('m1', 0, IntervalSet.of(1))
    own(0, IntervalSet.range(2, 4))
    own(1, IntervalSet.range(0, 2))
    checker.delivered('m1', 1, IntervalSet.of(1))
    expect(checker.violations).toEqual(['t=0.000ms duplicate delivery of m1 for virtual node 1 at p1'])
  })

  it('a crash starts a new lineage: delivering again at the peer that took over is no duplicate', () => {
    const { checker, own, alive } = rig(4, 2)
    own(0, IntervalSet.range(0, 2))
    own(1, IntervalSet.range(2, 4))
    checker.delivered('m1', 0, IntervalSet.of(1))
    alive[0] = false
    checker.crashed(0)
    own(1, IntervalSet.range(0, 4), true)
    checker.delivered('m1', 1, IntervalSet.of(1))
    expect(checker.violations).toEqual([])
    expect(checker.deliveries.get('m1')?.delivered).toBe(1)
  })

  it('flags two live owners of one virtual node after an event, not a range passed on within it', () => {
    const { checker, own } = rig(4, 3)
    own(0, IntervalSet.range(0, 4))
    // p0 takes nothing more; p1 claims 3 while p0 still holds it.
    own(1, IntervalSet.of(3))
    expect(checker.violations).toEqual(['t=0.000ms two owners of virtual node 3: p0 and p1'])
  })

  it('flags a cycle when a parent change closes one', () => {
    const { checker } = rig(1, 3)
    checker.parent('lat', 0, 1, 0)
    checker.parent('lat', 0, 2, 1)
    expect(checker.violations).toEqual([])
    checker.parent('lat', 0, 1, 2)
    expect(checker.violations).toEqual(['t=0.000ms cycle in lat:0 through p1'])
  })
})
