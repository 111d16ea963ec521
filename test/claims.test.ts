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
import { factsMessage, Loop, settled } from './core-loop.ts'

type Sent = { to: PeerId, message: Message }

function sends (outs: Output[]): Sent[] {
  const out: Sent[] = []
  for (const o of outs) if (o.type === 'send') out.push({ to: o.to, message: o.message })
  return out
}

const facts = (f: Partial<FactsMessage>): FactsMessage => factsMessage(23, f)

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
    expect(h?.t === 'handoff' && h.record.owner === 'p1' && h.record.version === newer.version && h.record.ranges.equals(lost) && h.lost === true).toBe(true)
    // p4 never held their state (p3 crashed with it): p1 starts a new lineage there.
    const p1 = loop.core('p1')
    p1.takeOutputs()
    p1.handle(loop.now, 'p4', h as Message)
    const own = p1.takeOutputs().filter((o) => o.type === 'ownership')
    expect(own.map((o) => o.type === 'ownership' ? [o.reason, o.added.toString()] : [])).toEqual([['takeover', lost.toString()]])
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

  it('two settled claims that hand the same ranges to each other: the one whose view names the other does not reclaim (migration-fuzz 39412)', () => {
    const loop = settled()
    const p0 = loop.core('p0')
    p0.takeOutputs()
    const lost = p0.view.rangesOf('p4')
    const before = p0.ownedSet
    p0.handle(loop.now, 'p1', facts({ members: [{ peer: 'p4', incarnation: 0, status: 'dead' }] }))
    const claimMsg = sends(p0.takeOutputs()).find((s) => s.message.t === 'facts' && s.message.claim === true)?.message as FactsMessage
    const claim = claimMsg.records[0] as OwnershipRecord
    expect(claim.owner).toBe('p0')
    // Views re-homed an orphan there differently (+1): p0's names p2; p2's named p0 and its own claim settled so.
    const guess: OwnershipRecord = { ranges: lost, owner: 'p2', version: claim.version + 1, ownerIncarnation: 0 }
    p0.handle(loop.now, 'p3', facts({ records: [guess] }))
    for (const m of ['p1', 'p2', 'p3']) p0.handle(loop.now, m, ack(claim))
    const mine = sends(p0.takeOutputs()).find((s) => s.to === 'p2' && s.message.t === 'handoff')?.message
    expect(mine?.t === 'handoff' && mine.lost === true && mine.record.owner === 'p2').toBe(true)
    // p2's hand-off naming p0 crosses it: same version, it loses the tie to p0's own record naming p2 (p2 > p0).
    p0.handle(loop.now, 'p2', { t: 'handoff', record: { ranges: lost, owner: 'p0', version: guess.version, ownerIncarnation: 0 }, delivered: [], lost: true })
    const outs = p0.takeOutputs()
    // p2 owns nothing there yet: it will once p0's hand-off arrives. p0 neither owns nor reclaims.
    expect(p0.ownedSet.equals(before)).toBe(true)
    expect(p0.view.ownerOf(lost.min as number)).toBe('p2')
    expect(sends(outs).filter((s) => s.message.t === 'facts' && s.message.records.some((r) => r.owner === 'p0'))).toEqual([])
    const p2 = loop.core('p2')
    p2.handle(loop.now, 'p0', mine as Message)
    expect(p2.ownedSet.containsAll(lost)).toBe(true)
  })
})

/** Hand-delivered messages between the cores of a settled loop: nothing moves unless `deliver` says so. */
function manual (cores: Map<PeerId, TreecastCore>, now: number): { q: Array<Sent & { from: PeerId }>, pump: (n: PeerId) => void, deliver: (pred: (s: Sent & { from: PeerId }) => boolean) => void } {
  const q: Array<Sent & { from: PeerId }> = []
  const pump = (name: PeerId): void => { for (const s of sends((cores.get(name) as TreecastCore).takeOutputs())) q.push({ ...s, from: name }) }
  const deliver = (pred: (s: Sent & { from: PeerId }) => boolean): void => {
    for (let i = 0; i < q.length; i++) {
      const s = q[i] as Sent & { from: PeerId }
      if (!pred(s)) continue
      q.splice(i--, 1)
      ;(cores.get(s.to) as TreecastCore).handle(now, s.from, s.message)
      pump(s.to)
    }
  }
  return { q, pump, deliver }
}

