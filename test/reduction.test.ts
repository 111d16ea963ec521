/**
 * The reduction engine (overlay/reduction.ts) on its own, with a scripted host: segmented
 * partials, what a peer sends when, and what the root pulls after a crash.
 */
import { describe, expect, it } from 'vitest'
import { PULL_PATIENCE, reduceStart, Reductions, type ReductionHost } from '../overlay/reduction.ts'
import { OpRegistry } from '../overlay/reduce-ops.ts'
import { MAX_REDUCE_SEGMENTS } from '../overlay/reduction-state.ts'
import type { Message, PartialMessage, PullMessage, ReduceStart } from '../overlay/messages.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { OwnershipMap } from '../virtual-nodes/ownership-map.ts'

/** Virtual node v contributes v + 1 at every element. */
function contribution (start: ReduceStart, vnodes: IntervalSet): Float64Array {
  let sum = 0
  for (const v of vnodes.values()) sum += v + 1
  return new Float64Array(start.length).fill(sum)
}

interface Fixture {
  red: Reductions
  host: ReductionHost
  sent: Array<{ to: string, msg: Message }>
  reduced: Float64Array[]
  alive: Set<string>
  timers: Array<{ at: number, id: string }>
  /** What the start still carries down, unacknowledged (the stream engine's answer). */
  inFlight: IntervalSet
  /** This peer's place in the root's latency tree (collective reductions). */
  parent: string | null
  below: IntervalSet
  /** What was contributed to each collective reduction here. */
  claimed: Map<string, IntervalSet>
}

/**
 * Peer `self` among a, b, c, d owning virtual nodes 0-1, 2-3, 4-5, 6-7; a is the root.
 */
function fixture (self: string): Fixture {
  const view = OwnershipMap.fromRecords(8, ['a', 'b', 'c', 'd'].map((owner, i) => ({ ranges: IntervalSet.range(2 * i, 2 * i + 2), owner, version: 1 })))
  const f: Fixture = { red: null as unknown as Reductions, host: null as unknown as ReductionHost, sent: [], reduced: [], alive: new Set(['a', 'b', 'c', 'd']), timers: [], inFlight: IntervalSet.EMPTY, parent: null, below: IntervalSet.EMPTY, claimed: new Map() }
  const host: ReductionHost = {
    self,
    view,
    vnodeCount: () => 8,
    owned: () => view.partition(IntervalSet.range(0, 8)).get(self) ?? IntervalSet.EMPTY,
    isAlive: (p) => f.alive.has(p),
    inFlight: () => f.inFlight,
    send: (to, msg) => f.sent.push({ to, msg }),
    contribute: (_id, start, vnodes) => contribution(start, vnodes),
    ops: new OpRegistry(),
    timeoutMs: () => 10,
    setTimer: (at, id) => f.timers.push({ at, id }),
    reduced: (_id, value) => f.reduced.push(value),
    failed: () => { throw new Error('failed') },
    reject: (reason) => { throw new Error(`rejected: ${reason}`) },
    route: () => ({ parent: f.parent, below: f.below }),
    claim: (id, v) => {
      const fresh = v.difference(f.claimed.get(id) ?? IntervalSet.EMPTY)
      f.claimed.set(id, fresh.union(f.claimed.get(id) ?? IntervalSet.EMPTY))
      return fresh
    }
  }
  f.host = host
  f.red = new Reductions(host, 250, 60_000)
  return f
}

/** Three segments of 4 elements (length 10: the last one has 2). */
const START = reduceStart('sum', 0, 10, 32)

function partial (covered: IntervalSet, value: number, seg: number): PartialMessage {
  return { t: 'partial', id: 'r', root: 'a', op: 'sum', covered, value: new Float64Array(seg === 2 ? 2 : 4).fill(value), seg }
}

