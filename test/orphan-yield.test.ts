/**
 * A record that beats ranges this peer owns and names a peer already gone (left or dead):
 * the view re-homes it to that peer's successor (+1, overlay/ownership-engine.ts
 * `applyRecord`), and this peer yields what it owned there to that successor, by hand-off,
 * as for any record that beats its own. It kept them before, while the successor, re-homing
 * the same record, claimed them, was answered by every member and owned them too: two
 * owners (test/migration-fuzz seed 50695: a take-over of a restarted peer's old
 * incarnation, which had been handed a range its new incarnation took, named a successor
 * that left just after).
 */
import { describe, expect, it } from 'vitest'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import type { FactsMessage } from '../overlay/messages.ts'
import { factsMessage, settledAfterLeave, expectExactlyOnce } from './core-loop.ts'

const V = 23
const facts = (f: Partial<FactsMessage>): FactsMessage => factsMessage(V, f)

describe('a record naming a peer gone beats ranges this peer owns', () => {
  it('the owner yields them to the successor its view re-homes them to, which ends up the only owner', () => {
    const loop = settledAfterLeave(V, 'p2') // p2's ranges went to p3
    const p4 = loop.core('p4')
    const ranges = p4.ownedSet
    // A record some view made for p2 before it heard p2 left, beating p4's (a take-over of ranges it held as an older incarnation), reaches everyone.
    const late: OwnershipRecord = { ranges, owner: 'p2', version: p4.view.maxVersionIn(ranges) + 1000, ownerIncarnation: 0 }
    for (const n of loop.running()) loop.input(n, (c) => c.handle(loop.now, n === 'p0' ? 'p1' : 'p0', facts({ records: [late] })))
    // Re-homed to p2's successor p3 (+1): p4 owns nothing its own view names p3 for.
    expect(p4.view.partition(ranges).get('p3')?.equals(ranges)).toBe(true)
    expect(p4.ownedSet.intersects(ranges)).toBe(false)
    loop.run(1000)
    loop.ok()
    const up = loop.running()
    for (let v = 0; v < V; v++) {
      const owners = up.filter((n) => loop.core(n).ownedSet.has(v))
      expect([v, owners]).toEqual([v, [ranges.has(v) ? 'p3' : owners[0]]])
      for (const n of up) expect([n, v, loop.core(n).view.ownerOf(v)]).toEqual([n, v, owners[0]])
    }
    const id = loop.input('p0', (c) => c.broadcast(loop.now, Uint8Array.of(1)))
    loop.run(1000)
    expectExactlyOnce(loop, id, V)
    loop.ok()
  })
})
