/**
 * Collective reductions (overlay/collective.ts, overlay/reduction.ts): every peer calls the
 * reduction, leaves send first, no start travels down (003 §IV-E as the paper runs it).
 * Driven by the in-test loop of test/core-loop.ts.
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { CoreInit } from '../overlay/config.ts'
import { InvalidArgumentError } from '../overlay/errors.ts'
import type { Output } from '../overlay/outputs.ts'
import { type Loop, settled } from './core-loop.ts'

type Reduced = Extract<Output, { type: 'reduced' }>

/** The loop's contributions ([v + 1, 1] for a sum of length 2) over 0..22. */
const SUM23 = [23 * 24 / 2, 23]

function call (loop: Loop, peer: PeerId, id: string, root: PeerId, length = 2): void {
  loop.input(peer, (c) => { c.reduceCollective(loop.now, { id, root, op: 'sum', length }) })
}

function resultOf (loop: Loop, id: string): Reduced | undefined {
  return loop.outputs('reduced').map((l) => l.out as Reduced).find((o) => o.id === id)
}

function waitFor (loop: Loop, id: string, maxMs = 70_000): Reduced {
  loop.runUntil(() => resultOf(loop, id) !== undefined || loop.outputs('reduce-failed').length > 0, maxMs, `collective ${id}`)
  const r = resultOf(loop, id)
  if (r === undefined) throw new Error(`no result for ${id}`)
  return r
}

/** Counts, per virtual node, how often a core asked for its contribution to `id`. */
function counting (id: string): { counts: Map<number, number>, opts: { onContribute: (p: PeerId, i: string, v: IntervalSet) => void } } {
  const counts = new Map<number, number>()
  return { counts, opts: { onContribute: (_p, i, v) => { if (i === id) for (const x of v.values()) counts.set(x, (counts.get(x) ?? 0) + 1) } } }
}

function expectOnceEach (counts: Map<number, number>, vnodes: number): void {
  for (let v = 0; v < vnodes; v++) expect(counts.get(v), `virtual node ${v}`).toBe(1)
}

/** Waits for `id`'s result at `root`: the right total, each virtual node contributed once, no overlap dropped at the root. */
function expectCountedOnce (loop: Loop, id: string, root: PeerId, counts: Map<number, number>): void {
  const r = waitFor(loop, id)
  expect([...r.value]).toEqual(SUM23)
  expectOnceEach(counts, 23)
  expect(loop.core(root).reductions.stats.overlapsDropped).toBe(0)
  loop.ok()
}