describe('Reductions: segmented partials', () => {
  it('reduceStart segments only arrays longer than one segment', () => {
    expect(START).toEqual({ op: 'sum', rootVnode: 0, length: 10, segment: 4 })
    expect(reduceStart('sum', 0, 4, 32)).toEqual({ op: 'sum', rootVnode: 0, length: 4 })
    expect(reduceStart('sum', 0, 3, 1)).toEqual({ op: 'sum', rootVnode: 0, length: 3, segment: 1 })
  })

  it('reduceStart never cuts more than MAX_REDUCE_SEGMENTS segments: small segment settings give way for long arrays', () => {
    expect(reduceStart('sum', 0, 1 << 24, 8).segment).toBe((1 << 24) / MAX_REDUCE_SEGMENTS)
    expect(reduceStart('sum', 0, 2 ** 27, 8).segment).toBe(2 ** 27 / MAX_REDUCE_SEGMENTS)
    expect(reduceStart('sum', 0, MAX_REDUCE_SEGMENTS + 1, 8).segment).toBe(2)
    expect(reduceStart('sum', 0, MAX_REDUCE_SEGMENTS, 8).segment).toBe(1)
  })

  it('reduceStart cuts a segmented array into at least 8 segments while they keep the minimum size', () => {
    const seg = (length: number, min?: number): number | undefined => reduceStart('sum', 0, length, 65536, min).segment
    // Defaults of the core: 64 KiB segments at most, 16 KiB at least.
    expect(seg(8192, 16384)).toBeUndefined() // one segment: whole
    expect(seg(16384, 16384)).toBe(2048) // 128 KiB: 8 segments of 16 KiB instead of 2 of 64 KiB
    expect(seg(8193, 16384)).toBe(2048) // just over one segment: 5 of 16 KiB
    expect(seg(65536, 16384)).toBe(8192) // 512 KiB: 8 of 64 KiB
    expect(seg(262144, 16384)).toBe(8192) // never longer than 64 KiB: 32 segments
    expect(seg(30000, 16384)).toBe(3750) // 8 segments of 3750 elements
    // Without a minimum (or one at least as large as the segment), segments are the full size.
    expect(seg(16384)).toBe(8192)
    expect(seg(16384, 1 << 20)).toBe(8192)
    // Every segment count stays within ceil(length / least) and covers the array.
    for (const length of [8193, 9999, 16384, 40000, 65536, 131072, 1 << 20]) {
      const s = seg(length, 16384) as number
      expect(s * Math.ceil(length / s)).toBeGreaterThanOrEqual(length)
      expect(Math.ceil(length / s)).toBeGreaterThanOrEqual(Math.min(8, Math.ceil(length / 2048)))
    }
  })

  it('an inner peer sends each segment up as soon as its children covered it, before later segments arrive', () => {
    const f = fixture('b')
    // b got the start from a, owns 2-3 and forwarded 4-7 to c.
    f.red.onRouted(0, 'r', 'a', START, 'a', IntervalSet.range(2, 4), IntervalSet.range(4, 8))
    expect(f.sent).toEqual([])
    f.red.onStartAcked('r', 'c', IntervalSet.range(4, 8))
    f.red.onPartial(1, 'c', partial(IntervalSet.range(4, 8), 5 + 6 + 7 + 8, 0))
    expect(f.sent.map((s) => [s.to, (s.msg as PartialMessage).seg, [...(s.msg as PartialMessage).value]])).toEqual([['a', 0, [33, 33, 33, 33]]])
    // Still waiting for segments 1 and 2 from c, which is alive: c stays awaited.
    expect([...f.red.awaitedPeers()]).toEqual(['c'])
    f.red.onPartial(2, 'c', partial(IntervalSet.range(4, 8), 26, 1))
    f.red.onPartial(3, 'c', partial(IntervalSet.range(4, 8), 26, 2))
    expect(f.sent.map((s) => [(s.msg as PartialMessage).seg, (s.msg as PartialMessage).value.length, (s.msg as PartialMessage).covered.toString()])).toEqual([[0, 4, '{[2,8)}'], [1, 4, '{[2,8)}'], [2, 2, '{[2,8)}']])
    expect([...f.red.awaitedPeers()]).toEqual([])
    expect(f.red.sendsTo('r')).toBe('a')
  })

  it('the root assembles the segments into the whole array', () => {
    const f = fixture('a')
    f.red.onRouted(0, 'r', 'a', START, null, IntervalSet.range(0, 2), IntervalSet.range(2, 8))
    for (const seg of [2, 0, 1]) f.red.onPartial(1, 'b', partial(IntervalSet.range(2, 8), 3 + 4 + 5 + 6 + 7 + 8, seg))
    expect(f.reduced).toHaveLength(1)
    expect([...(f.reduced[0] as Float64Array)]).toEqual(new Array(10).fill(36))
  })

  it('a partial of the whole array is split over the segments; an overlapping segment at the root is dropped', () => {
    const f = fixture('a')
    f.red.onRouted(0, 'r', 'a', START, null, IntervalSet.range(0, 2), IntervalSet.range(2, 8))
    f.red.onPartial(1, 'b', partial(IntervalSet.range(2, 4), 7, 0))
    f.red.onPartial(1, 'b', partial(IntervalSet.range(2, 4), 7, 0))
    expect(f.red.stats.overlapsDropped).toBe(1)
    f.red.onPartial(2, 'c', { t: 'partial', id: 'r', root: 'a', op: 'sum', covered: IntervalSet.range(4, 8), value: new Float64Array(10).fill(26) })
    expect(f.reduced).toHaveLength(0)
    f.red.onPartial(3, 'b', partial(IntervalSet.range(2, 4), 7, 1))
    f.red.onPartial(3, 'b', partial(IntervalSet.range(2, 4), 7, 2))
    expect([...(f.reduced[0] as Float64Array)]).toEqual(new Array(10).fill(36))
  })

  it('a child that crashed between segments: the root pulls per segment exactly what each misses', () => {
    const f = fixture('a')
    f.red.onRouted(0, 'r', 'a', START, null, IntervalSet.range(0, 2), IntervalSet.range(2, 8))
    f.red.onStartAcked('r', 'b', IntervalSet.range(2, 8))
    // b sent segment 0 for all of 2-7 and segment 1 only for its own 2-3, then crashed.
    f.red.onPartial(1, 'b', partial(IntervalSet.range(2, 8), 33, 0))
    f.red.onPartial(1, 'b', partial(IntervalSet.range(2, 4), 7, 1))
    f.alive.delete('b')
    f.red.onTimer(20, 'r')
    const pulls = f.sent.map((s) => s.msg as PullMessage).map((m) => [m.seg, m.segment, m.want.toString()])
    // b is dead: its own 2-3 now belongs to nobody alive in this view and is not asked for;
    // c and d are asked for segments 1 and 2 only (segment 0 is complete).
    expect(pulls).toEqual([[1, 4, IntervalSet.range(4, 6).toString()], [1, 4, IntervalSet.range(6, 8).toString()], [2, 4, IntervalSet.range(4, 6).toString()], [2, 4, IntervalSet.range(6, 8).toString()]])
    expect(f.sent.every((s) => s.to === 'c' || s.to === 'd')).toBe(true)
  })

  it("an owner computes its whole contribution once for all the segments of a pull, and again for other vnodes", () => {
    const f = fixture('c')
    let computed = 0
    const counting: ReductionHost = { ...f.host, contribute: (_id, start, vnodes) => { computed++; return contribution(start, vnodes) } }
    f.red = new Reductions(counting, 250, 60_000)
    for (let seg = 0; seg < 3; seg++) f.red.onPull({ t: 'pull', id: 'r', root: 'a', op: 'sum', length: 10, want: IntervalSet.range(4, 6), hops: 0, seg, segment: 4 }, 8)
    expect(computed).toBe(1)
    expect(f.sent.map((s) => (s.msg as PartialMessage).value.length)).toEqual([4, 4, 2])
    f.red.onPull({ t: 'pull', id: 'r', root: 'a', op: 'sum', length: 10, want: IntervalSet.range(4, 5), hops: 0, seg: 0, segment: 4 }, 8)
    f.red.onPull({ t: 'pull', id: 'other', root: 'a', op: 'sum', length: 10, want: IntervalSet.range(4, 6), hops: 0, seg: 0, segment: 4 }, 8)
    expect(computed).toBe(3)
  })

  it('the root computes its own contribution once for every segment it pulls, not once per segment', () => {
    // The root came to own 4-5 mid-reduction (a take-over): it contributes for them while
    // pulling. Per segment, a 10^7-element reduction cost the root 1,221 whole contributions.
    const f = fixture('a')
    let computed = 0
    const counting: ReductionHost = {
      ...f.host,
      owned: () => IntervalSet.range(0, 2).union(IntervalSet.range(4, 6)),
      contribute: (_id, start, vnodes) => { computed++; return contribution(start, vnodes) }
    }
    f.red = new Reductions(counting, 250, 60_000)
    f.red.onRouted(0, 'r', 'a', START, null, IntervalSet.range(0, 2), IntervalSet.range(2, 8))
    expect(computed).toBe(1)
    // Segment 0 is complete; segments 1 and 2 miss 2-7.
    f.red.onPartial(1, 'b', partial(IntervalSet.range(2, 8), 33, 0))
    f.red.onTimer(20, 'r')
    expect(computed).toBe(2)
    const pulled = f.sent.map((s) => [s.to, (s.msg as PullMessage).seg, (s.msg as PullMessage).want.toString()])
    expect(pulled).toEqual([['b', 1, IntervalSet.range(2, 4).toString()], ['d', 1, IntervalSet.range(6, 8).toString()], ['b', 2, IntervalSet.range(2, 4).toString()], ['d', 2, IntervalSet.range(6, 8).toString()]])
  })

  it('an owner answers a segment pull with that segment only', () => {
    const f = fixture('c')
    f.red.onPull({ t: 'pull', id: 'r', root: 'a', op: 'sum', length: 10, want: IntervalSet.range(4, 8), hops: 0, seg: 2, segment: 4 }, 8)
    const [toRoot, toD] = f.sent
    expect(toRoot?.to).toBe('a')
    expect(toRoot?.msg).toMatchObject({ t: 'partial', seg: 2, covered: IntervalSet.range(4, 6) })
    expect([...(toRoot?.msg as PartialMessage).value]).toEqual([11, 11])
    expect(toD?.to).toBe('d')
    expect(toD?.msg).toMatchObject({ t: 'pull', seg: 2, segment: 4, hops: 1 })
  })

  it('rejects a segment index past the array and a segment of the wrong length', () => {
    const f = fixture('a')
    f.red.onRouted(0, 'r', 'a', START, null, IntervalSet.range(0, 2), IntervalSet.range(2, 8))
    expect(() => f.red.onPartial(1, 'b', { ...partial(IntervalSet.range(2, 4), 7, 0), seg: 3 })).toThrow('partial-mismatch')
    expect(() => f.red.onPartial(1, 'b', { ...partial(IntervalSet.range(2, 4), 7, 0), seg: 2 })).toThrow('partial-mismatch')
  })
})

