/**
 * A peer that yields ranges to a record that beat one it stated (its ownership, its claim)
 * tells every member that record (overlay/record-news.ts `spreadRecords`): the members
 * applied what it stated, and the winner may have reached few of them (a take-over one
 * view guessed and sent to its successor alone). Else their views name the yielder there
 * for good (test/migration-fuzz seed 3181). Likewise a claim that settles under a newer
 * record naming the claimer itself: a member may hold a guess that beat the claim but not
 * that record (seed 7726).
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import type { FactsMessage, Message } from '../overlay/messages.ts'
import type { Output } from '../overlay/outputs.ts'
import type { TreecastCore } from '../overlay/core.ts'
import { factsMessage, settled } from './core-loop.ts'

const facts = (f: Partial<FactsMessage>): FactsMessage => factsMessage(23, f)

/** To whom `outs` send facts carrying a record of `owner` at `version`. */
function factsTo (outs: Output[], owner: PeerId, version: number): PeerId[] {
  const to: PeerId[] = []
  for (const o of outs) {
    if (o.type !== 'send' || o.message.t !== 'facts') continue
    if (o.message.records.some((r) => r.owner === owner && r.version === version)) to.push(o.to)
  }
  return to.sort()
}

/** p4 of a settled loop, told by p1 that p3 died: p3's ranges and the claim p4 sent for them. */
function claimAtP4 (): { loop: ReturnType<typeof settled>, p4: TreecastCore, lost: IntervalSet, claim: OwnershipRecord } {
  const loop = settled()
  const p4 = loop.core('p4')
  p4.takeOutputs()
  const lost = p4.view.rangesOf('p3')
  p4.handle(loop.now, 'p1', facts({ members: [{ peer: 'p3', incarnation: 0, status: 'dead' }] }))
  const claim = p4.takeOutputs().flatMap((o) => o.type === 'send' && o.message.t === 'facts' && o.message.claim === true ? o.message.records : [])[0] as OwnershipRecord
  return { loop, p4, lost, claim }
}

describe('a yield, or a claim settled under a newer record, is told to every member', () => {
  it('an owner that a newer record (heard from one member) names another for hands its ranges over and tells the others; every view converges', () => {
    const loop = settled()
    const p4 = loop.core('p4')
    const mine = p4.ownedSet
    const newer: OwnershipRecord = { ranges: mine, owner: 'p1', version: p4.view.maxVersionIn(mine) + 2000, ownerIncarnation: 0 }
    p4.takeOutputs()
    p4.handle(loop.now, 'p0', facts({ records: [newer] }))
    const outs = p4.takeOutputs()
    expect(outs.filter((o) => o.type === 'send' && o.message.t === 'handoff').map((o) => o.type === 'send' ? o.to : '')).toEqual(['p1'])
    // Not to p1 (its hand-off says it; a bare record first would make it claim them).
    expect(factsTo(outs, 'p1', newer.version)).toEqual(['p0', 'p2', 'p3'])
    // Driven through the loop from here: nobody but p4 and p1 had heard of the record.
    const loop2 = settled()
    loop2.input('p4', (c) => c.handle(loop2.now, 'p0', facts({ records: [newer] })))
    loop2.run(200)
    expect(loop2.core('p1').ownedSet.containsAll(mine)).toBe(true)
    for (const n of loop2.running()) for (const v of mine.values()) expect([n, loop2.core(n).view.ownerOf(v), loop2.core(n).view.versionOf(v)]).toEqual([n, 'p1', newer.version])
    loop2.ok()
  })

  it('a claimer whose claim a newer record beat tells the members that record, not its owner (given a hand-off)', () => {
    const { loop, p4, lost, claim } = claimAtP4()
    expect(claim.owner).toBe('p4')
    const newer: OwnershipRecord = { ranges: lost, owner: 'p1', version: claim.version + 1000, ownerIncarnation: 0 }
    p4.handle(loop.now, 'p0', facts({ records: [newer] }))
    const ack: Message = { t: 'claim-ack', version: claim.version, ranges: claim.ranges }
    for (const m of ['p0', 'p1', 'p2']) p4.handle(loop.now, m, ack)
    const outs = p4.takeOutputs()
    expect(outs.filter((o) => o.type === 'send' && o.message.t === 'handoff').map((o) => o.type === 'send' ? o.to : '')).toEqual(['p1'])
    expect(factsTo(outs, 'p1', newer.version)).toEqual(['p0', 'p2'])
  })

  it('a claimer whose view names it at a newer version than its claim when it settles tells the members that record; not when it settles as claimed', () => {
    const { loop, p4, lost, claim } = claimAtP4()
    // Another view's take-over guess naming p4, newer: nothing sent while the claim waits.
    const newer: OwnershipRecord = { ranges: lost, owner: 'p4', version: claim.version + 1000, ownerIncarnation: 0 }
    p4.handle(loop.now, 'p0', facts({ records: [newer] }))
    expect(factsTo(p4.takeOutputs(), 'p4', newer.version)).toEqual([])
    const ack: Message = { t: 'claim-ack', version: claim.version, ranges: claim.ranges }
    for (const m of ['p0', 'p1', 'p2']) p4.handle(loop.now, m, ack)
    const outs = p4.takeOutputs()
    expect(p4.ownedSet.containsAll(lost)).toBe(true)
    expect(factsTo(outs, 'p4', newer.version)).toEqual(['p0', 'p1', 'p2'])
    // A claim that settles as it was stated sends nothing more.
    const loop2 = settled()
    const q4 = loop2.core('p4')
    q4.handle(loop2.now, 'p1', facts({ members: [{ peer: 'p3', incarnation: 0, status: 'dead' }] }))
    q4.takeOutputs()
    for (const m of ['p0', 'p1', 'p2']) q4.handle(loop2.now, m, ack)
    expect(q4.takeOutputs().filter((o) => o.type === 'send' && o.message.t === 'facts')).toEqual([])
  })

  it('a claim beaten by two owners, each on a part: each owner is told the other\'s record', () => {
    const { loop, p4, lost, claim } = claimAtP4()
    const lo = lost.values().next().value as number
    const [a, b] = [lost.intersection(IntervalSet.range(0, lo + 2)), lost.difference(IntervalSet.range(0, lo + 2))]
    expect(a.isEmpty || b.isEmpty).toBe(false)
    const toP1: OwnershipRecord = { ranges: a, owner: 'p1', version: claim.version + 1000, ownerIncarnation: 0 }
    const toP2: OwnershipRecord = { ranges: b, owner: 'p2', version: claim.version + 1000, ownerIncarnation: 0 }
    p4.handle(loop.now, 'p0', facts({ records: [toP1, toP2] }))
    const ack: Message = { t: 'claim-ack', version: claim.version, ranges: claim.ranges }
    for (const m of ['p0', 'p1', 'p2']) p4.handle(loop.now, m, ack)
    const outs = p4.takeOutputs()
    expect(factsTo(outs, 'p1', toP1.version)).toEqual(['p0', 'p2'])
    expect(factsTo(outs, 'p2', toP2.version)).toEqual(['p0', 'p1'])
  })
})
