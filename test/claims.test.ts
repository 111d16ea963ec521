/**
 * Crash take-overs wait for agreement (overlay/pending-claims.ts): the successor states its
 * claim to every member and owns the ranges only once each has answered (or is gone, or
 * the failure-detection timeout passed). Driven by hand on settled cores, so every step
 * is visible: what is sent, in which order, and when ownership changes.
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import type { TreecastCore } from '../overlay/core.ts'
import type { FactsMessage, Message } from '../overlay/messages.ts'
import type { Output } from '../overlay/outputs.ts'
import { MAX_PENDING_CLAIMS, PendingClaims } from '../overlay/pending-claims.ts'
import { DEFAULT_FAILURE_DETECTION_TIMEOUT_MS } from '../overlay/config.ts'
import { settled } from './core-loop.ts'

type Sent = { to: PeerId, message: Message }

function sends (outs: Output[]): Sent[] {
  const out: Sent[] = []
  for (const o of outs) if (o.type === 'send') out.push({ to: o.to, message: o.message })
  return out
}

const facts = (f: Partial<FactsMessage>): FactsMessage => ({ t: 'facts', vnodeCount: 23, members: [], records: [], welcome: false, ...f })

/** p4 learns from p1 that p3 crashed: returns its claim (sent to p0, p1, p2) and what p3 owned. */
function crashP3 (): { loop: ReturnType<typeof settled>, p4: TreecastCore, claim: OwnershipRecord, lost: IntervalSet, before: IntervalSet } {
  const loop = settled()
  const p4 = loop.core('p4')
  p4.takeOutputs()
  const lost = p4.view.rangesOf('p3')
  const before = p4.ownedSet
  p4.handle(loop.now, 'p1', facts({ members: [{ peer: 'p3', incarnation: 0, status: 'dead' }] }))
  const claims = sends(p4.takeOutputs()).filter((s) => s.message.t === 'facts' && s.message.claim === true)
  expect(claims.map((s) => s.to).sort()).toEqual(['p0', 'p1', 'p2'])
  const claim = (claims[0]?.message as FactsMessage).records[0] as OwnershipRecord
  expect(claim.owner).toBe('p4')
  expect(claim.ranges.equals(lost)).toBe(true)
  return { loop, p4, claim, lost, before }
}

const ack = (c: OwnershipRecord): Message => ({ t: 'claim-ack', version: c.version, ranges: c.ranges })

