/**
 * A hand-off's delivered sets merged into the receiver's bounded dedupe cache
 * (overlay/dedupe-cache.ts) must not push out what the receiver delivered itself just
 * before: a part of such a stream routed again after a crash upstream was delivered twice.
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { successorOf } from '../virtual-nodes/assignment.ts'
import { DedupeCache } from '../overlay/dedupe-cache.ts'
import { PEERS5, settled } from './core-loop.ts'

describe('hand-offs and the bounded dedupe cache', () => {
  it('a receiver that saw one stream keeps it through a hand-off of more streams than its capacity: a re-route is not delivered again', () => {
    const cap = 4
    const loop = settled(23, { config: { dedupeCapacity: cap } })
    // R's parent P in root's latency tree crashes before acknowledging the root; S, whose successor is R once P is gone, leaves meanwhile.
    let pick: { root: string, r: string, p: string, s: string } | undefined
    for (const root of PEERS5) {
      for (const r of PEERS5) {
        const p = loop.core(r).trees.get('lat', root)?.parent
        if (r === root || p === null || p === undefined || p === root) continue
        for (const s of PEERS5) if (![root, r, p].includes(s) && successorOf(s, PEERS5.filter((n) => n !== p)) === r) pick ??= { root, r, p, s }
      }
    }
    if (pick === undefined) throw new Error('no such peers')
    const { root, r, p, s } = pick
    const id = loop.input(root, (c) => c.broadcast(loop.now, new Uint8Array(1)))
    loop.runUntil(() => loop.deliveries(id).some((d) => d.peer === r), 1000, `${r} delivered`)
    loop.crash(p)
    // S delivers `cap` messages to its own virtual nodes (streams R never sees), then hands everything to R.
    const v = loop.core(s).ownedSet.min as number
    for (let i = 0; i < cap; i++) loop.input(s, (c) => c.sendTo(loop.now, v, new Uint8Array(1)))
    loop.input(s, (c) => c.leave(loop.now))
    loop.run(3000)
    expect(loop.deliveries(id).filter((d) => d.peer === r).map((d) => d.out.vnodes.toString())).toHaveLength(1)
    loop.ok()
  })
})

describe('DedupeCache.merge', () => {
  const set = (a: number, b: number): IntervalSet => IntervalSet.range(a, b)
  it('places streams unknown here after the last stream both know, unions the known ones, and forgets the oldest of the merged order', () => {
    const c = new DedupeCache(5)
    c.set('a', set(0, 1)); c.set('b', set(0, 1)); c.set('c', set(0, 1))
    c.merge([{ streamId: 'x', vnodes: set(5, 6) }, { streamId: 'b', vnodes: set(5, 6) }, { streamId: 'y', vnodes: set(5, 6) }, { streamId: 'z', vnodes: set(5, 6) }])
    expect([...c.entries()].map(([k]) => k)).toEqual(['a', 'b', 'y', 'z', 'c']) // x, placed first, is forgotten
    expect(c.get('b').equals(IntervalSet.fromRanges([[0, 1], [5, 6]]))).toBe(true)
    expect(c.get('x').isEmpty).toBe(true)
    expect(c.evicted).toBe(1)
  })
  it('streams of the sender only, more than the capacity: the receiver keeps its own', () => {
    const c = new DedupeCache(3)
    c.set('mine', set(0, 1))
    c.merge(['m1', 'm2', 'm3', 'm4'].map((streamId) => ({ streamId, vnodes: set(2, 3) })))
    expect([...c.entries()].map(([k]) => k)).toEqual(['m3', 'm4', 'mine'])
    expect(c.size).toBe(3)
  })
})