describe('collective reductions', () => {
  it('every peer calls it at once: the right total at the root, no start down the tree, sooner than a started one', () => {
    const { counts, opts } = counting('step-1')
    const loop = settled(23, opts)
    const startedId = loop.input('p1', (c) => c.reduce(loop.now, { op: 'sum', length: 2 }))
    const t0 = loop.now
    loop.runUntil(() => loop.outputs('reduced').length > 0, 5000, 'started')
    const startedMs = loop.now - t0
    expect(resultOf(loop, startedId)?.value).toEqual(Float64Array.from(SUM23))

    const t1 = loop.now
    const sentBefore = loop.sent.length
    for (const p of loop.running()) call(loop, p, 'step-1', 'p1')
    const r = waitFor(loop, 'step-1')
    const collectiveMs = loop.now - t1
    expect([...r.value]).toEqual(SUM23)
    expect(r.covered.equals(IntervalSet.range(0, 23))).toBe(true)
    expectOnceEach(counts, 23)
    const msgs = loop.sent.slice(sentBefore)
    // Partials only, each marked collective, and no stream (a start) at all.
    expect(msgs.some((m) => m.message.t === 'chunk')).toBe(false)
    expect(msgs.filter((m) => m.message.t === 'partial').every((m) => m.message.t === 'partial' && m.message.coll !== undefined)).toBe(true)
    expect(msgs.some((m) => m.message.t === 'pull')).toBe(false)
    // Virtual time of the loop, not wall-clock: the start's trip down is saved.
    expect(collectiveMs).toBeLessThan(startedMs)
    expect(loop.outputs('reduced', 'p1').length).toBe(2)
    expect(loop.outputs('reduced').filter((l) => l.peer !== 'p1')).toEqual([])
    loop.ok()
  })

  it('the root calls last: partials that came first are held, and the result follows its call', () => {
    const loop = settled()
    for (const p of loop.running()) if (p !== 'p2') call(loop, p, 'late-root', 'p2')
    loop.run(200)
    expect(resultOf(loop, 'late-root')).toBeUndefined()
    const at = loop.now
    call(loop, 'p2', 'late-root', 'p2')
    const r = waitFor(loop, 'late-root')
    expect([...r.value]).toEqual(SUM23)
    expect(loop.now - at).toBeLessThan(50)
    expect(loop.core('p2').reductions.stats.late).toBe(0)
    loop.ok()
  })

  it('a peer that never calls: the root pulls its virtual nodes after its timeout', () => {
    const loop = settled()
    for (const p of loop.running()) if (p !== 'p4') call(loop, p, 'absent', 'p0')
    const r = waitFor(loop, 'absent')
    expect([...r.value]).toEqual(SUM23)
    expect(loop.core('p0').reductions.stats.pulls).toBeGreaterThan(0)
    loop.ok()
  })

  it('peers that call at different times, some after their parent sent up: late parts follow, each counted once', () => {
    const { counts, opts } = counting('spread')
    const loop = settled(23, opts)
    loop.running().forEach((p, i) => { loop.run(i * 30); call(loop, p, 'spread', 'p3') })
    expectCountedOnce(loop, 'spread', 'p3', counts)
  })

  it('a leave after calling: the successor, calling later, does not contribute the leaver\'s virtual nodes again', () => {
    const { counts, opts } = counting('leave')
    const loop = settled(23, opts)
    call(loop, 'p3', 'leave', 'p0')
    loop.input('p3', (c) => c.leave(loop.now))
    loop.runUntil(() => loop.outputs('left', 'p3').length > 0, 5000, 'p3 left')
    for (const p of loop.running()) call(loop, p, 'leave', 'p0')
    expectCountedOnce(loop, 'leave', 'p0', counts)
  })

  it('a join after its contact called: the joiner\'s share is not contributed twice', () => {
    const { counts, opts } = counting('join')
    const loop = settled(23, opts)
    for (const p of loop.running()) call(loop, p, 'join', 'p1')
    loop.create('p9')
    loop.input('p9', (c) => c.join(loop.now, 'p3'))
    loop.runUntil(() => loop.core('p9').state === 'running' && !loop.core('p9').ownedSet.isEmpty, 5000, 'p9 joined')
    call(loop, 'p9', 'join', 'p1')
    const r = waitFor(loop, 'join')
    expect([...r.value]).toEqual(SUM23)
    expectOnceEach(counts, 23)
    loop.ok()
  })

  it('a crash after calling: whatever the crashed peer carried is pulled from the new owners', () => {
    const loop = settled()
    for (const p of loop.running()) call(loop, p, 'crash', 'p0')
    loop.crash('p2')
    const r = waitFor(loop, 'crash')
    expect(r.covered.size).toBe(23)
    expect([...r.value]).toEqual(SUM23)
    loop.ok()
  })

  it('a long one (in segments) is started by the root\'s call, over the wire codec; calls before or after its start are fine', () => {
    const config: CoreInit = { reduceSegmentBytes: 65536 }
    // Four 64 KiB segments' worth, so it travels in 8 segments (reduceMinSegmentBytes).
    const length = 3 * 8192 + 5
    const { counts, opts } = counting('long')
    const loop = settled(23, { config, wire: true, ...opts })
    call(loop, 'p0', 'long', 'p4', length)
    call(loop, 'p1', 'long', 'p4', length)
    loop.run(50)
    // Nothing moves before the root calls.
    expect(loop.sent.some((m) => (m.message.t === 'partial' && m.message.id === 'long') || (m.message.t === 'chunk' && m.message.open?.id === 'long'))).toBe(false)
    call(loop, 'p4', 'long', 'p4', length)
    loop.run(1)
    call(loop, 'p2', 'long', 'p4', length)
    const r = waitFor(loop, 'long')
    call(loop, 'p3', 'long', 'p4', length)
    expect(r.value.length).toBe(length)
    expect([r.value[0], r.value[1], r.value[2]]).toEqual([...SUM23, 3795])
    expectOnceEach(counts, 23)
    const starts = loop.sent.filter((m) => m.message.t === 'chunk' && m.message.open?.id === 'long' && m.message.open.reduce?.segment === Math.ceil(length / 8))
    expect(starts.length).toBeGreaterThan(0)
    expect(() => { loop.core('p1').reduceCollective(loop.now, { id: 'long', root: 'p4', op: 'sum', length }) }).toThrow(InvalidArgumentError)
    expect(() => { loop.core('p4').reduceCollective(loop.now, { id: 'long', root: 'p4', op: 'sum', length }) }).toThrow(InvalidArgumentError)
    loop.ok()
  })

  it('misuse throws InvalidArgumentError; a partial of another shape is counted, not merged', () => {
    const loop = settled()
    const c = loop.core('p0')
    const bad = (init: { id: string, root: PeerId, op: string, length: number }): void => { expect(() => { c.reduceCollective(loop.now, init) }).toThrow(InvalidArgumentError) }
    bad({ id: 'a/b', root: 'p1', op: 'sum', length: 1 })
    bad({ id: '', root: 'p1', op: 'sum', length: 1 })
    bad({ id: 'x'.repeat(200), root: 'p1', op: 'sum', length: 1 })
    bad({ id: 'ok', root: 'p1', op: 'nope', length: 1 })
    bad({ id: 'ok', root: 'p1', op: 'sum', length: 0 })
    bad({ id: 'ok', root: 'stranger', op: 'sum', length: 1 })
    call(loop, 'p0', 'twice', 'p1')
    bad({ id: 'twice', root: 'p1', op: 'sum', length: 2 })
    bad({ id: 'twice', root: 'p1', op: 'sum', length: 3 })
    const before = c.stats.rejected['partial-mismatch'] ?? 0
    c.handle(loop.now, 'p3', { t: 'partial', id: 'twice', root: 'p1', op: 'sum', covered: IntervalSet.of(9), value: Float64Array.of(1, 2, 3), coll: { length: 3 } })
    c.handle(loop.now, 'p3', { t: 'partial', id: 'twice', root: 'p1', op: 'sum', covered: IntervalSet.of(9), value: Float64Array.of(1, 2, 3) })
    expect(c.stats.rejected['partial-mismatch']).toBe(before + 2)
    for (const p of loop.running()) if (p !== 'p0') call(loop, p, 'twice', 'p1')
    expect([...waitFor(loop, 'twice').value]).toEqual(SUM23)
    loop.ok()
  })
})
