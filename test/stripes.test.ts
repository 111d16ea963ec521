/**
 * Striped broadcasts (overlay/stripes.ts) and the cluster entries they are planned from
 * (trees/tree-entries.ts): the chunk arithmetic against a naive model, the plan, the
 * entries a subtree reports, and whole broadcasts over three clusters of composed cores,
 * stable and with a peer leaving or crashing in the middle.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { planStripes, stripeChunkCount, streamChunkCount, MAX_STRIPES } from '../overlay/stripes.ts'
import { MAX_TREE_ENTRIES, subtreeEntries } from '../trees/tree-entries.ts'
import { Loop, expectExactlyOnce } from './core-loop.ts'
import { BYTES, CHUNK, NAMES, broadcastChecked, chunksOf, cluster, expectPayload, latency, payload, threeClusters } from './stripes-rig.ts'

describe('stripe arithmetic', () => {
  it('chunk counts match a naive count', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 2, max: MAX_STRIPES }), (chunks, stripes) => {
      let total = 0
      for (let s = 0; s < stripes; s++) {
        const mine = Array.from({ length: chunks }, (_, i) => i).filter((i) => i % stripes === s)
        expect(stripeChunkCount(chunks, stripes, s)).toBe(mine.length)
        expect(streamChunkCount({ chunkCount: chunks, stripes, stripe: s })).toBe(mine.length)
        total += mine.length
      }
      expect(total).toBe(chunks)
      expect(streamChunkCount({ chunkCount: chunks, stripes })).toBe(chunks)
    }))
  })
})

describe('planStripes', () => {
  const all = IntervalSet.range(0, 40)
  const own = IntervalSet.range(0, 10)
  const e = (peer: PeerId, lo: number, hi: number): { peer: PeerId, reach: IntervalSet } => ({ peer, reach: IntervalSet.range(lo, hi) })
  const alive = (): boolean => true

  it('one stripe per entry: each goes to its entry with every far part, which relays the others', () => {
    const plan = planStripes(all, own, [e('b', 10, 20), e('c', 20, 30), e('d', 30, 40)], 'a', alive, 8)
    expect(plan).not.toBeNull()
    if (plan === null) return
    expect(plan.local.equals(own)).toBe(true)
    expect(plan.stripes.map((s) => s.to)).toEqual(['b', 'c', 'd'])
    for (const s of plan.stripes) {
      expect(s.header.equals(IntervalSet.range(10, 40))).toBe(true)
      expect(s.relay.map((r) => r.to)).toEqual(['b', 'c', 'd'].filter((p) => p !== s.to))
    }
    expect(plan.stripes[0]?.relay[0]?.header.equals(IntervalSet.range(20, 30))).toBe(true)
  })

  it('skips dead entries, itself and empty parts; overlapping reports are made disjoint; own virtual nodes stay local', () => {
    const plan = planStripes(all, own, [e('b', 5, 20), e('x', 20, 25), e('a', 25, 30), e('c', 15, 30), e('z', 50, 60)], 'a', (p) => p !== 'x', 8)
    expect(plan?.stripes.map((s) => s.to)).toEqual(['b', 'c'])
    expect(plan?.stripes[0]?.relay[0]?.header.equals(IntervalSet.range(20, 30))).toBe(true)
    expect(plan?.stripes[1]?.relay[0]?.header.equals(IntervalSet.range(10, 20))).toBe(true)
    expect(plan?.local.equals(IntervalSet.range(0, 10).union(IntervalSet.range(30, 40)))).toBe(true)
  })

  it('no plan with fewer than two entries, or more than the limit', () => {
    expect(planStripes(all, own, [e('b', 10, 40)], 'a', alive, 8)).toBeNull()
    expect(planStripes(all, own, [], 'a', alive, 8)).toBeNull()
    expect(planStripes(all, own, [e('b', 10, 20), e('c', 20, 30), e('d', 30, 40)], 'a', alive, 2)).toBeNull()
    expect(planStripes(all, own, [e('b', 10, 20), e('c', 20, 30)], 'a', alive, 1)).toBeNull()
  })
})

describe('subtreeEntries', () => {
  it('an entry reports itself first with its reach minus the nested entries', () => {
    const nested = [{ peer: 'n1', reach: IntervalSet.range(5, 8) }, { peer: 'n2', reach: IntervalSet.range(20, 22) }]
    const out = subtreeEntries('me', true, IntervalSet.range(0, 30), [[nested[0] as never], [], [nested[1] as never]])
    expect(out.map((x) => x.peer)).toEqual(['me', 'n1', 'n2'])
    expect(out[0]?.reach.toString()).toBe(IntervalSet.range(0, 5).union(IntervalSet.range(8, 20)).union(IntervalSet.range(22, 30)).toString())
    expect(subtreeEntries('me', false, IntervalSet.range(0, 30), [nested, []])).toEqual(nested)
    expect(subtreeEntries('me', false, IntervalSet.range(0, 30), [])).toEqual([])
  })

  it('bounded: at most MAX_TREE_ENTRIES', () => {
    const many = Array.from({ length: 3 * MAX_TREE_ENTRIES }, (_, i) => ({ peer: `n${i}`, reach: IntervalSet.of(i) }))
    expect(subtreeEntries('me', false, IntervalSet.range(0, 100), [many]).length).toBe(MAX_TREE_ENTRIES)
    expect(subtreeEntries('me', true, IntervalSet.range(0, 100), [many, many]).length).toBe(MAX_TREE_ENTRIES)
  })
})

describe('striped broadcasts over three clusters', () => {
  it('the root deals the chunks into one stripe per other cluster; every peer gets every chunk once (over the wire codec)', () => {
    const loop = threeClusters(true)
    const entries = loop.core('p00').trees.stripeEntries()
    expect(new Set(entries.map((x) => cluster(x.peer))), 'one entry in each other cluster').toEqual(new Set([1, 2]))
    const id = broadcastChecked(loop)
    const chunks = chunksOf(loop, id)
    const opens = chunks.filter((c) => c.msg.open !== undefined)
    expect(opens.every((c) => c.msg.open?.stripes === 2), 'every stream names the stripe count').toBe(true)
    // The root: one unstriped stream into its own cluster's part, one stripe to each entry.
    const fromRoot = opens.filter((c) => c.from === 'p00')
    expect(fromRoot.filter((c) => c.msg.open?.stripe !== undefined).map((c) => c.to).sort()).toEqual(entries.map((x) => x.peer).sort())
    expect(fromRoot.filter((c) => c.msg.open?.stripe !== undefined).every((c) => c.msg.open?.relay?.length === 1)).toBe(true)
    // Every non-root peer receives every chunk exactly once.
    const chunkCount = Math.ceil(BYTES / CHUNK)
    for (const p of NAMES.slice(1)) {
      const got = chunks.filter((c) => c.to === p).map((c) => c.msg.index).sort((a, b) => a - b)
      expect(got, `${p}'s chunks`).toEqual(Array.from({ length: chunkCount }, (_, i) => i))
    }
    expect(chunks.filter((c) => c.to === 'p00')).toEqual([])
    // Each cluster link carries stripes, not copies: a far cluster receives each chunk once over the wide area.
    for (const c of [1, 2]) {
      const wide = chunks.filter((x) => cluster(x.to) === c && cluster(x.from) !== c).map((x) => x.msg.index).sort((a, b) => a - b)
      expect(wide, `chunks entering cluster ${c}`).toEqual(Array.from({ length: chunkCount }, (_, i) => i))
    }
    expect(new Set(chunks.filter((x) => cluster(x.to) === 1 && cluster(x.from) !== 1).map((x) => cluster(x.from))), 'cluster 1 fed from both other clusters').toEqual(new Set([0, 2]))
  })

  it('stripeMaxCount 0 turns it off: one unstriped stream per peer', () => {
    const loop = new Loop({ latency, config: { switchPointBytes: 4 * CHUNK, stripeMinBytes: 4 * CHUNK, chunkBytes: CHUNK, stripeMaxCount: 0 } })
    loop.bootstrap(NAMES.length, NAMES)
    loop.runUntil(() => loop.stable(), 20_000, 'stable trees')
    const id = loop.input('p00', (c) => c.broadcast(loop.now, payload()))
    loop.runUntil(() => loop.outputs('broadcast-done', 'p00').length > 0, 5000, 'broadcast-done')
    expectExactlyOnce(loop, id, NAMES.length)
    expect(chunksOf(loop, id).filter((c) => c.msg.open !== undefined).every((c) => c.msg.open?.stripes === undefined)).toBe(true)
  })

  it.each([['leaves', false], ['crashes', true]] as const)('an entry that %s in the middle: every virtual node still gets it once', (_what, crash) => {
    const loop = threeClusters()
    const entry = loop.core('p00').trees.stripeEntries()[0]?.peer as PeerId
    const id = loop.input('p00', (c) => c.broadcast(loop.now, payload()))
    loop.run(9)
    expect(loop.outputs('broadcast-done').length, 'still under way').toBe(0)
    expect(loop.deliveries(id).some((d) => d.peer === entry), 'not delivered at the entry yet').toBe(false)
    expect(chunksOf(loop, id).some((c) => c.to === entry), 'the entry had chunks').toBe(true)
    if (crash) loop.crash(entry)
    else loop.input(entry, (c) => c.leave(loop.now))
    loop.runUntil(() => loop.outputs('broadcast-done', 'p00').length > 0, 20_000, 'broadcast-done')
    loop.run(500)
    loop.ok()
    expectPayload(loop, id)
    if (!crash) { expectExactlyOnce(loop, id, NAMES.length); return }
    // A crash: the crashed peer's deliveries are gone with it; among the others, exactly once.
    const survivors = new Set(NAMES.filter((n) => n !== entry))
    const delivered = loop.deliveries(id).filter((d) => survivors.has(d.peer))
    const covered = IntervalSet.unionAll(delivered.map((d) => d.out.vnodes))
    expect(delivered.reduce((n, d) => n + d.out.vnodes.size, 0)).toBe(covered.size)
    const lost = IntervalSet.unionAll(loop.deliveries(id).filter((d) => d.peer === entry).map((d) => d.out.vnodes))
    expect(covered.union(lost).equals(IntervalSet.range(0, NAMES.length))).toBe(true)
  })

  it('a peer handing its virtual nodes over in the middle passes them on with every chunk', () => {
    const loop = threeClusters()
    const far = NAMES.filter((n) => cluster(n) === 2 && !loop.core('p00').trees.stripeEntries().some((e) => e.peer === n))[0] as PeerId
    const id = loop.input('p00', (c) => c.broadcast(loop.now, payload()))
    loop.run(9)
    expect(loop.deliveries(id).some((d) => d.peer === far), 'not delivered there yet').toBe(false)
    expect(chunksOf(loop, id).some((c) => c.to === far), 'it had chunks').toBe(true)
    loop.input(far, (c) => c.leave(loop.now))
    loop.runUntil(() => loop.outputs('broadcast-done', 'p00').length > 0, 20_000, 'broadcast-done')
    loop.run(500)
    loop.ok()
    expectExactlyOnce(loop, id, NAMES.length)
    expectPayload(loop, id)
  })

  it('the root itself taking over a leaver\'s virtual nodes acknowledges the stripes routed back to it', () => {
    // p11 is the last peer id: its successor is p00, the root. It leaves as the broadcast
    // starts, so stripes reach its virtual node at the root through other peers. The root
    // holds every chunk but counts no stripes: its acknowledgement once waited for ever,
    // and the leaver (entry of a stripe, waiting for that acknowledgement) for its leave timeout.
    const loop = threeClusters()
    const id = loop.input('p00', (c) => c.broadcast(loop.now, payload()))
    loop.run(0.5)
    loop.input('p11', (c) => c.leave(loop.now))
    loop.runUntil(() => loop.outputs('broadcast-done', 'p00').length > 0, 5000, 'broadcast-done')
    loop.runUntil(() => loop.outputs('left', 'p11').length > 0, 5000, 'p11 left')
    expect(loop.outputs('left', 'p11')[0]?.out).toEqual({ type: 'left', drained: true })
    loop.run(200)
    loop.ok()
    expectExactlyOnce(loop, id, NAMES.length)
    expect(loop.core('p00').ownedSet.has(11)).toBe(true)
    expect(loop.core('p00').streams.activeCount, 'nothing left waiting at the root').toBe(0)
  })
})
