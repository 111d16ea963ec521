/**
 * A receiver announces the record of every hand-off that gave it ranges
 * (overlay/join-announce.ts): a member that missed the sender's own fan-out (the sender
 * crashed with it in flight) must not take those ranges over with the sender's.
 */
import { describe, expect, it } from 'vitest'
import { settled } from './core-loop.ts'

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