describe('Reductions: sibling combining plans', () => {
  /** An unsegmented start of 2 elements. */
  const SHORT = reduceStart('sum', 0, 2, 1024)
  const whole = (covered: IntervalSet, value: number): PartialMessage => ({ t: 'partial', id: 'r', root: 'a', op: 'sum', covered, value: new Float64Array(2).fill(value) })

  it('a sender sends to its sibling, and to the peer it had the start from once that sibling is gone', () => {
    const f = fixture('c')
    f.red.onRouted(0, 'r', 'a', SHORT, 'a', IntervalSet.range(4, 6), IntervalSet.EMPTY, { to: 'b', extra: IntervalSet.EMPTY })
    expect(f.sent.map((s) => [s.to, (s.msg as PartialMessage).covered.toString()])).toEqual([['b', IntervalSet.range(4, 6).toString()]])
    expect(f.red.partOf('r').equals(IntervalSet.range(4, 6))).toBe(true)
    f.alive.delete('b')
    expect(f.red.sendsTo('r')).toBe('a')
  })

  it('a collector waits for its siblings\' parts, past the timeout once they announced them, and sends one partial', () => {
    const f = fixture('b')
    f.red.onRouted(0, 'r', 'a', SHORT, 'a', IntervalSet.range(2, 4), IntervalSet.EMPTY, { extra: IntervalSet.range(4, 8) })
    expect(f.sent).toEqual([])
    // c announces 4-5 (d has not): at the timeout b keeps waiting only while what it misses is announced.
    f.red.onReduceAck(0, 'c', 'r', 'a', IntervalSet.range(4, 6))
    f.red.onReduceAck(0, 'x', 'r', 'a', IntervalSet.range(0, 2)) // not expected here: ignored
    expect([...f.red.awaitedPeers()]).toEqual(['c'])
    f.red.onPartial(1, 'd', whole(IntervalSet.range(6, 8), 15))
    f.red.onTimer(10, 'r')
    expect(f.sent).toEqual([])
    f.red.onPartial(12, 'c', whole(IntervalSet.range(4, 6), 11))
    expect(f.sent.map((s) => [s.to, (s.msg as PartialMessage).covered.toString(), [...(s.msg as PartialMessage).value]])).toEqual([['a', IntervalSet.range(2, 8).toString(), [33, 33]]])
  })

  it('a collector whose sibling never announced sends what it has at the timeout; the late part follows on its own', () => {
    const f = fixture('b')
    f.red.onRouted(0, 'r', 'a', SHORT, 'a', IntervalSet.range(2, 4), IntervalSet.EMPTY, { extra: IntervalSet.range(4, 6) })
    f.red.onTimer(10, 'r')
    f.red.onPartial(12, 'c', whole(IntervalSet.range(4, 6), 11))
    expect(f.sent.map((s) => [s.to, (s.msg as PartialMessage).covered.toString()])).toEqual([['a', IntervalSet.range(2, 4).toString()], ['a', IntervalSet.range(4, 6).toString()]])
    expect(f.red.stats.partialsForwarded).toBe(1)
  })
})

