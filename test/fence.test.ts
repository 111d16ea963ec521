/**
 * The fence after a stall (node/fence.ts): a gap between ticks past `afterMs` holds every
 * frame until a member's facts name this peer; alive replays them in order before the
 * answer, dead drops them and hands on only the answer; no answer, or too much held,
 * replays them; a peer that is not a member is never fenced.
 */
import { Uint8ArrayList } from 'uint8arraylist'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Fence, factsIn, type FenceHost, type HeldFrame } from '../node/fence.ts'
import { FrameKind } from '../node/frame-channel.ts'
import { DEFAULT_CODEC_LIMITS, encodeMessage } from '../overlay/codec.ts'
import type { Message } from '../overlay/messages.ts'

const FACTS = 9
const frame = (from: string, kind: number, bytes = 10): HeldFrame => ({ from, kind, body: new Uint8ArrayList(new Uint8Array(bytes)), bulk: undefined })
const factsAbout = (status: 'alive' | 'dead'): Message => ({ t: 'facts', vnodeCount: 4, members: [{ peer: 'me', incarnation: 1, status }], records: [], welcome: false })

/** A fence whose host answers `verdicts` in turn for FACTS frames and records replays. */
function rig (opts: { member?: boolean, verdicts?: Array<'dead' | 'alive' | 'unknown'> } = {}): { fence: Fence, replayed: HeldFrame[], begun: () => number } {
  const replayed: HeldFrame[] = []
  const verdicts = [...(opts.verdicts ?? [])]
  let begun = 0
  const host: FenceHost = {
    begin: () => { begun++; return opts.member ?? true },
    facts: (f) => f.kind === FACTS ? factsAbout('alive') : undefined,
    verdict: () => verdicts.shift() ?? 'unknown',
    replay: (f) => { replayed.push(f) },
    log: () => {}
  }
  return { fence: new Fence(host, { afterMs: 1000, waitMs: 5000, maxHeldBytes: 100 }, 0), replayed, begun: () => begun }
}

afterEach(() => { vi.useRealTimers() })

describe('Fence', () => {
  it('holds nothing without a stall', () => {
    const { fence, begun } = rig()
    fence.tick(900)
    fence.tick(1800)
    expect(fence.active).toBe(false)
    expect(fence.take(frame('a', 1))).toBe(false)
    expect(begun()).toBe(0)
  })

  it('after a stall, holds frames until a member says alive, then replays them in order before the answer', () => {
    const { fence, replayed } = rig({ verdicts: ['unknown', 'alive'] })
    fence.tick(5000)
    expect(fence.active).toBe(true)
    const held = [frame('a', 1), frame('b', 2), frame('a', FACTS)]
    for (const f of held) expect(fence.take(f)).toBe(true)
    expect(replayed).toEqual([])
    expect(fence.take(frame('b', FACTS))).toBe(false) // the answer: processed by the caller, after
    expect(replayed).toEqual(held)
    expect(fence.active).toBe(false)
    expect(fence.stats).toMatchObject({ fences: 1, confirmedAlive: 1 })
  })

  it('drops what it held when a member says dead, and hands on the answer only', () => {
    const { fence, replayed } = rig({ verdicts: ['dead'] })
    fence.tick(5000)
    fence.take(frame('a', 1))
    fence.take(frame('a', 2))
    const answer = frame('c', FACTS)
    expect(fence.take(answer)).toBe(true)
    expect(replayed).toEqual([answer])
    expect(fence.active).toBe(false)
    expect(fence.stats.confirmedDead).toBe(1)
  })

  it('replays what it held when nobody answers in time, or when too much is held', () => {
    vi.useFakeTimers()
    const a = rig()
    a.fence.tick(5000)
    a.fence.take(frame('a', 1))
    vi.advanceTimersByTime(5001)
    expect(a.replayed.length).toBe(1)
    expect(a.fence.active).toBe(false)
    expect(a.fence.stats.unanswered).toBe(1)
    const b = rig()
    b.fence.tick(5000)
    b.fence.take(frame('a', 1, 60))
    expect(b.fence.take(frame('a', 2, 60))).toBe(true)
    expect(b.replayed.map((f) => f.kind)).toEqual([1, 2])
    expect(b.fence.stats.overflows).toBe(1)
  })

  it('is never raised for a peer that is not a member, and drop() forgets what it held', () => {
    const a = rig({ member: false })
    a.fence.tick(5000)
    expect(a.fence.active).toBe(false)
    const b = rig()
    b.fence.tick(5000)
    b.fence.take(frame('a', 1))
    b.fence.drop('evicted')
    expect(b.fence.active).toBe(false)
    expect(b.replayed).toEqual([])
  })

  it('finds membership facts in core frames only', () => {
    const core = (m: Message): HeldFrame => ({ from: 'a', kind: FrameKind.Core, body: new Uint8ArrayList(encodeMessage(m)), bulk: undefined })
    expect(factsIn(core(factsAbout('dead')), DEFAULT_CODEC_LIMITS)).toEqual(factsAbout('dead'))
    expect(factsIn(core({ t: 'sync' }), DEFAULT_CODEC_LIMITS)).toBeUndefined()
    expect(factsIn({ ...core(factsAbout('dead')), kind: FrameKind.Chunk }, DEFAULT_CODEC_LIMITS)).toBeUndefined()
    expect(factsIn(frame('a', FrameKind.Core, 7), DEFAULT_CODEC_LIMITS)).toBeUndefined()
  })
})
