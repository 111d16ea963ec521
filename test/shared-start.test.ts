/**
 * The founders' shared start (overlay/shared-start.ts): copies of one ownership view
 * (OwnershipMap.clone) and member lists over one founders' base (Membership.startFrom)
 * behave exactly like maps and lists of their own, and never see each other's changes.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { OwnershipMap, type OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import { initialAssignment } from '../virtual-nodes/assignment.ts'
import { FounderMembers, MAX_GONE_MEMBERS, Membership } from '../overlay/membership.ts'
import type { MemberFact } from '../overlay/messages.ts'
import { SharedStart } from '../overlay/shared-start.ts'
import { TreecastCore } from '../overlay/core.ts'
import { InvalidArgumentError } from '../overlay/errors.ts'

const SIZE = 64
const OWNERS = ['a', 'b', 'c', 'd', 'e']

const arbRecord: fc.Arbitrary<OwnershipRecord> = fc.record({
  ranges: fc.array(fc.tuple(fc.nat(SIZE + 4), fc.integer({ min: 1, max: 20 })), { minLength: 1, maxLength: 3 })
    .map((rs) => IntervalSet.fromRanges(rs.map(([s, n]) => [s, s + n]))),
  owner: fc.constantFrom(...OWNERS),
  version: fc.integer({ min: 0, max: 6 })
})

const startRecords = (): OwnershipRecord[] => [...initialAssignment(SIZE, OWNERS.slice(0, 4))].map(([owner, ranges]) => ({ ranges, owner, version: 0 }))
const key = (m: OwnershipMap): string => JSON.stringify(m.records().map((r) => [r.ranges.ranges, r.owner, r.version]))

describe('OwnershipMap.clone (copy on write)', () => {
  it('a copy and its original, each changed its own way, equal maps built apart with the same records', () => {
    fc.assert(fc.property(fc.array(arbRecord, { maxLength: 12 }), fc.array(arbRecord, { maxLength: 12 }), fc.array(arbRecord, { maxLength: 4 }), (mine, theirs, third) => {
      const base = OwnershipMap.fromRecords(SIZE, startRecords())
      const copy = base.clone()
      const copy2 = copy.clone()
      // Interleaved, so that every order of first writes is tried.
      for (let i = 0; i < Math.max(mine.length, theirs.length); i++) {
        const a = mine[i]
        const b = theirs[i]
        if (a !== undefined) copy.apply(a)
        if (b !== undefined) base.apply(b)
      }
      for (const r of third) copy2.apply(r)
      const apart = (rs: OwnershipRecord[]): OwnershipMap => { const m = OwnershipMap.fromRecords(SIZE, startRecords()); for (const r of rs) m.apply(r); return m }
      expect(key(copy)).toBe(key(apart(mine)))
      expect(key(base)).toBe(key(apart(theirs)))
      expect(key(copy2)).toBe(key(apart(third)))
      expect(copy.size).toBe(SIZE)
    }))
  })
})

describe('Membership.startFrom (founders shared)', () => {
  const arbFact: fc.Arbitrary<MemberFact> = fc.record({ peer: fc.constantFrom('a', 'b', 'c', 'x', 'y'), incarnation: fc.integer({ min: 0, max: 3 }), status: fc.constantFrom('alive' as const, 'left' as const, 'dead' as const) })

  it('answers like a list that applied the founders one by one, for any later facts and times heard', () => {
    fc.assert(fc.property(fc.array(fc.tuple(arbFact, fc.option(fc.nat(1000), { nil: undefined })), { maxLength: 30 }), (steps) => {
      const founders = new FounderMembers(['c', 'a', 'b'])
      const shared = new Membership()
      shared.startFrom(founders)
      const other = new Membership() // a second founder: its changes must not show in `shared`
      other.startFrom(founders)
      other.apply({ peer: 'a', incarnation: 5, status: 'dead' })
      const own = new Membership()
      for (const p of ['c', 'a', 'b']) own.apply({ peer: p, incarnation: 0, status: 'alive' })
      for (const [fact, heardAt] of steps) {
        expect(shared.apply(fact)).toEqual(own.apply(fact))
        if (heardAt !== undefined) expect(shared.setHeardAt(fact.peer, heardAt)).toBe(own.setHeardAt(fact.peer, heardAt))
      }
      for (const p of ['a', 'b', 'c', 'x', 'y']) {
        expect(shared.statusOf(p)).toBe(own.statusOf(p))
        expect(shared.incarnationOf(p)).toBe(own.incarnationOf(p))
        expect(shared.heardAt(p)).toBe(own.heardAt(p))
      }
      expect(shared.alive()).toEqual(own.alive())
      expect(shared.facts()).toEqual(own.facts())
      expect(shared.size).toBe(own.size)
      for (const s of ['alive', 'left', 'dead'] as const) for (const since of [-Infinity, 0, 500]) expect(shared.heardSince(s, since)).toEqual(own.heardSince(s, since))
      expect(founders.facts.get('a')).toEqual({ incarnation: 0, status: 'alive' })
    }))
  })

  it('forgets founders gone longest past MAX_GONE_MEMBERS like a list of its own, and meets them again as strangers', () => {
    const ids = Array.from({ length: MAX_GONE_MEMBERS + 3 }, (_, i) => `p${i}`)
    const shared = new Membership()
    shared.startFrom(new FounderMembers(ids))
    const own = new Membership()
    for (const p of ids) own.apply({ peer: p, incarnation: 0, status: 'alive' })
    for (const m of [shared, own]) {
      m.setHeardAt('p0', 7)
      for (const p of ids) m.apply({ peer: p, incarnation: 0, status: 'left' })
    }
    expect(shared.size).toBe(MAX_GONE_MEMBERS)
    expect(shared.statusOf('p0')).toBeUndefined()
    expect(shared.heardAt('p0')).toBeUndefined()
    expect(shared.facts()).toEqual(own.facts())
    expect(shared.apply({ peer: 'p0', incarnation: 0, status: 'alive' })).toEqual(own.apply({ peer: 'p0', incarnation: 0, status: 'alive' }))
    expect(shared.size).toBe(own.size)
    expect(shared.alive()).toEqual(['p0'])
    // It comes back last, as in a list of its own: facts() is the order a joiner applies,
    // so the order in which the joiner forgets the departed (found by the 2026-11-29 review).
    expect(shared.facts()).toEqual(own.facts())
    expect(shared.facts().at(-1)?.peer).toBe('p0')
    for (const m of [shared, own]) { m.apply({ peer: 'p0', incarnation: 1, status: 'dead' }); m.apply({ peer: 'x', incarnation: 0, status: 'dead' }) }
    expect(shared.statusOf('p0')).toBe(own.statusOf('p0'))
    expect(shared.facts()).toEqual(own.facts())
    const joinerOf = (m: Membership): Membership => { const j = new Membership(); for (const f of m.facts()) j.apply(f); j.apply({ peer: 'y', incarnation: 0, status: 'dead' }); j.apply({ peer: 'p3', incarnation: 0, status: 'alive' }); return j }
    expect(joinerOf(shared).facts()).toEqual(joinerOf(own).facts())
  })

  it('only an empty list starts from founders (InvalidArgumentError)', () => {
    const m = new Membership()
    m.apply({ peer: 'a', incarnation: 0, status: 'alive' })
    expect(() => m.startFrom(new FounderMembers(['a']))).toThrow(InvalidArgumentError)
  })
})

describe('TreecastCore.bootstrap with a shared start', () => {
  it('starts exactly as without one, and founders sharing one start do not see each other\'s changes', () => {
    const founders = ['a', 'b', 'c', 'd']
    const start = new SharedStart(10, founders)
    const own = new TreecastCore({ self: 'b', random: () => 0.5 })
    own.bootstrap(0, 10, founders)
    const b = new TreecastCore({ self: 'b', random: () => 0.5 })
    b.bootstrap(0, 10, [...founders], start) // the same list, another array
    const c = new TreecastCore({ self: 'c', random: () => 0.5 })
    c.bootstrap(0, 10, founders, start)
    expect(key(b.view)).toBe(key(own.view))
    expect(b.members.facts()).toEqual(own.members.facts())
    c.view.apply({ ranges: IntervalSet.range(0, 10), owner: 'c', version: 9 })
    c.members.apply({ peer: 'a', incarnation: 0, status: 'dead' })
    expect(key(b.view)).toBe(key(own.view))
    expect(b.members.isAlive('a')).toBe(true)
    expect(start.view.ownerOf(0)).toBe('a')
  })

  it('refuses a start built for other virtual nodes or founders (InvalidArgumentError)', () => {
    const start = new SharedStart(10, ['a', 'b'])
    expect(() => new TreecastCore({ self: 'a', random: () => 0.5 }).bootstrap(0, 12, ['a', 'b'], start)).toThrow(InvalidArgumentError)
    expect(() => new TreecastCore({ self: 'a', random: () => 0.5 }).bootstrap(0, 10, ['b', 'a'], start)).toThrow(InvalidArgumentError)
    expect(() => new SharedStart(0, ['a'])).toThrow(InvalidArgumentError)
  })
})