describe('Reductions: pulls back off', () => {
  it('an owner asked is not asked again while alive, until its patience runs out; rounds space out', () => {
    const f = fixture('a')
    const start = reduceStart('sum', 0, 2, 1024)
    f.red.onRouted(0, 'r', 'a', start, null, IntervalSet.range(0, 2), IntervalSet.range(2, 8))
    const pullsTo = (): string[] => f.sent.filter((s) => s.msg.t === 'pull').map((s) => s.to)
    // Nothing came: the first round asks b, c and d.
    f.red.onTimer(20, 'r')
    expect(pullsTo()).toEqual(['b', 'c', 'd'])
    // Timers of the later rounds: 250 ms, then twice as long each time, up to 16x.
    const gaps = [f.timers.at(-1)!.at - 20]
    // c answers; b and d are still within their patience: the next rounds ask nobody.
    f.red.onPartial(30, 'c', { t: 'partial', id: 'r', root: 'a', op: 'sum', covered: IntervalSet.range(4, 6), value: new Float64Array(2).fill(11) })
    let now = 20
    for (let round = 0; round < 3; round++) { now = f.timers.at(-1)!.at; f.red.onTimer(now, 'r'); gaps.push(f.timers.at(-1)!.at - now) }
    expect(pullsTo()).toEqual(['b', 'c', 'd'])
    expect(gaps).toEqual([250, 500, 1000, 2000])
    // The driver watches the owners asked that have not answered.
    expect([...f.red.awaitedPeers()]).toEqual(['b', 'd'])
    // Past their patience, b and d are asked again; a dead owner is not.
    f.alive.delete('d')
    f.red.onTimer(20 + 250 * PULL_PATIENCE, 'r')
    expect(pullsTo()).toEqual(['b', 'c', 'd', 'b'])
  })

  it('a peer whose whole part went with a crashed receiver says so by an empty partial, and is not waited for any more (swarm seed 2061)', () => {
    const start = reduceStart('sum', 0, 2, 1024)
    // c had the start from b, had nothing of its own to contribute, and forwarded 6-7 to d,
    // which acknowledged and crashed (its virtual nodes were pulled by the root meanwhile).
    const c = fixture('c')
    c.red.onRouted(0, 'r', 'a', start, 'b', IntervalSet.EMPTY, IntervalSet.range(6, 8))
    c.red.onStartAcked('r', 'd', IntervalSet.range(6, 8))
    c.alive.delete('d')
    c.red.onTimer(20, 'r')
    const empty = c.sent.map((s) => [s.to, s.msg.t, (s.msg as PartialMessage).covered.toString(), (s.msg as PartialMessage).value.length])
    expect(empty).toEqual([['b', 'partial', IntervalSet.EMPTY.toString(), 0]])
    // b waits for c (acknowledged, alive) past its timeout; c's empty partial ends that.
    const b = fixture('b')
    b.red.onRouted(0, 'r', 'a', start, 'a', IntervalSet.range(2, 4), IntervalSet.range(4, 8))
    b.red.onStartAcked('r', 'c', IntervalSet.range(4, 8))
    b.red.onTimer(20, 'r')
    expect(b.sent).toEqual([])
    b.red.onPartial(25, 'c', c.sent[0]?.msg as PartialMessage)
    expect([...b.red.awaitedPeers()]).toEqual([])
    b.red.onTimer(30, 'r')
    expect(b.sent.map((s) => [s.to, (s.msg as PartialMessage).covered.toString(), [...(s.msg as PartialMessage).value]])).toEqual([['a', IntervalSet.range(2, 4).toString(), [7, 7]]])
  })

  it('a part whose start is still on its way to a live receiver is not pulled', () => {
    const f = fixture('a')
    f.red.onRouted(0, 'r', 'a', reduceStart('sum', 0, 2, 1024), null, IntervalSet.range(0, 2), IntervalSet.range(2, 8))
    // The start to c (4-7) is not acknowledged yet: on busy links acknowledgements come late.
    f.inFlight = IntervalSet.range(4, 8)
    f.red.onTimer(20, 'r')
    expect(f.sent.filter((s) => s.msg.t === 'pull').map((s) => s.to)).toEqual(['b'])
    // A receiver that never acknowledges while alive (it refused or dropped the start) is
    // waited for only PULL_PATIENCE retry intervals from the start: then its part is pulled.
    f.red.onTimer(250 * PULL_PATIENCE, 'r')
    expect(f.sent.filter((s) => s.msg.t === 'pull').map((s) => s.to)).toEqual(['b', 'c', 'd'])
  })

  it('a receiver declared dead that comes back as a new incarnation is pulled from, not waited for (test-crash-mid-combined-reduction)', () => {
    const f = fixture('a')
    f.red.onRouted(0, 'r', 'a', START, null, IntervalSet.range(0, 2), IntervalSet.range(2, 8))
    f.red.onStartAcked('r', 'b', IntervalSet.range(2, 4))
    f.red.onStartAcked('r', 'c', IntervalSet.range(4, 8))
    f.red.onPartial(1, 'c', partial(IntervalSet.range(4, 8), 26, 0))
    f.red.onPartial(1, 'c', partial(IntervalSet.range(4, 8), 26, 1))
    f.red.onPartial(1, 'c', partial(IntervalSet.range(4, 8), 26, 2))
    f.red.onPartial(1, 'b', partial(IntervalSet.range(2, 4), 7, 0))
    // b is declared dead (its last segments are dropped as a dead member's), then rejoins
    // under the same id with none of its old state, and owns 2-3 again.
    f.red.peerGone('b')
    f.red.onTimer(20, 'r')
    const pulls = (): string[] => f.sent.filter((s) => s.msg.t === 'pull').map((s) => `${s.to}:${(s.msg as PullMessage).seg ?? '-'}`)
    expect(pulls()).toEqual(['b:1', 'b:2'])
    // Without peerGone the acknowledgement from b's old incarnation held the part as in
    // progress for as long as b was alive: never pulled, the reduction never done.
    f.red.onPartial(30, 'b', partial(IntervalSet.range(2, 4), 7, 1))
    f.red.onPartial(30, 'b', partial(IntervalSet.range(2, 4), 7, 2))
    expect(f.reduced).toHaveLength(1)
    expect([...(f.reduced[0] as Float64Array)]).toEqual(new Array(10).fill(36))
  })

  it('an acknowledgement or announcement that crossed its sender\'s leave is not a promise once it is back as a new incarnation (migration-fuzz seed 30449)', () => {
    const f = fixture('b')
    // b got the start from a, owns 2-3 and forwarded 4-5 to c and 6-7 to d; c left (b forgot it) and
    // its acknowledgement and announcement, sent before its leave was done, come after.
    f.red.onRouted(0, 'r', 'a', reduceStart('sum', 0, 1, 8), 'a', IntervalSet.range(2, 4), IntervalSet.range(4, 8))
    f.red.onStartAcked('r', 'd', IntervalSet.range(6, 8))
    f.alive.delete('c')
    f.red.peerGone('c')
    f.red.onStartAcked('r', 'c', IntervalSet.range(4, 6))
    f.red.onReduceAck(1, 'c', 'r', 'a', IntervalSet.range(4, 6))
    // c comes back as a new incarnation, with none of that reduction.
    f.alive.add('c')
    expect([...f.red.awaitedPeers()]).toEqual(['d'])
    f.red.onPartial(2, 'd', { t: 'partial', id: 'r', root: 'a', op: 'sum', covered: IntervalSet.range(6, 8), value: Float64Array.of(15) })
    // At its timeout b sends what it has up, rather than waiting for c as long as c lives.
    f.red.onTimer(10, 'r')
    expect(f.sent.map((s) => [s.to, (s.msg as PartialMessage).covered.toString(), [...(s.msg as PartialMessage).value]])).toEqual([['a', '{[2,4) [6,8)}', [22]]])
  })

  it('a start that comes once all went up is acknowledged as away and announces nothing; what it brings is forwarded late (migration-fuzz seed 126787)', () => {
    const start = reduceStart('sum', 0, 2, 1024)
    const c = fixture('c')
    // c had the start from b, owned 4-5 and sent its partial to b at once: b is told to wait for it.
    c.red.onRouted(0, 'r', 'a', start, 'b', IntervalSet.range(4, 6), IntervalSet.EMPTY)
    expect(c.sent.map((s) => [s.to, (s.msg as PartialMessage).covered.toString()])).toEqual([['b', '{[4,6)}']])
    expect(c.red.partialAway('r', 'b')).toBe(false)
    // b (a new incarnation, or re-routing a crashed receiver's part) sends 6-7 through c, whose receiver d
    // acknowledges as away (its partial went elsewhere): c sends nothing more of its own, so b may not wait for c.
    c.red.onRouted(5, 'r', 'a', start, 'b', IntervalSet.EMPTY, IntervalSet.range(6, 8))
    expect(c.red.partialAway('r', 'b')).toBe(true)
    expect(c.red.announcement('r', 'b')).toBeUndefined()
    // Whatever partial still comes for it is passed on to b, late.
    c.red.onPartial(6, 'd', { t: 'partial', id: 'r', root: 'a', op: 'sum', covered: IntervalSet.range(6, 8), value: Float64Array.of(15, 15) })
    expect(c.sent.map((s) => [s.to, (s.msg as PartialMessage).covered.toString()])).toEqual([['b', '{[4,6)}'], ['b', '{[6,8)}']])
    // b, acknowledged as away, sends what it has at its timeout and the root pulls the rest.
    const b = fixture('b')
    b.red.onRouted(5, 'r', 'a', start, 'a', IntervalSet.EMPTY, IntervalSet.range(6, 8))
    b.red.onTimer(15, 'r')
    expect([...b.red.awaitedPeers()]).toEqual([])
    expect(b.sent.map((s) => [s.to, (s.msg as PartialMessage).covered.toString()])).toEqual([['a', '{}']])
  })

  it('a reduce-ack from any peer holds the pulls back only within its patience', () => {
    const f = fixture('a')
    f.red.onRouted(0, 'r', 'a', reduceStart('sum', 0, 2, 1024), null, IntervalSet.range(0, 2), IntervalSet.range(2, 8))
    // x (a live member) never had the start, yet claims everything the root misses.
    f.alive.add('x')
    f.red.onReduceAck(1, 'x', 'r', 'a', IntervalSet.range(0, 8))
    f.red.onTimer(20, 'r')
    expect(f.sent.filter((s) => s.msg.t === 'pull')).toEqual([])
    expect([...f.red.awaitedPeers()]).toEqual(['x'])
    f.red.onTimer(1 + 250 * PULL_PATIENCE, 'r')
    expect(f.sent.filter((s) => s.msg.t === 'pull').map((s) => s.to)).toEqual(['b', 'c', 'd'])
  })

  it('a combining plan naming this peer, the sender of the start or the root is ignored', () => {
    for (const to of ['c', 'b', 'a']) {
      const f = fixture('c')
      f.red.onRouted(0, 'r', 'a', reduceStart('sum', 0, 2, 1024), 'b', IntervalSet.range(4, 6), IntervalSet.EMPTY, { to, extra: IntervalSet.EMPTY })
      expect(f.red.sendsTo('r')).toBe('b')
      expect(f.sent.map((s) => s.to)).toEqual(['b'])
    }
  })

  it('an owner that answered is asked again at the next round for what is still missing', () => {
    const f = fixture('a')
    f.red.onRouted(0, 'r', 'a', reduceStart('sum', 0, 2, 1024), null, IntervalSet.range(0, 2), IntervalSet.range(2, 8))
    f.red.onTimer(20, 'r')
    const part = (covered: IntervalSet): PartialMessage => ({ t: 'partial', id: 'r', root: 'a', op: 'sum', covered, value: new Float64Array(2).fill(1) })
    // A late partial covering 3-4 comes first; b's answer (2-3) and c's (4-5) overlap it and are dropped.
    f.red.onPartial(21, 'x', part(IntervalSet.range(3, 5)))
    f.red.onPartial(22, 'b', part(IntervalSet.range(2, 4)))
    f.red.onPartial(22, 'c', part(IntervalSet.range(4, 6)))
    f.red.onPartial(22, 'd', part(IntervalSet.range(6, 8)))
    expect(f.red.stats.overlapsDropped).toBe(2)
    // They answered: the next round asks them for 2 and 5 at once, not after their patience.
    f.red.onTimer(270, 'r')
    const pulls = f.sent.filter((s) => s.msg.t === 'pull').map((s) => [s.to, (s.msg as PullMessage).want.toString()])
    expect(pulls.slice(3)).toEqual([['b', IntervalSet.of(2).toString()], ['c', IntervalSet.of(5).toString()]])
  })
})

