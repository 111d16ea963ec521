/**
 * Rule III for long payloads (overlay/streams.ts `fallbackGroups`, `fallbackFanout`): what
 * the bandwidth tree does not reach from a peer goes to at most `fallbackFanout` owners,
 * each routing its share on, instead of one copy per owner.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { fallbackGroups } from '../overlay/fallback-groups.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { Loop, expectExactlyOnce } from './core-loop.ts'

/** Owners in virtual-node order, each with a disjoint part (what `OwnershipMap.partition` gives). */
const ownersArb = fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 0, maxLength: 30 }).map((lens) => {
  let at = 0
  return lens.map((len, i): [PeerId, IntervalSet] => {
    // Two ranges per owner, interleaved with the next owner's, like a fragmented view.
    const part = IntervalSet.range(at, at + len).union(IntervalSet.range(at + 1000, at + 1000 + len))
    at += len
    return [`p${i}`, part]
  })
})

describe('fallbackGroups', () => {
  it('partitions the parts among at most `fanout` heads, each an owner whose own part it carries', () => {
    fc.assert(fc.property(ownersArb, fc.integer({ min: 0, max: 6 }), (owners, fanout) => {
      const groups = fallbackGroups(owners, fanout)
      if (fanout === 0 || owners.length <= fanout) {
        expect(groups).toEqual(owners)
        return
      }
      expect(groups.length).toBe(fanout)
      const own = new Map(owners)
      let all = IntervalSet.EMPTY
      for (const [head, header] of groups) {
        const mine = own.get(head)
        expect(mine).toBeDefined()
        expect(header.containsAll(mine as IntervalSet)).toBe(true)
        expect(all.intersects(header)).toBe(false)
        all = all.union(header)
      }
      expect(all.equals(IntervalSet.unionAll(owners.map((o) => o[1])))).toBe(true)
      // Heads keep virtual-node order and the groups differ in size by one owner at most.
      const heads = groups.map((g) => owners.findIndex((o) => o[0] === g[0]))
      expect([...heads].sort((a, b) => a - b)).toEqual(heads)
      const sizes = heads.map((h, i) => (heads[i + 1] ?? owners.length) - h)
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1)
    }))
  })
})

const NAMES = Array.from({ length: 12 }, (_, i) => `p${i}`)
const VNODES = 24

/** 12 peers, a long broadcast from p0 before any tree exists: every part is rule III's. */
function treeless (fallbackFanout: number | undefined, bytes: number): { loop: Loop, id: string, rootOpens: number } {
  const loop = new Loop({ config: { switchPointBytes: 64, chunkBytes: 16, ...(fallbackFanout !== undefined ? { fallbackFanout } : {}) } })
  loop.bootstrap(VNODES, NAMES)
  const id = loop.input('p0', (c) => c.broadcast(loop.now, new Uint8Array(bytes).fill(9)))
  loop.runUntil(() => loop.outputs('broadcast-done').length > 0, 5000, 'broadcast-done')
  loop.run(200)
  const rootOpens = loop.sent.filter((s) => s.from === 'p0' && s.message.t === 'chunk' && s.message.open?.id === id).length
  return { loop, id, rootOpens }
}

describe('fallbackFanout: a long broadcast with no tree yet', () => {
  it('by default the root sends two copies, and every virtual node still gets one, in log2 hops', () => {
    const { loop, id, rootOpens } = treeless(undefined, 200)
    expect(rootOpens).toBe(2)
    expectExactlyOnce(loop, id, VNODES)
    for (const d of loop.deliveries(id)) expect(d.out.chunks.reduce((n, c) => n + c.length, 0)).toBe(200)
    // No peer sent more than two opens of it (plus its own tree children, none yet).
    const opens = new Map<PeerId, number>()
    for (const s of loop.sent) if (s.message.t === 'chunk' && s.message.open?.id === id) opens.set(s.from, (opens.get(s.from) ?? 0) + 1)
    expect(Math.max(...opens.values())).toBeLessThanOrEqual(2)
    // A binary split of 11 owners: at most ceil(log2(12)) = 4 hops from the root.
    const hops = loop.sent.flatMap((s) => s.message.t === 'chunk' && s.message.open?.id === id ? [s.message.open.hops] : [])
    expect(Math.max(...hops)).toBeLessThanOrEqual(4)
    // Every open is marked as a fallback (rule III) send.
    expect(loop.sent.filter((s) => s.message.t === 'chunk' && s.message.open?.id === id).every((s) => s.message.t === 'chunk' && s.message.open?.fallback === true)).toBe(true)
    loop.ok()
  })

  it('fallbackFanout 0 is 003: one copy per owner from the root', () => {
    const { loop, id, rootOpens } = treeless(0, 200)
    expect(rootOpens).toBe(NAMES.length - 1)
    expectExactlyOnce(loop, id, VNODES)
    loop.ok()
  })

  it('latency-tree broadcasts (under the switch point) keep one copy per owner', () => {
    const { loop, id, rootOpens } = treeless(undefined, 10)
    expect(rootOpens).toBe(NAMES.length - 1)
    expectExactlyOnce(loop, id, VNODES)
    loop.ok()
  })
})
