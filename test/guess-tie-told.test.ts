/**
 * A record naming another peer that loses in this view to a successor the view guessed and
 * told nobody (an orphan re-home, +1) is answered by telling that successor its record
 * (overlay/record-news.ts `tellGuessed`): it claims it, or answers what beat it. Views that
 * knew different members re-homed a leaver's range to different successors at the same
 * version; the real owner's record tied with the guess and lost by peer id, so the guessing
 * view (and the snapshots it sent) named a peer that never knew, for good
 * (test/migration-fuzz seed 64537).
 */
import { describe, expect, it } from 'vitest'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import type { FactsMessage } from '../overlay/messages.ts'
import { factsMessage, settledAfterLeave, expectAgreed } from './core-loop.ts'

const V = 23
const facts = (f: Partial<FactsMessage>): FactsMessage => factsMessage(V, f)

describe('a record losing the tie to a successor this view guessed', () => {
  it('the guessed successor is told, claims it, and every view ends up naming the one owner', () => {
    const loop = settledAfterLeave(V, 'p2') // p2's ranges went to p3
    const p4 = loop.core('p4')
    const ranges = loop.core('p1').ownedSet
    const base = p4.view.maxVersionIn(ranges)
    // p4 alone hears a record naming p2 (gone): it re-homes the ranges to p2's successor p3 at +1, a guess it tells nobody.
    loop.input('p4', (c) => c.handle(loop.now, 'p0', facts({ records: [{ ranges, owner: 'p2', version: base + 1000, ownerIncarnation: 0 }] })))
    expect(p4.view.partition(ranges).get('p3')?.equals(ranges)).toBe(true)
    // The other views name p1, the owner, at the same version (their re-home picked p1): the tie goes to p3 in p4's view.
    const real: OwnershipRecord = { ranges, owner: 'p1', version: base + 1001, ownerIncarnation: 0 }
    for (const n of ['p0', 'p1', 'p3']) loop.input(n, (c) => c.handle(loop.now, 'p0', facts({ records: [real] })))
    loop.input('p4', (c) => c.handle(loop.now, 'p1', facts({ records: [real] })))
    loop.run(1000)
    loop.ok()
    expectAgreed(loop, V)
  })
})
