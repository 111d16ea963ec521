/**
 * Joins through one contact under `joinPolicy: 'most-loaded'` (overlay/join-donors.ts):
 * a second join before the first donor's hand-off record came back got nothing.
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { settled } from './core-loop.ts'

describe('joinPolicy most-loaded: concurrent joins through one contact', () => {
  it('each of three joiners arriving at once gets a share, from the most loaded peers, and every virtual node keeps one owner', () => {
    const loop = settled(23, { config: { joinPolicy: 'most-loaded' } })
    const joiners = ['j0', 'j1', 'j2']
    for (const j of joiners) { loop.create(j); loop.input(j, (c) => c.join(loop.now, 'p2')) }
    loop.runUntil(() => loop.stable(), 10_000, 'stable')
    for (const j of joiners) expect(loop.core(j).ownedSet.size, j).toBeGreaterThan(0)
    let all = IntervalSet.EMPTY
    for (const n of loop.running()) all = all.union(loop.core(n).ownedSet)
    expect(all.equals(IntervalSet.range(0, 23))).toBe(true)
    loop.ok()
  })
})