describe('crash take-overs: members learnt of later, rejoiners (review of the first version)', () => {
  it('a joiner learnt of while a claim waits, already given some claimed ranges, is asked and waited for', () => {
    const loop = settled()
    // p3 gets a range from p0 (version 1000), so a claim over p3's ranges comes at 2000.
    const g = loop.core('p0').ownedSet.take(2)[0]
    loop.input('p0', (c) => c.handle(loop.now, 'p2', { t: 'give', to: 'p3', ranges: g }))
    loop.run(200)
    loop.ok()
    const cores = new Map<PeerId, TreecastCore>([...loop.cores])
    for (const c of cores.values()) c.takeOutputs()
    const { q, pump, deliver } = manual(cores, loop.now)
    const p3 = cores.get('p3') as TreecastCore
    const S = p3.view.rangesOf('p3').difference(g).take(2)[0]
    // p3 hands S to p1, then crashes: only the hand-off gets out.
    p3.handle(loop.now, 'p1', { t: 'give', to: 'p1', ranges: S }); pump('p3')
    deliver((s) => s.from === 'p3' && s.to === 'p1' && s.message.t === 'handoff')
    q.splice(0, q.length)
    const dead = facts({ members: [{ peer: 'p3', incarnation: 0, status: 'dead' }] })
    const p4 = cores.get('p4') as TreecastCore
    p4.handle(loop.now, 'p0', dead); pump('p4')
    for (const n of ['p0', 'p1', 'p2']) { (cores.get(n) as TreecastCore).handle(loop.now, 'p4', dead); pump(n) }
    // p0x joins through p1 and is given a share of p1's ranges, S among them.
    const j = loop.create('p0x'); cores.set('p0x', j)
    j.join(loop.now, 'p1'); pump('p0x')
    deliver((s) => s.to === 'p1' && s.from === 'p0x')
    deliver((s) => s.to === 'p0x')
    expect(j.ownedSet.containsAll(S)).toBe(true)
    // p4's claim reaches p0, p1 and p2, and their answers come back; p4 learns of p0x.
    deliver((s) => s.from === 'p4' && s.to !== 'p0x')
    deliver((s) => s.to === 'p4' && s.from !== 'p0x')
    expect(p4.ownedSet.intersection(j.ownedSet).toString(), 'p4 waits for p0x').toBe(IntervalSet.EMPTY.toString())
    expect(p4.ownedSet.intersects(S)).toBe(false)
    // p0x gets the claim (from p4, and forwarded by its contact), yields S to p4 and answers p4 itself.
    deliver((s) => s.to === 'p0x')
    expect(q.filter((s) => s.from === 'p0x' && s.message.t === 'claim-ack').every((s) => s.to === 'p4')).toBe(true)
    deliver((s) => s.to === 'p4')
    expect(p4.ownedSet.intersection(j.ownedSet).isEmpty).toBe(true)
    expect(p4.ownedSet.union(j.ownedSet).containsAll(S)).toBe(true)
  })

  it('a restarted peer that rejoins through its successor, asking for its old ranges, gets them once the claim settles', () => {
    const loop = settled()
    const cores = new Map<PeerId, TreecastCore>([...loop.cores])
    for (const c of cores.values()) c.takeOutputs()
    const want = (cores.get('p4') as TreecastCore).view.rangesOf('p3')
    const p3 = new Loop().create('p3'); cores.set('p3', p3)
    const { q, pump } = manual(cores, loop.now)
    p3.join(loop.now, 'p4', { incarnation: 1, want }); pump('p3')
    for (let i = 0; i < 2000 && q.length > 0; i++) {
      const s = q.shift() as Sent & { from: PeerId }
      ;(cores.get(s.to) as TreecastCore).handle(loop.now, s.from, s.message); pump(s.to)
    }
    expect(p3.ownedSet.equals(want)).toBe(true)
    expect((cores.get('p4') as TreecastCore).ownedSet.intersects(want)).toBe(false)
  })
})

describe('PendingClaims', () => {
  const rec = (v: number): OwnershipRecord => ({ ranges: IntervalSet.range(v, v + 1), owner: 'me', version: v })

  it('settles a claim when every awaited member answered or is gone; nobody to wait for settles at once', () => {
    const pc = new PendingClaims()
    expect(pc.add(0, rec(1), [])).toHaveLength(1)
    expect(pc.add(0, rec(2), ['a', 'b'])).toEqual([])
    expect(pc.add(0, rec(3), ['b'])).toEqual([])
    expect(pc.ranges().equals(IntervalSet.range(2, 4))).toBe(true)
    expect(pc.answered('a', 3, IntervalSet.range(3, 4))).toEqual([])
    expect(pc.answered('a', 2, IntervalSet.range(2, 4))).toEqual([])
    expect(pc.answered('a', 2, IntervalSet.range(2, 3))).toEqual([])
    expect(pc.gone('b').map((c) => c.record.version)).toEqual([2, 3])
    expect(pc.size).toBe(0)
  })

  it('expires claims made timeoutMs or more ago; defers gives of claimed ranges only', () => {
    const pc = new PendingClaims()
    pc.add(10, rec(1), ['a'])
    pc.add(20, rec(2), ['a'])
    const rest = pc.deferGive('j', IntervalSet.range(0, 3))
    expect(rest.toString()).toBe(IntervalSet.of(0).toString())
    const done = pc.expire(5010, 5000)
    expect(done.map((c) => [c.record.version, c.gives.map((g) => g.ranges.toString())])).toEqual([[1, [IntervalSet.of(1).toString()]]])
    expect(pc.size).toBe(1)
  })

  it('a claim expires at the time its timer was set for, whatever the rounding of now - timeout', () => {
    // 0.7 + 5000 - 5000 rounds below 0.7: a cutoff computed that way missed the claim at its own deadline.
    expect(0.7 + 5000 - 5000 < 0.7).toBe(true)
    const pc = new PendingClaims()
    pc.add(0.7, rec(1), ['a'])
    expect(pc.expire(0.7 + 5000, 5000).map((c) => c.record.version)).toEqual([1])
  })

  it(`holds at most ${MAX_PENDING_CLAIMS} claims: past it the oldest settles`, () => {
    const pc = new PendingClaims()
    for (let i = 0; i < MAX_PENDING_CLAIMS; i++) expect(pc.add(i, rec(i), ['a'])).toEqual([])
    const out = pc.add(MAX_PENDING_CLAIMS, rec(MAX_PENDING_CLAIMS), ['a'])
    expect(out.map((c) => c.record.version)).toEqual([0])
    expect(pc.size).toBe(MAX_PENDING_CLAIMS)
  })
})
