/**
 * A leaver's close, its "left" fact and its next incarnation can reach a peer in any order
 * (the fact often comes through a third peer, after the close). Whatever is still recorded
 * as the leaver's own when it is gone for good (a hand-off that reached it after it left, a
 * take-over some view guessed for it and never told it) is re-homed by the successor rule
 * (OwnershipEngine.leaverGone). A close seen before the fact was waited on as a suspect,
 * and handled only at the end of the grace period; a rejoin of the leaver meanwhile made
 * that close stale, so it was dropped and the ranges stayed with the gone incarnation for
 * good. Seed 32953 of test/migration-fuzz: three virtual nodes lost their owner so.
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { TreecastCore } from '../overlay/core.ts'
import type { FactsMessage, MemberFact } from '../overlay/messages.ts'

/** Core `a` of founders a, b and c (8 virtual nodes: c owns [6,8)), its outputs so far taken. */
function coreA (): TreecastCore {
  const a = new TreecastCore({ self: 'a', random: () => 0.5 })
  a.bootstrap(0, 8, ['a', 'b', 'c'])
  a.takeOutputs()
  return a
}

function facts (...members: MemberFact[]): FactsMessage {
  return { t: 'facts', vnodeCount: 8, members, records: [], welcome: false }
}

/** `a` is c's successor: it claims [6,8) from its view, and owns it once b and the alive members answer. */
function expectClaimed (a: TreecastCore, now: number, answer: string[]): void {
  const c = IntervalSet.range(6, 8)
  expect(a.view.ownerOf(6)).toBe('a')
  const version = a.view.versionOf(6)
  for (const p of answer) a.handle(now, p, { t: 'claim-ack', version, ranges: c })
  expect(a.ownedSet.containsAll(c)).toBe(true)
}

describe('a leaver gone for good, whatever the order of its close, its leave and its rejoin', () => {
  it('its close first (a suspect), then its leave: re-homed at once, also if it rejoins before the grace ends', () => {
    const a = coreA()
    a.peerDown(1, 'c', 0) // waited on: perhaps a graceful leave
    expect(a.view.ownerOf(6)).toBe('c')
    a.handle(2, 'b', facts({ peer: 'c', incarnation: 0, status: 'left' }))
    expect(a.view.ownerOf(6)).toBe('a') // the close was seen: nothing more can come from it
    a.handle(3, 'b', facts({ peer: 'c', incarnation: 1, status: 'alive' }))
    a.handleTimeout(200) // the grace period ends: the close (of incarnation 0) is stale by now
    expectClaimed(a, 201, ['b', 'c'])
  })

  it('its leave, then its next incarnation, then the old close (stale, dropped)', () => {
    const a = coreA()
    a.handle(1, 'b', facts({ peer: 'c', incarnation: 0, status: 'left' }))
    expect(a.view.ownerOf(6)).toBe('c') // it may still hand it off: waited for until its close
    a.handle(2, 'b', facts({ peer: 'c', incarnation: 1, status: 'alive' }))
    a.peerDown(3, 'c', 0)
    expectClaimed(a, 4, ['b', 'c'])
  })

  it('its leave, then its close: re-homed at the close (as before)', () => {
    const a = coreA()
    a.handle(1, 'b', facts({ peer: 'c', incarnation: 0, status: 'left' }))
    a.peerDown(2, 'c', 0)
    expectClaimed(a, 3, ['b'])
  })

  it('the close of its next incarnation within the grace of the first: that incarnation is the one its leave matches', () => {
    const a = coreA()
    a.peerDown(1, 'c', 0)
    a.handle(2, 'b', facts({ peer: 'c', incarnation: 1, status: 'alive' })) // c#0 restarted: dead, [6,8) claimed by a
    expectClaimed(a, 3, ['b', 'c'])
    // c#1 is handed [6,8), then leaves: its close comes before the fact (the suspect waited on is c#1, not c#0).
    a.handle(4, 'c', { t: 'handoff', record: { ranges: IntervalSet.range(6, 8), owner: 'c', version: a.view.versionOf(6) + 1000, ownerIncarnation: 1 }, delivered: [] })
    a.takeOutputs()
    a.handle(5, 'b', { t: 'facts', vnodeCount: 8, members: [], records: [{ ranges: IntervalSet.range(6, 8), owner: 'c', version: a.view.versionOf(6) + 2000, ownerIncarnation: 1 }], welcome: false })
    expect(a.view.ownerOf(6)).toBe('c')
    a.peerDown(50, 'c', 1)
    a.handle(51, 'b', facts({ peer: 'c', incarnation: 1, status: 'left' }))
    expect(a.view.ownerOf(6)).not.toBe('c') // re-homed at once: nothing more comes from c#1
  })

  it('a grace timer of a wait that ended early does not cut short the grace of the next close', () => {
    const a = coreA()
    a.peerDown(1, 'c', 0)
    a.handle(2, 'b', facts({ peer: 'c', incarnation: 0, status: 'left' })) // ends c#0's wait early; its timer (at 101) stays queued
    a.handle(3, 'b', facts({ peer: 'c', incarnation: 1, status: 'alive' }))
    a.takeOutputs()
    a.peerDown(90, 'c', 1) // c#1's connection closes: perhaps a graceful leave too, waited on until 190
    a.handleTimeout(101)
    expect(a.members.statusOf('c')).toBe('alive')
    expect(a.takeOutputs().filter((o) => o.type === 'member')).toEqual([])
    a.handleTimeout(190)
    expect(a.members.statusOf('c')).toBe('dead')
  })
})