describe('crash take-overs wait for every member to answer', () => {
  it('the successor owns nothing until the last answer, then everything it claimed', () => {
    const { loop, p4, claim, lost, before } = crashP3()
    // Its view names it at once (data for these virtual nodes is routed to it and waits).
    expect(p4.view.ownerOf(lost.min as number)).toBe('p4')
    expect(p4.ownedSet.equals(before)).toBe(true)
    p4.handle(loop.now, 'p0', ack(claim))
    p4.handle(loop.now, 'p2', ack(claim))
    // An answer about another claim (other version) counts for nothing.
    p4.handle(loop.now, 'p1', { t: 'claim-ack', version: claim.version + 1, ranges: claim.ranges })
    expect(p4.ownedSet.equals(before)).toBe(true)
    p4.handle(loop.now, 'p1', ack(claim))
    expect(p4.ownedSet.equals(before.union(lost))).toBe(true)
    const own = p4.takeOutputs().filter((o) => o.type === 'ownership')
    expect(own).toHaveLength(1)
    expect(own[0]?.type === 'ownership' && own[0].reason === 'takeover' && own[0].added.equals(lost)).toBe(true)
  })

  it('a member that knows a newer record sends it before its answer; the claimer yields and hands the ranges to that owner', () => {
    const { loop, p4, claim, lost, before } = crashP3()
    const newer: OwnershipRecord = { ranges: lost, owner: 'p1', version: claim.version + 1000, ownerIncarnation: 0 }
    p4.handle(loop.now, 'p0', facts({ records: [newer] }))
    for (const m of ['p0', 'p1', 'p2']) p4.handle(loop.now, m, ack(claim))
    expect(p4.ownedSet.equals(before)).toBe(true)
    expect(p4.view.ownerOf(lost.min as number)).toBe('p1')
    // p1 may only have been guessed by some view: it is told, as if p4 had owned and yielded.
    const handoffs = sends(p4.takeOutputs()).filter((s) => s.message.t === 'handoff')
    expect(handoffs.map((s) => s.to)).toEqual(['p1'])
    const h = handoffs[0]?.message
    expect(h?.t === 'handoff' && h.record.owner === 'p1' && h.record.version === newer.version && h.record.ranges.equals(lost)).toBe(true)
  })

  it('a member answers a claim with its own records there that name another owner, then the acknowledgement', () => {
    const loop = settled()
    const p0 = loop.core('p0')
    const lost = p0.view.rangesOf('p3')
    const [low, high] = lost.splitHalf()
    const newer: OwnershipRecord = { ranges: high, owner: 'p1', version: 5000, ownerIncarnation: 0 }
    p0.handle(loop.now, 'p1', facts({ records: [newer] }))
    p0.takeOutputs()
    const claim: OwnershipRecord = { ranges: lost, owner: 'p4', version: 1000, ownerIncarnation: 0 }
    p0.handle(loop.now, 'p4', facts({ records: [claim], claim: true }))
    const toP4 = sends(p0.takeOutputs()).filter((s) => s.to === 'p4').map((s) => s.message)
    expect(toP4.map((m) => m.t)).toEqual(['facts', 'claim-ack'])
    const answer = toP4[0] as FactsMessage
    expect(answer.claim).toBeUndefined()
    expect(answer.records.map((r) => [r.owner, r.version, r.ranges.toString()])).toEqual([['p1', 5000, high.toString()]])
    expect(toP4[1]).toEqual({ t: 'claim-ack', version: 1000, ranges: lost })
    // The claim won where it was newer.
    expect(p0.view.partition(low).get('p4')?.equals(low)).toBe(true)
  })

  it('a member that dies before answering is not waited for', () => {
    const { loop, p4, claim, lost, before } = crashP3()
    p4.handle(loop.now, 'p0', ack(claim))
    p4.handle(loop.now, 'p1', ack(claim))
    p4.handle(loop.now, 'p0', facts({ members: [{ peer: 'p2', incarnation: 0, status: 'dead' }] }))
    expect(p4.ownedSet.containsAll(before.union(lost))).toBe(true)
    // p2's ranges are a claim of their own (p4 succeeds p2 too), waiting for p0 and p1.
    expect(p4.ownedSet.intersects(p4.view.rangesOf('p4').difference(before.union(lost)))).toBe(false)
  })

  it('a claim never waits for ever: unanswered, it settles at the failure-detection timeout', () => {
    const { loop, p4, lost, before } = crashP3()
    const t0 = loop.now
    for (let at = p4.nextTimeoutAt(); at !== undefined && at < t0 + DEFAULT_FAILURE_DETECTION_TIMEOUT_MS; at = p4.nextTimeoutAt()) {
      p4.handleTimeout(at)
      expect(p4.ownedSet.intersects(lost), `owned at ${at - t0} ms`).toBe(false)
    }
    p4.handleTimeout(t0 + DEFAULT_FAILURE_DETECTION_TIMEOUT_MS)
    expect(p4.ownedSet.containsAll(before.union(lost))).toBe(true)
  })

  it('a give of claimed ranges (a rejoiner asking for them) is done once the claim settles', () => {
    const { loop, p4, claim, lost } = crashP3()
    p4.handle(loop.now, 'p1', { t: 'give', to: 'p0', ranges: lost })
    expect(sends(p4.takeOutputs()).filter((s) => s.message.t === 'handoff')).toEqual([])
    for (const m of ['p0', 'p1', 'p2']) p4.handle(loop.now, m, ack(claim))
    const handoffs = sends(p4.takeOutputs()).filter((s) => s.message.t === 'handoff')
    expect(handoffs.map((s) => s.to)).toEqual(['p0'])
    expect(p4.ownedSet.intersects(lost)).toBe(false)
    expect(p4.view.ownerOf(lost.min as number)).toBe('p0')
  })

  it('a leaving peer waits for its claims, then hands what it got to its successor', () => {
    const { loop, p4, claim, lost } = crashP3()
    p4.leave(loop.now)
    for (const m of ['p0', 'p1', 'p2']) p4.handle(loop.now, m, ack(claim))
    const handoffs = sends(p4.takeOutputs()).filter((s) => s.message.t === 'handoff')
    expect(handoffs.some((s) => s.message.t === 'handoff' && s.message.record.ranges.containsAll(lost))).toBe(true)
    expect(p4.ownedSet.isEmpty).toBe(true)
  })
})

describe('PendingClaims', () => {
  const rec = (v: number): OwnershipRecord => ({ ranges: IntervalSet.range(v, v + 1), owner: 'me', version: v })

  it('settles a claim when every awaited member answered or is gone; nobody to wait for settles at once', () => {
    const pc = new PendingClaims()
    expect(pc.add(0, rec(1), [])).toHaveLength(1)
    expect(pc.add(0, rec(2), ['a', 'b'])).toEqual([])
    expect(pc.add(0, rec(3), ['b'])).toEqual([])
    expect([...pc.awaited()].sort()).toEqual(['a', 'b'])
    expect(pc.ranges().equals(IntervalSet.range(2, 4))).toBe(true)
    expect(pc.answered('a', 3, IntervalSet.range(3, 4))).toEqual([])
    expect(pc.answered('a', 2, IntervalSet.range(2, 4))).toEqual([])
    expect(pc.answered('a', 2, IntervalSet.range(2, 3))).toEqual([])
    expect(pc.gone('b').map((c) => c.record.version)).toEqual([2, 3])
    expect(pc.size).toBe(0)
  })

  it('expires claims made at or before the cutoff; defers gives of claimed ranges only', () => {
    const pc = new PendingClaims()
    pc.add(10, rec(1), ['a'])
    pc.add(20, rec(2), ['a'])
    const rest = pc.deferGive('j', IntervalSet.range(0, 3))
    expect(rest.toString()).toBe(IntervalSet.of(0).toString())
    const done = pc.expire(10)
    expect(done.map((c) => [c.record.version, c.gives.map((g) => g.ranges.toString())])).toEqual([[1, [IntervalSet.of(1).toString()]]])
    expect(pc.size).toBe(1)
  })

  it(`holds at most ${MAX_PENDING_CLAIMS} claims: past it the oldest settles`, () => {
    const pc = new PendingClaims()
    for (let i = 0; i < MAX_PENDING_CLAIMS; i++) expect(pc.add(i, rec(i), ['a'])).toEqual([])
    const out = pc.add(MAX_PENDING_CLAIMS, rec(MAX_PENDING_CLAIMS), ['a'])
    expect(out.map((c) => c.record.version)).toEqual([0])
    expect(pc.size).toBe(MAX_PENDING_CLAIMS)
  })
})
