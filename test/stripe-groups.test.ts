/**
 * Cluster tags (overlay/cluster-tag.ts) and the stripes they group (overlay/stripes.ts): a
 * bandwidth tree that enters one cluster through two entries gets one stripe there, not
 * two over the same wide-area link, and every cluster still receives each chunk once over
 * the wide area.
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { clusterTag, CLUSTER_TAG_SIZE, tagsOverlap } from '../overlay/cluster-tag.ts'
import { planStripes } from '../overlay/stripes.ts'
import type { TreeEntry } from '../trees/tree-ops.ts'
import { sameEntries, subtreeEntries } from '../trees/tree-entries.ts'
import type { Loop } from './core-loop.ts'
import { BYTES, CHUNK, NAMES, broadcastChecked, chunksOf, cluster, payload, threeClusters } from './stripes-rig.ts'

describe('cluster tags', () => {
  const byRtt = (list: Array<[PeerId, number]>): Array<{ peer: PeerId, rttMs: number, seq: number }> => list.map(([peer, rttMs], seq) => ({ peer, rttMs, seq })).sort((a, b) => a.rttMs - b.rttMs || a.seq - b.seq)
  const alive = (): boolean => true

  it('the smallest ids of itself and the live near peers, whatever their RTT order', () => {
    const near = byRtt([['p9', 0.1], ['p3', 0.2], ['p7', 0.25], ['p1', 0.3], ['p5', 0.3], ['p2', 6], ['p0', 6]])
    expect(clusterTag('p4', near, 0.9, alive)).toEqual(['p1', 'p3', 'p4', 'p5'])
    expect(clusterTag('p0', near, 0.9, alive)).toEqual(['p0', 'p1', 'p3', 'p5'])
    expect(clusterTag('p4', near, 0.9, (p) => p !== 'p1')).toEqual(['p3', 'p4', 'p5', 'p7'])
    expect(clusterTag('p4', [], Infinity, alive)).toEqual(['p4'])
    expect(clusterTag('p4', near, 0.9, alive, 2)).toEqual(['p1', 'p3'])
    expect(clusterTag('p4', near, 0.9, alive).length).toBeLessThanOrEqual(CLUSTER_TAG_SIZE)
  })

  it('overlap means a shared id', () => {
    expect(tagsOverlap(['a', 'b'], ['b', 'c'])).toBe(true)
    expect(tagsOverlap(['a', 'b'], ['c', 'd'])).toBe(false)
    expect(tagsOverlap(undefined, ['a'])).toBe(false)
  })

  it('an entry reports its tag; a changed tag is a changed entry list', () => {
    const reach = IntervalSet.range(0, 10)
    const a = subtreeEntries('e', true, reach, [], ['a', 'e'])
    expect(a).toEqual([{ peer: 'e', reach, near: ['a', 'e'] }])
    expect(subtreeEntries('e', true, reach, [])).toEqual([{ peer: 'e', reach }])
    expect(sameEntries(a, subtreeEntries('e', true, reach, [], ['a', 'e']))).toBe(true)
    expect(sameEntries(a, subtreeEntries('e', true, reach, [], ['b', 'e']))).toBe(false)
    expect(sameEntries(a, subtreeEntries('e', true, reach, []))).toBe(false)
  })
})

describe('planStripes with cluster tags', () => {
  const all = IntervalSet.range(0, 40)
  const own = IntervalSet.range(0, 10)
  const e = (peer: PeerId, lo: number, hi: number, near?: PeerId[]): TreeEntry => ({ peer, reach: IntervalSet.range(lo, hi), ...(near !== undefined ? { near } : {}) })
  const alive = (): boolean => true

  it('two entries of one cluster share a stripe: the first passes the other its part, and the other stripes reach it through the first', () => {
    const plan = planStripes(all, own, [e('b', 10, 20, ['b']), e('c1', 20, 25, ['c0', 'c1']), e('d', 30, 40, ['d']), e('c2', 25, 30, ['c0', 'c2'])], 'a', alive, 8)
    expect(plan?.stripes.map((s) => s.to)).toEqual(['b', 'c1', 'd'])
    const c = IntervalSet.range(20, 30)
    for (const s of plan?.stripes ?? []) expect(s.header.equals(IntervalSet.range(10, 40))).toBe(true)
    const [sb, sc, sd] = plan?.stripes ?? []
    expect(sb?.relay.map((r) => [r.to, r.header.toString(), r.relay?.map((q) => [q.to, q.header.toString()])])).toEqual([
      ['c1', c.toString(), [['c2', IntervalSet.range(25, 30).toString()]]],
      ['d', IntervalSet.range(30, 40).toString(), undefined]
    ])
    expect(sc?.relay.map((r) => [r.to, r.header.toString(), r.relay])).toEqual([
      ['c2', IntervalSet.range(25, 30).toString(), undefined],
      ['b', IntervalSet.range(10, 20).toString(), undefined],
      ['d', IntervalSet.range(30, 40).toString(), undefined]
    ])
    expect(sd?.relay.map((r) => r.to)).toEqual(['b', 'c1'])
    expect(plan?.local.equals(own)).toBe(true)
  })

  it('groups are transitive, and without tags (or all in one group) every entry keeps its stripe', () => {
    const chain = planStripes(all, own, [e('x', 10, 20, ['x', 'y']), e('y', 20, 30, ['y', 'z']), e('z', 30, 40, ['z'])], 'a', alive, 8)
    expect(chain?.stripes.length ?? 0, 'x, y and z are one cluster: one group, so one stripe each').toBe(3)
    const two = planStripes(all, own, [e('x', 10, 20, ['x', 'y']), e('w', 20, 30, ['w']), e('z', 30, 40, ['z', 'y'])], 'a', alive, 8)
    expect(two?.stripes.map((s) => s.to)).toEqual(['x', 'w'])
    expect(two?.stripes[0]?.relay.map((r) => r.to)).toEqual(['z', 'w'])
    const none = planStripes(all, own, [e('b', 10, 20), e('c', 20, 30), e('d', 30, 40)], 'a', alive, 8)
    expect(none?.stripes.map((s) => s.relay.length)).toEqual([2, 2, 2])
  })

  it('the stripe limit counts groups', () => {
    const entries = [e('b', 10, 20, ['b']), e('c1', 20, 25, ['c']), e('c2', 25, 30, ['c'])]
    expect(planStripes(all, own, entries, 'a', alive, 2)?.stripes.length).toBe(2)
    expect(planStripes(all, own, entries, 'a', alive, 1)).toBeNull()
  })
})

describe('a bandwidth tree entering one cluster twice', () => {
  /**
   * The root's entries as its tree would report them had cluster 2 been entered through two
   * peers: the real entry keeps all but one peer's virtual node, which a second peer of that
   * cluster (a leaf of the tree: two entries' subtrees never overlap) reports as its own
   * entry. With `tags`, each entry's tag names the first peer of its cluster.
   */
  function twoEntriesInCluster2 (loop: Loop, tags: boolean): PeerId {
    const root = loop.core('p00')
    const real = root.trees.stripeEntries()
    const e2 = real.find((x) => cluster(x.peer) === 2) as TreeEntry
    const other = NAMES.find((n) => cluster(n) === 2 && n !== e2.peer && loop.core(n).trees.get('bw', 'p00')?.children.size === 0) as PeerId
    const otherPart = loop.core(other).ownedSet
    const tag = (p: PeerId): { near?: PeerId[] } => tags ? { near: [NAMES[4 * cluster(p)] as PeerId, p].sort() } : {}
    const fake: TreeEntry[] = real.map((x) => x === e2 ? { peer: x.peer, reach: x.reach.difference(otherPart), ...tag(x.peer) } : { ...x, ...tag(x.peer) })
    fake.push({ peer: other, reach: otherPart, ...tag(other) })
    root.trees.stripeEntries = () => fake
    return other
  }

  function wideAreaCopies (loop: Loop, id: string, c: number): number[] {
    const counts = new Map<number, number>()
    for (const x of chunksOf(loop, id)) if (cluster(x.to) === c && cluster(x.from) !== c) counts.set(x.msg.index, (counts.get(x.msg.index) ?? 0) + 1)
    return [...counts.values()]
  }

  it.each([[true, 2, 1], [false, 3, 2]] as const)('tags %s: %i stripes, the most copies of a chunk entering cluster 2 over the wide area %i', (tags, stripes, copies) => {
    const loop = threeClusters(true)
    const other = twoEntriesInCluster2(loop, tags)
    const id = broadcastChecked(loop)
    const opens = chunksOf(loop, id).filter((c) => c.msg.open !== undefined)
    expect(new Set(opens.map((c) => c.msg.open?.stripes))).toEqual(new Set([stripes]))
    // Every peer but the root gets every chunk exactly once.
    const chunkCount = Math.ceil(BYTES / CHUNK)
    for (const p of NAMES.slice(1)) expect(chunksOf(loop, id).filter((c) => c.to === p).map((c) => c.msg.index).sort((a, b) => a - b), p).toEqual(Array.from({ length: chunkCount }, (_, i) => i))
    expect(Math.max(...wideAreaCopies(loop, id, 2)), 'copies of a chunk into cluster 2').toBe(copies)
    expect(Math.max(...wideAreaCopies(loop, id, 1)), 'copies of a chunk into cluster 1').toBe(1)
    if (tags) {
      // The second entry gets every chunk from inside its cluster.
      expect(chunksOf(loop, id).filter((c) => c.to === other).every((c) => cluster(c.from) === 2)).toBe(true)
    }
  })

  it('the second entry of the group crashing mid-broadcast: everyone else still gets it once', () => {
    const loop = threeClusters()
    const other = twoEntriesInCluster2(loop, true)
    const id = loop.input('p00', (c) => c.broadcast(loop.now, payload()))
    loop.run(9)
    loop.crash(other)
    loop.runUntil(() => loop.outputs('broadcast-done', 'p00').length > 0, 20_000, 'broadcast-done')
    loop.run(500)
    loop.ok()
    const survivors = loop.deliveries(id).filter((d) => d.peer !== other)
    const covered = IntervalSet.unionAll(survivors.map((d) => d.out.vnodes))
    expect(survivors.reduce((n, d) => n + d.out.vnodes.size, 0)).toBe(covered.size)
    const lost = IntervalSet.unionAll(loop.deliveries(id).filter((d) => d.peer === other).map((d) => d.out.vnodes))
    expect(covered.union(lost).equals(IntervalSet.range(0, NAMES.length))).toBe(true)
  })
})
