/**
 * Joins under `joinPolicy: 'most-loaded'` (overlay/join-donors.ts): a second join through
 * the same contact before the first donor's hand-off record came back got nothing; so did
 * one of two joins through two contacts at once, which both asked one donor for the same
 * ranges (the `give` is a `share` now: the donor gives half of what it owns instead).
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { settled, type Loop } from './core-loop.ts'

/** Every joiner owns some virtual nodes, and together the running peers own all 23. */
function expectSharesAndOneOwner (loop: Loop, joiners: readonly string[]): void {
  for (const j of joiners) expect(loop.core(j).ownedSet.size, j).toBeGreaterThan(0)
  let all = IntervalSet.EMPTY
  for (const n of loop.running()) all = all.union(loop.core(n).ownedSet)
  expect(all.equals(IntervalSet.range(0, 23))).toBe(true)
  loop.ok()
}

describe('joinPolicy most-loaded: concurrent joins through one contact', () => {
  it('each of three joiners arriving at once gets a share, from the most loaded peers, and every virtual node keeps one owner', () => {
    const loop = settled(23, { config: { joinPolicy: 'most-loaded' } })
    const joiners = ['j0', 'j1', 'j2']
    for (const j of joiners) { loop.create(j); loop.input(j, (c) => c.join(loop.now, 'p2')) }
    loop.runUntil(() => loop.stable(), 10_000, 'stable')
    expectSharesAndOneOwner(loop, joiners)
  })

  it('two joiners through two contacts at once: both contacts ask the same donor for the same ranges; each joiner gets a share', () => {
    const loop = settled(23, { config: { joinPolicy: 'most-loaded' } })
    const gives: Array<{ to: string, donor: string, ranges: string, share: boolean }> = []
    for (const [j, contact] of [['j0', 'p1'], ['j1', 'p3']] as const) { loop.create(j); loop.input(j, (c) => c.join(loop.now, contact)) }
    loop.runUntil(() => loop.stable(), 10_000, 'stable')
    for (const m of loop.sent) if (m.message.t === 'give') gives.push({ to: m.message.to, donor: m.to, ranges: m.message.ranges.toString(), share: m.message.share === true })
    // The situation of the defect: one donor asked twice for the same ranges.
    expect(gives.length).toBe(2)
    expect(gives[0]?.donor).toBe(gives[1]?.donor)
    expect(gives[0]?.ranges).toBe(gives[1]?.ranges)
    expect(gives.every((g) => g.share)).toBe(true)
    expectSharesAndOneOwner(loop, ['j0', 'j1'])
  })

  it('a give without share (a rejoiner\'s wanted ranges) for ranges the donor no longer owns moves nothing', () => {
    const loop = settled(23, { config: { joinPolicy: 'most-loaded' } })
    loop.create('j0')
    loop.input('j0', (c) => c.join(loop.now, 'p1'))
    loop.runUntil(() => loop.core('j0').state === 'running', 10_000, 'joined')
    loop.run(500)
    const p2 = loop.core('p2').ownedSet
    const j0 = loop.core('j0').ownedSet
    const elsewhere = IntervalSet.range(0, 23).difference(p2).difference(j0)
    loop.input('p2', (c) => c.handle(loop.now, 'p1', { t: 'give', to: 'j0', ranges: elsewhere }))
    loop.run(500)
    expect(loop.core('p2').ownedSet.equals(p2)).toBe(true)
    expect(loop.core('j0').ownedSet.equals(j0)).toBe(true)
    loop.ok()
  })
})
