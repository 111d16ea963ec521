/**
 * A receiver announces the record of every hand-off that gave it ranges
 * (overlay/join-announce.ts): a member that missed the sender's own fan-out (the sender
 * crashed with it in flight) must not take those ranges over with the sender's. A recent
 * joiner tells each member it learns of about itself and what it owns.
 */
import { describe, expect, it } from 'vitest'
import { settled } from './core-loop.ts'
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
