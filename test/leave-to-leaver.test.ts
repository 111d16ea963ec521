/**
 * A graceful leave to a peer that had just left (neither had heard of the other's leave):
 * the hand-off reaches nobody. Its ranges go to the successor rule at the close of the
 * receiver's connection; their delivered marks must go along, or a part of a broadcast
 * routed again there is delivered twice though no peer crashed.
 */
import { describe, expect, it } from 'vitest'
import { settled } from './core-loop.ts'

describe('a leave to a peer that has just left', () => {
  it('the successor that takes the ranges gets their delivered marks, and the leaver waited for that', () => {
    // p1 and p2 are 10 ms apart: p1 hands its ranges to p2, which has left by the time they come.
    const lat = (a: string, b: string): number => (a === 'p1' && b === 'p2') || (a === 'p2' && b === 'p1') ? 10 : 1
    const loop = settled(23, { latency: lat })
    const id = loop.input('p0', (c) => c.broadcast(loop.now, Uint8Array.of(1)))
    loop.run(500)
    const r1 = loop.core('p1').ownedSet
    expect(loop.core('p1').streams.delivered.get(id).equals(r1)).toBe(true)
    loop.input('p2', (c) => c.leave(loop.now))
    loop.run(1)
    loop.input('p1', (c) => c.leave(loop.now))
    loop.run(3000)
    expect(loop.core('p1').state).toBe('left')
    expect(loop.outputs('left', 'p1').map((l) => l.out.type === 'left' && l.out.drained)).toEqual([true])
    const owner = loop.core('p3').view.ownerOf(r1.min as number) as string
    expect(loop.core(owner).ownedSet.containsAll(r1)).toBe(true)
    expect(loop.core(owner).streams.delivered.get(id).containsAll(r1)).toBe(true)
    loop.ok()
  })
})
