/**
 * The member list (overlay/membership.ts): facts merge by incarnation and status the same
 * way at every peer, in any order.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { MAX_GONE_MEMBERS, Membership } from '../overlay/membership.ts'
import type { MemberFact, MemberStatus } from '../overlay/messages.ts'

describe('Membership', () => {
  const f = (peer: PeerId, incarnation: number, status: MemberStatus): MemberFact => ({ peer, incarnation, status })

  it('a new peer is a change from undefined; the same fact again changes nothing', () => {
    const m = new Membership()
    expect(m.statusOf('a')).toBeUndefined()
    expect(m.incarnationOf('a')).toBe(-1)
    expect(m.apply(f('a', 0, 'alive'))).toEqual({ peer: 'a', before: undefined, after: 'alive', incarnation: 0 })
    expect(m.apply(f('a', 0, 'alive'))).toBeUndefined()
    expect(m.isAlive('a')).toBe(true)
    expect(m.size).toBe(1)
  })

  it('within one incarnation alive < left < dead: departures are final', () => {
    const m = new Membership()
    m.apply(f('a', 1, 'alive'))
    expect(m.apply(f('a', 1, 'left'))).toEqual({ peer: 'a', before: 'alive', after: 'left', incarnation: 1 })
    expect(m.apply(f('a', 1, 'alive'))).toBeUndefined()
    expect(m.statusOf('a')).toBe('left')
    expect(m.apply(f('a', 1, 'dead'))?.after).toBe('dead')
    expect(m.apply(f('a', 1, 'left'))).toBeUndefined()
    expect(m.apply(f('a', 1, 'alive'))).toBeUndefined()
    expect(m.statusOf('a')).toBe('dead')
    expect(m.isAlive('a')).toBe(false)
  })

  it('a higher incarnation wins over any status; a lower one never does', () => {
    const m = new Membership()
    m.apply(f('a', 1, 'dead'))
    expect(m.apply(f('a', 0, 'alive'))).toBeUndefined()
    expect(m.apply(f('a', 2, 'alive'))).toEqual({ peer: 'a', before: 'dead', after: 'alive', incarnation: 2 })
    expect(m.incarnationOf('a')).toBe(2)
    expect(m.apply(f('a', 1, 'dead'))).toBeUndefined()
    expect(m.isAlive('a')).toBe(true)
  })

  it('alive() is sorted by peer id, excludes departed peers and follows changes', () => {
    const m = new Membership()
    for (const p of ['p9', 'p10', 'p2', 'p1']) m.apply(f(p, 0, 'alive'))
    m.apply(f('p0', 0, 'dead'))
    expect(m.alive()).toEqual(['p1', 'p10', 'p2', 'p9'])
    const first = m.alive()
    expect(m.alive()).toBe(first)
    m.apply(f('p2', 0, 'left'))
    expect(m.alive()).toEqual(['p1', 'p10', 'p9'])
    m.apply(f('p0', 1, 'alive'))
    expect(m.alive()).toEqual(['p0', 'p1', 'p10', 'p9'])
    expect(m.facts().length).toBe(5)
  })

  it('property: any order of the same facts gives the same member list', () => {
    const arbFact = fc.record({
      peer: fc.constantFrom('a', 'b', 'c'),
      incarnation: fc.nat(3),
      status: fc.constantFrom<MemberStatus>('alive', 'left', 'dead')
    })
    const arb = fc.array(arbFact, { minLength: 1, maxLength: 15 }).chain((facts) =>
      fc.tuple(fc.constant(facts), fc.shuffledSubarray(facts, { minLength: facts.length, maxLength: facts.length })))
    const rank = { alive: 0, left: 1, dead: 2 }
    fc.assert(fc.property(arb, ([facts, shuffled]) => {
      const a = new Membership()
      const b = new Membership()
      for (const x of facts) a.apply(x)
      for (const x of shuffled) b.apply(x)
      const key = (m: Membership): string[] => m.facts().map((x) => `${x.peer}:${x.incarnation}:${x.status}`).sort()
      expect(key(b)).toEqual(key(a))
      expect(b.alive()).toEqual(a.alive())
      for (const p of ['a', 'b', 'c']) {
        const mine = facts.filter((x) => x.peer === p)
        if (mine.length === 0) { expect(a.statusOf(p)).toBeUndefined(); continue }
        const best = mine.reduce((x, y) => (y.incarnation > x.incarnation || (y.incarnation === x.incarnation && rank[y.status] > rank[x.status]) ? y : x))
        expect(a.statusOf(p)).toBe(best.status)
        expect(a.incarnationOf(p)).toBe(best.incarnation)
      }
    }), { numRuns: 200 })
  })

  it('keeps at most MAX_GONE_MEMBERS peers that left or died, forgetting the longest gone; alive ones are never forgotten', () => {
    const m = new Membership()
    for (let i = 0; i < 10; i++) m.apply({ peer: `alive${i}`, incarnation: 0, status: 'alive' })
    for (let i = 0; i < MAX_GONE_MEMBERS + 500; i++) {
      m.apply({ peer: `g${i}`, incarnation: 0, status: 'alive' })
      m.apply({ peer: `g${i}`, incarnation: 0, status: i % 2 === 0 ? 'dead' : 'left' })
    }
    expect(m.size).toBe(10 + MAX_GONE_MEMBERS)
    expect(m.alive()).toHaveLength(10)
    expect(m.statusOf('g0')).toBeUndefined()
    expect(m.statusOf('g499')).toBeUndefined()
    expect(m.statusOf('g500')).toBe('dead')
    // One that comes back is alive again and no longer counted gone; gone again, it is the newest.
    m.apply({ peer: 'g500', incarnation: 1, status: 'alive' })
    m.apply({ peer: 'g0', incarnation: 0, status: 'dead' }) // a late fact: g0 is remembered again, as dead
    expect(m.size).toBe(10 + MAX_GONE_MEMBERS + 1)
    m.apply({ peer: 'g500', incarnation: 1, status: 'dead' })
    expect(m.statusOf('g501')).toBeUndefined()
    expect(m.statusOf('g500')).toBe('dead')
    expect(m.size).toBe(10 + MAX_GONE_MEMBERS)
  })
})
