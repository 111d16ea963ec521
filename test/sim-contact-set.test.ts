import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { ContactSet } from '../experiments/sim/contact-set.ts'

describe('ContactSet (experiments/sim/contact-set.ts)', () => {
  it('holds what was added, once each, in index order, and is empty after clear, like a Set', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 200 }), fc.array(fc.array(fc.nat(), { maxLength: 60 }), { maxLength: 4 }), (peers, rounds) => {
      const set = new ContactSet(peers)
      for (const round of rounds) {
        const added = round.map((p) => p % peers)
        for (const p of added) set.add(p)
        expect(set.sorted()).toEqual([...new Set(added)].sort((a, b) => a - b))
        set.clear()
        expect(set.sorted()).toEqual([])
      }
    }))
  })

  it('keeps peers that share a word apart (indices 31 and 32, 0 and 31)', () => {
    const set = new ContactSet(64)
    for (const p of [31, 32, 0, 63, 31]) set.add(p)
    expect(set.sorted()).toEqual([0, 31, 32, 63])
  })
})
