/**
 * An ownership record naming an old incarnation of a peer, applied by a view that already
 * knows the peer rejoined as a new incarnation: applied as-is (the peer is alive, so the
 * record is no orphan to re-home; overlay/ownership-engine.ts `applyRecord`).
 *
 * Mostly that is repaired: the view that made the record (a hand-off's sender, a take-over's
 * successor) re-homes it once it hears of the rejoin (the old incarnation's death comes
 * first, and its take-over takes every range recorded for that incarnation, +1000), and
 * views that had applied it before hearing of the rejoin do the same; a peer's late
 * messages are dropped once it is known dead. Not when its sender crashed meanwhile and the
 * record reached a member after the claim that took the sender's ranges over (at the same
 * version; it wins the tie): that member named the old incarnation for good, while the new
 * one never knew (the hand-off went to the old one) and the claimer owned the ranges. Now
 * the member tells the named owner the record (overlay/record-news.ts `tellOwner`), which
 * claims it or answers what beat it, as for a take-over guessed for it.
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import type { FactsMessage } from '../overlay/messages.ts'
import { factsMessage, expectAgreed, settled, type Loop } from './core-loop.ts'

const V = 23
const facts = (f: Partial<FactsMessage>): FactsMessage => factsMessage(V, f)

/** `name` crashed (nobody noticed yet) and comes back as incarnation `inc` through `contact`, asking for `want`. */
function restart (loop: Loop, name: PeerId, contact: PeerId, inc: number, want: IntervalSet): void {
  loop.down.delete(name)
  loop.cores.delete(name)
  loop.create(name)
  loop.input(name, (c) => c.join(loop.now, contact, { incarnation: inc, want }))
}

/** Whether `peer`'s view names p3 at `v` with a record of p3's incarnation 0 while it knows p3's incarnation 1. */
function namesOldP3 (loop: Loop, peer: PeerId, v: number): boolean {
  const c = loop.core(peer)
  const rec = c.view.recordsIn(IntervalSet.range(v, v + 1))[0]
  return c.members.incarnationOf('p3') === 1 && rec?.owner === 'p3' && rec.ownerIncarnation === 0
}

describe('a record naming an old incarnation, arriving after the rejoin', () => {
  it('a hand-off\'s fan-out, late after the rejoin at every member: its sender re-homes it once it hears of the rejoin', () => {
    // p1's links are slow: its hand-off's fan-out reaches everyone after p3's rejoin.
    const slow = (a: PeerId, b: PeerId): number => (a === 'p1' || b === 'p1') && a !== b ? 30 : 1
    const loop = settled(V, { latency: slow })
    const r = loop.core('p1').ownedSet
    const old3 = loop.core('p3').ownedSet
    loop.down.add('p3') // p3 crashed; p1 hands r to it, not knowing (the hand-off is lost with p3's incarnation 0)
    loop.input('p1', (c) => c.handle(loop.now, 'p4', { t: 'give', to: 'p3', ranges: r }))
    restart(loop, 'p3', 'p4', 1, old3)
    const r0 = r.min as number
    loop.runUntil(() => namesOldP3(loop, 'p0', r0), 1000, 'p0 naming p3#0 at r')
    expect(loop.core('p3').ownedSet.intersects(r)).toBe(false)
    loop.runUntil(() => loop.stable(), 20_000, 'stable')
    loop.run(3000)
    expectAgreed(loop, V)
  })

  it('a take-over claimed by the old incarnation, delivered after its rejoin: every view takes the same one over', () => {
    const loop = settled(V)
    const r = loop.core('p2').ownedSet
    const old3 = loop.core('p3').ownedSet
    const version = loop.core('p0').view.maxVersionIn(r) + 1000
    // p2 crashed; p3#0 (its successor) claimed r and crashed at once, its claim still on the wire; p3 rejoins.
    loop.down.add('p2')
    loop.down.add('p3')
    restart(loop, 'p3', 'p4', 1, old3)
    loop.run(10)
    const claim: OwnershipRecord = { ranges: r, owner: 'p3', version, ownerIncarnation: 0 }
    for (const n of ['p0', 'p1', 'p4']) loop.input(n, (c) => c.handle(loop.now, 'p3', facts({ records: [claim], claim: true })))
    expect(namesOldP3(loop, 'p0', r.min as number)).toBe(true)
    loop.schedule(loop.now + 20, () => { for (const n of ['p0', 'p1', 'p3', 'p4']) loop.input(n, (c) => c.peerDown(loop.now, 'p2', 0)) })
    loop.runUntil(() => loop.stable(), 20_000, 'stable')
    loop.run(3000)
    expectAgreed(loop, V)
  })

  it('a hand-off\'s fan-out from a sender that crashed, reaching one member after the successor\'s claim: the new incarnation is told', () => {
    // p1 hands its ranges r to p3#0, which had just crashed, and crashes: the hand-off is lost, its fan-out reaches p0 alone,
    // late (p1 -> p0 is slow). p3 rejoins. p4 notices p1's crash; its word reaches p2 (p1's successor) at once, p0 late.
    // p2 claims r at the version p1's record has; p0 has the claim (and answers it) before p1's record, which wins the tie.
    const slow = (a: PeerId, b: PeerId): number => (a === 'p4' && b === 'p0') || (a === 'p0' && b === 'p4') ? 60 : 1
    const loop = settled(V, { latency: slow })
    const r = loop.core('p1').ownedSet
    const old3 = loop.core('p3').ownedSet
    const handed: OwnershipRecord = { ranges: r, owner: 'p3', version: loop.core('p1').view.maxVersionIn(r) + 1000, ownerIncarnation: 0 }
    loop.down.add('p3')
    loop.down.add('p1')
    restart(loop, 'p3', 'p4', 1, old3)
    loop.schedule(loop.now + 20, () => loop.input('p4', (c) => c.peerDown(loop.now, 'p1', 0)))
    // p4 declares p1 dead after the suspect grace (100 ms); p2 claims r and p0 has that claim about 2 ms later.
    loop.runUntil(() => loop.core('p0').view.ownerOf(r.min as number) === 'p2', 1000, 'p0 applying p2\'s claim')
    expect(loop.core('p0').members.statusOf('p1')).toBe('alive')
    loop.input('p0', (c) => c.handle(loop.now, 'p1', facts({ records: [handed] })))
    expect(namesOldP3(loop, 'p0', r.min as number)).toBe(true)
    loop.schedule(loop.now + 200, () => { for (const n of ['p0', 'p2', 'p3']) loop.input(n, (c) => c.peerDown(loop.now, 'p1', 0)) })
    loop.runUntil(() => loop.stable(), 20_000, 'stable')
    loop.run(3000)
    expectAgreed(loop, V)
    // p0 told p3#1 the record (overlay/record-news.ts tellOwner): it won there too, and p3 claimed r (p2 yielded it).
    expect(loop.sent.some((m) => m.from === 'p0' && m.to === 'p3' && m.message.t === 'facts' && m.message.records.some((x) => x.owner === 'p3' && x.version === handed.version))).toBe(true)
    expect(loop.core('p3').ownedSet.containsAll(r)).toBe(true)
  })
})
