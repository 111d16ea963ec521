/**
 * A receiver announces the record of every hand-off that gave it ranges
 * (overlay/join-announce.ts): a member that missed the sender's own fan-out (the sender
 * crashed with it in flight) must not take those ranges over with the sender's. A recent
 * joiner tells each member it learns of about itself and what it owns. A contact passes
 * the facts it learns on to its recent joiners, but not while it leaves.
 */
import { describe, expect, it } from 'vitest'
import { expectAgreed, factsMessage, settled } from './core-loop.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import type { Message } from '../overlay/messages.ts'

describe('hand-off records announced by their receiver', () => {
  it('a donor asked for a joiner\'s share (most-loaded) crashes with its record in flight to one member: the joiner keeps its share', () => {
    // p0 is the most loaded (5 of 23) and 10 ms from p1; p1, the successor of p0, would otherwise claim the joiner's share at the hand-off's version and win the tie ('p1' > 'j').
    const far = (a: string, b: string): number => (a === 'p0' && b === 'p1') || (a === 'p1' && b === 'p0') ? 10 : 1
    const loop = settled(23, { config: { joinPolicy: 'most-loaded' }, latency: far })
    loop.create('j')
    loop.input('j', (c) => c.join(loop.now, 'p2'))
    loop.runUntil(() => loop.core('j').ownedSet.size > 0, 1000, 'the share')
    const share = loop.core('j').ownedSet
    loop.crash('p0')
    loop.run(5000)
    expect(loop.core('j').ownedSet.toString()).toBe(share.toString())
    expect(loop.outputs('ownership', 'j').filter((l) => l.out.type === 'ownership' && l.out.reason === 'conflict')).toEqual([])
    for (const n of loop.running()) for (const v of share.values()) expect(loop.core(n).view.ownerOf(v), n).toBe('j')
    loop.ok()
  })
})

describe('a recent joiner tells the members it learns of about itself', () => {
  it('within JOINER_FORWARD_MS of its welcome, once per member learnt of, with what it owns; not before, not after, not to itself', async () => {
    const { JoinAnnouncer, JOINER_FORWARD_MS } = await import('../overlay/join-announce.ts')
    const sent: Array<{ to: string, msg: Message }> = []
    const a = new JoinAnnouncer({ self: 'j5', members: { alive: () => ['j0', 'j5'] }, fanout: () => {}, send: (to, msg) => sent.push({ to, msg }), vnodeCount: () => 20 })
    const records = (): OwnershipRecord[] => [{ ranges: IntervalSet.range(11, 12), owner: 'j5', version: 1000, ownerIncarnation: 0 }]
    a.learnt(5, 'j2', records) // not welcomed yet: its snapshot is still to come
    expect(sent).toEqual([])
    a.welcomed(10, 'j0', { peer: 'j5', incarnation: 0, status: 'alive' })
    a.learnt(11, 'j2', records)
    a.learnt(12, 'j5', records)
    expect(sent).toEqual([{ to: 'j2', msg: { t: 'facts', vnodeCount: 20, members: [{ peer: 'j5', incarnation: 0, status: 'alive' }], records: records(), welcome: false } }])
    a.learnt(10 + JOINER_FORWARD_MS + 1, 'j3', records)
    expect(sent.length).toBe(1)
  })
})

describe('a leaving contact passes nothing on to its recent joiners', () => {
  // Members fan no records out to a leaver: what wins in its view may be a take-over that another leaver's stale view told it alone
  // (test/migration-fuzz 146785: p5, leaving, took p1's old ranges over for p2 at the version of p1's hand-off to j0, and won the tie).
  it('a take-over told to it alone, tying a member\'s record and winning by peer id, does not reach its joiner', () => {
    const loop = settled(23)
    loop.create('j')
    loop.input('j', (c) => c.join(loop.now, 'p2'))
    loop.runUntil(() => loop.core('j').state === 'running' && loop.core('j').ownedSet.size > 0, 1000, 'j joined')
    loop.run(50)
    const ranges = loop.core('p1').ownedSet
    const version = loop.core('p2').view.maxVersionIn(ranges)
    loop.input('p2', (c) => c.leave(loop.now))
    // Named p2 ('p2' > 'p1'): it wins in p2's view, which re-homes it (p2 left) and claims nothing. Passed on, j re-homed it to p3 (+1).
    loop.input('p2', (c) => c.handle(loop.now, 'p0', factsMessage(23, { records: [{ ranges, owner: 'p2', version, ownerIncarnation: 0 }] })))
    loop.run(1000)
    expect(loop.core('p2').state).toBe('left')
    for (const v of ranges.values()) expect([v, loop.core('j').view.ownerOf(v)]).toEqual([v, 'p1'])
    expectAgreed(loop, 23)
  })
})
