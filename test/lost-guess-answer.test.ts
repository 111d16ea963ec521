/**
 * A record naming this peer that loses in its view (a crash take-over another view guessed
 * for it, sent to it alone) is answered with what beat it (overlay/ownership-engine.ts
 * `applyRecord`): the guesser's view is behind. A hand-off whose sender crashed before it
 * (and part of its fan-out) arrived leaves views that name its receiver, which never heard
 * of it, and views that take the crashed peer's ranges over for the successor at the same
 * version; where the receiver wins the tie the successor stayed silent, the receiver named
 * the successor, and nobody owned the ranges (test/migration-fuzz seed 9170).
 */
import { describe, expect, it } from 'vitest'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import type { FactsMessage } from '../overlay/messages.ts'
import type { Output } from '../overlay/outputs.ts'
import { factsMessage, expectExactlyOnce, settled } from './core-loop.ts'

const facts = (f: Partial<FactsMessage>): FactsMessage => factsMessage(23, f)

/** The records of facts that `outs` send to `to`. */
function recordsTo (outs: Output[], to: PeerId): OwnershipRecord[] {
  return outs.flatMap((o) => o.type === 'send' && o.to === to && o.message.t === 'facts' ? o.message.records : [])
}

/** The distinct claims that `outs` fan out. */
function claims (outs: Output[]): OwnershipRecord[] {
  const all = outs.flatMap((o) => o.type === 'send' && o.message.t === 'facts' && o.message.claim === true ? o.message.records : [])
  return all.filter((r, i) => all.findIndex((q) => q.version === r.version && q.owner === r.owner && q.ranges.equals(r.ranges)) === i)
}

describe('a losing record naming this peer is answered with what beat it', () => {
  it('answers the sender with the records that beat it; a winning one is claimed, not answered', () => {
    const loop = settled()
    const p4 = loop.core('p4')
    const ranges = p4.view.rangesOf('p3')
    const base = p4.view.maxVersionIn(ranges)
    const newer: OwnershipRecord = { ranges, owner: 'p2', version: base + 2000, ownerIncarnation: 0 }
    p4.handle(loop.now, 'p0', facts({ records: [newer] }))
    p4.takeOutputs()
    const guess: OwnershipRecord = { ranges, owner: 'p4', version: base + 1000, ownerIncarnation: 0 }
    p4.handle(loop.now, 'p1', facts({ records: [guess] }))
    const outs = p4.takeOutputs()
    expect(recordsTo(outs, 'p1').map((r) => [r.owner, r.version, r.ranges.toString()])).toEqual([['p2', newer.version, ranges.toString()]])
    expect(claims(outs)).toEqual([])
    // A guess that wins is claimed (fanned out to all), with no answer naming others.
    const loop2 = settled()
    const q4 = loop2.core('p4')
    q4.takeOutputs()
    q4.handle(loop2.now, 'p1', facts({ records: [guess] }))
    const outs2 = q4.takeOutputs()
    expect(claims(outs2).map((r) => [r.owner, r.version, r.ranges.toString()])).toEqual([['p4', guess.version, ranges.toString()]])
    expect(recordsTo(outs2, 'p1').filter((r) => r.owner !== 'p4')).toEqual([])
  })

  it('a hand-off lost with its crashed sender, its fan-out reaching the successor only: the receiver ends up owning it, every view agreeing', () => {
    const loop = settled()
    const ranges = loop.core('p1').ownedSet
    // p1 handed its ranges to p3 and crashed: the hand-off and the fan-out to p3 and p4 lost. p2 (p1's successor) and p0 have the record.
    const handed: OwnershipRecord = { ranges, owner: 'p3', version: loop.core('p1').view.maxVersionIn(ranges) + 1000, ownerIncarnation: 0 }
    for (const n of ['p0', 'p2']) loop.input(n, (c) => c.handle(loop.now, 'p1', facts({ records: [handed] })))
    loop.crash('p1')
    loop.runUntil(() => loop.core('p3').ownedSet.containsAll(ranges), 5_000, 'p3 owning the hand-off lost with p1')
    loop.run(500)
    for (const n of loop.running()) for (const v of ranges.values()) expect([n, v, loop.core(n).view.ownerOf(v)]).toEqual([n, v, 'p3'])
    const id = loop.input('p0', (c) => c.broadcast(loop.now, Uint8Array.of(1)))
    loop.run(500)
    expectExactlyOnce(loop, id, 23)
    loop.ok()
  })
})