describe('Reductions: the root completing on its own contribution', () => {
  it('a part the root itself owns by its pull round completes the reduction then and there (swarm seeds 94, 212, 224, 254)', () => {
    const f = fixture('a')
    f.red.onRouted(0, 'r', 'a', reduceStart('sum', 0, 1, 64), null, IntervalSet.range(0, 2), IntervalSet.range(2, 8))
    f.red.onPartial(1, 'b', { t: 'partial', id: 'r', root: 'a', op: 'sum', covered: IntervalSet.range(2, 6), value: Float64Array.of(3 + 4 + 5 + 6) })
    // d's virtual nodes 6-7 moved to the root before they were counted: its pull round takes them itself.
    f.alive.delete('d')
    ;(f.red as unknown as { host: { view: OwnershipMap } }).host.view.apply({ ranges: IntervalSet.range(6, 8), owner: 'a', version: 2 })
    f.red.onTimer(20, 'r')
    expect(f.sent).toEqual([])
    expect([...(f.reduced[0] as Float64Array)]).toEqual([36])
  })
})

describe('Reductions: collective', () => {
  const SHAPE = reduceStart('sum', 0, 1, 64)

  it('an inner peer waits for its children in the root\'s latency tree, then sends up to its parent there', () => {
    const f = fixture('b')
    f.parent = 'a'
    f.below = IntervalSet.range(4, 8)
    expect(f.red.collectiveState('k', 'a', SHAPE)).toBe('new')
    f.red.collect(0, 'k', 'a', SHAPE)
    expect(f.red.collectiveState('k', 'a', SHAPE)).toBe('called')
    expect(f.sent).toEqual([])
    f.red.onPartial(1, 'c', { t: 'partial', id: 'k', root: 'a', op: 'sum', covered: IntervalSet.range(4, 8), value: Float64Array.of(26), coll: { length: 1 } })
    expect(f.sent.map((s) => [s.to, (s.msg as PartialMessage).covered.toString(), [...(s.msg as PartialMessage).value], (s.msg as PartialMessage).coll])).toEqual([['a', '{[2,8)}', [33], { length: 1 }]])
    // Its own part is marked contributed (a hand-off carries the mark).
    expect(f.claimed.get('k')?.toString()).toBe('{[2,4)}')
  })

  it('a partial before the call is held; the call adds the own part and sends both up together', () => {
    const f = fixture('b')
    f.parent = 'a'
    f.below = IntervalSet.range(4, 8)
    f.red.onPartial(0, 'c', { t: 'partial', id: 'k', root: 'a', op: 'sum', covered: IntervalSet.range(4, 8), value: Float64Array.of(26), coll: { length: 1 } })
    expect(f.red.collectiveState('k', 'a', SHAPE)).toBe('relaying')
    expect(f.red.collectiveState('k', 'a', reduceStart('sum', 0, 2, 64))).toBe('mismatch')
    expect(f.red.collectiveState('k', 'c', SHAPE)).toBe('mismatch')
    expect(f.sent).toEqual([])
    f.red.collect(1, 'k', 'a', SHAPE)
    expect(f.sent.map((s) => [s.to, (s.msg as PartialMessage).covered.toString(), [...(s.msg as PartialMessage).value]])).toEqual([['a', '{[2,8)}', [33]]])
  })

  it('a peer that never calls relays what it has at its timeout; the root pulls the rest and marks what is answered', () => {
    const f = fixture('b')
    f.parent = 'a'
    f.below = IntervalSet.range(4, 8)
    f.red.onPartial(0, 'c', { t: 'partial', id: 'k', root: 'a', op: 'sum', covered: IntervalSet.range(4, 6), value: Float64Array.of(11), coll: { length: 1 } })
    f.red.onTimer(10, 'k')
    expect(f.sent.map((s) => [s.to, (s.msg as PartialMessage).covered.toString()])).toEqual([['a', '{[4,6)}']])
    f.red.onPull({ t: 'pull', id: 'k', root: 'a', op: 'sum', length: 1, want: IntervalSet.range(2, 4), hops: 0, coll: true }, 8)
    expect(f.claimed.get('k')?.toString()).toBe('{[2,4)}')
    // Called late: nothing left to contribute, nothing sent.
    const before = f.sent.length
    f.red.collect(20, 'k', 'a', SHAPE)
    expect(f.sent.length).toBe(before)
  })

  it('the root outputs nothing before it is called, then completes, and pulls what is missing after twice its timeout', () => {
    const f = fixture('a')
    f.red.onPartial(0, 'b', { t: 'partial', id: 'k', root: 'a', op: 'sum', covered: IntervalSet.range(2, 6), value: Float64Array.of(18), coll: { length: 1 } })
    expect(f.reduced).toEqual([])
    f.red.collect(5, 'k', 'a', SHAPE)
    expect(f.reduced).toEqual([])
    f.red.onTimer(25, 'k')
    const pulls = f.sent.map((s) => [s.to, (s.msg as PullMessage).want.toString(), (s.msg as PullMessage).coll])
    expect(pulls).toEqual([['d', '{[6,8)}', true]])
    f.red.onPartial(26, 'd', { t: 'partial', id: 'k', root: 'a', op: 'sum', covered: IntervalSet.range(6, 8), value: Float64Array.of(15) })
    expect([...(f.reduced[0] as Float64Array)]).toEqual([36])
    expect(f.red.collectiveState('k', 'a', SHAPE)).toBe('called')
  })
})
