/**
 * Answers to a reduction's pulls (overlay/pull-answers.ts): an owner pulled segment by
 * segment computes its whole contribution once per pull, whatever the array's length.
 */
import { describe, expect, it } from 'vitest'
import { PullAnswers, type PullHost } from '../overlay/pull-answers.ts'
import type { Message, PartialMessage, PullMessage } from '../overlay/messages.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { OwnershipMap } from '../virtual-nodes/ownership-map.ts'

/** Peer 'c' owning virtual nodes 0-3 (all of them), counting its contributions. */
function owner (): { answers: (cacheBytes: number) => PullAnswers, sent: Message[], computed: () => number } {
  const view = OwnershipMap.fromRecords(4, [{ ranges: IntervalSet.range(0, 4), owner: 'c', version: 1 }])
  const sent: Message[] = []
  let computed = 0
  const host: PullHost = {
    self: 'c',
    view,
    owned: () => IntervalSet.range(0, 4),
    isAlive: () => true,
    send: (_to, msg) => { sent.push(msg) },
    contribute: (_id, start) => { computed++; return Float64Array.from({ length: start.length }, (_, i) => i) },
    claim: (_id, v) => v,
    reject: (reason) => { throw new Error(`rejected: ${reason}`) }
  }
  return { answers: (cacheBytes) => new PullAnswers(host, cacheBytes), sent, computed: () => computed }
}

function segmentPull (id: string, length: number, segment: number, seg: number): PullMessage {
  return { t: 'pull', id, root: 'a', op: 'sum', length, want: IntervalSet.range(0, 4), hops: 0, seg, segment }
}

describe('pull answers', () => {
  it('an array longer than the whole cache is still computed once for all the segments of its pull', () => {
    // 64 segments of 16 elements: 8 KiB, four times the cache. Computed per segment, a pull of
    // 10^7 elements (1,221 segments, 80 MB) kept two daemons busy for 2.5 minutes.
    const o = owner()
    const answers = o.answers(2048)
    for (let seg = 0; seg < 64; seg++) answers.answer(segmentPull('r', 1024, 16, seg), 8)
    expect(o.computed()).toBe(1)
    const values = o.sent.map((m) => (m as PartialMessage).value)
    expect(values.map((v) => v[0])).toEqual(Array.from({ length: 64 }, (_, k) => 16 * k))
    expect(values.every((v) => v.length === 16)).toBe(true)
  })

  it('an answer longer than the cache is not kept past the last segment, nor past the next answer computed', () => {
    const o = owner()
    const answers = o.answers(2048)
    answers.answer(segmentPull('r', 1024, 16, 63), 8)
    answers.answer(segmentPull('r', 1024, 16, 0), 8)
    expect(o.computed()).toBe(2)
    answers.answer(segmentPull('s', 1024, 16, 0), 8)
    answers.answer(segmentPull('r', 1024, 16, 1), 8)
    expect(o.computed()).toBe(4)
  })

  it('answers that fit the cache together are all kept', () => {
    const o = owner()
    const answers = o.answers(2048)
    for (let seg = 0; seg < 4; seg++) for (const id of ['r', 's']) answers.answer(segmentPull(id, 128, 16, seg), 8)
    expect(o.computed()).toBe(2)
  })
})
