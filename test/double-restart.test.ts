/**
 * One peer restarted twice within a propagation delay (a review's suspicion, not
 * confirmed): p2 crashes and comes back as incarnation 1, then 0-5 ms later as incarnation
 * 2, both asking for its old ranges, through one contact or two, before anyone noticed the
 * crash, a broadcast under way. The last incarnation ends with exactly its old ranges, one
 * owner per virtual node at every instant, every view naming the owners, the broadcast
 * everywhere.
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { settled } from './core-loop.ts'

describe('two restarts of one peer within a propagation delay', () => {
  for (const gap of [0, 0.5, 1, 2, 3, 5]) for (const order of ['p0,p4', 'p4,p0', 'p3,p3']) it(`two restarts ${gap} ms apart via ${order}`, () => {
    const loop = settled(23)
    const old = loop.core('p2').ownedSet
    const [c1, c2] = order.split(',') as [string, string]
    loop.down.add('p2')
    const restart = (inc: number, contact: string): void => {
      loop.down.delete('p2'); loop.cores.delete('p2'); loop.create('p2')
      loop.input('p2', (c) => c.join(loop.now, contact, { incarnation: inc, want: old }))
    }
    loop.schedule(loop.now + 40, () => { for (const n of ['p0', 'p1', 'p3', 'p4']) loop.input(n, (c) => c.peerDown(loop.now, 'p2', 0)) })
    restart(1, c1)
    const id = loop.input('p0', (c) => c.broadcast(loop.now, Uint8Array.of(1)))
    loop.run(gap)
    loop.down.add('p2')
    loop.schedule(loop.now + 40, () => { for (const n of ['p0', 'p1', 'p3', 'p4']) loop.input(n, (c) => c.peerDown(loop.now, 'p2', 1)) })
    restart(2, c2)
    loop.runUntil(() => loop.stable(), 20_000, 'stable')
    loop.run(6000)
    loop.ok()
    expect(loop.core('p2').state).toBe('running')
    expect(loop.core('p2').ownedSet.toString()).toBe(old.toString())
    let all = IntervalSet.EMPTY
    for (const n of loop.running()) all = all.union(loop.core(n).ownedSet)
    expect(all.equals(IntervalSet.range(0, 23))).toBe(true)
    for (const n of loop.running()) for (let v = 0; v < 23; v++) expect(loop.running().filter((m) => loop.core(m).ownedSet.has(v))).toEqual([loop.core(n).view.ownerOf(v)])
    const got = loop.deliveries(id).reduce((s, d) => s.union(d.out.vnodes), IntervalSet.EMPTY)
    expect(got.equals(IntervalSet.range(0, 23))).toBe(true)
  })
})
