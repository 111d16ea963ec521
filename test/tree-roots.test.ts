/**
 * Tree roots (overlay/tree-roots.ts): with a `treeRootStride` only some peers root trees,
 * and the others broadcast and start reductions from their place in a tree root's trees,
 * up as well as down. The rule itself, then five cores in the in-test loop where only p3
 * roots trees (stride 4), with every message through the wire codec.
 */
import { describe, expect, it } from 'vitest'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { InvalidArgumentError } from '../overlay/errors.ts'
import type { Output } from '../overlay/outputs.ts'
import { isTreeRoot, peerHash, pickTreeRoot, treeRootOf } from '../overlay/tree-roots.ts'
import type { TreeKind } from '../trees/tree-kind.ts'
import type { TreeState } from '../trees/tree-table.ts'
import type { TreecastCore } from '../overlay/core.ts'
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { expectExactlyOnce, settled, type Loop } from './core-loop.ts'

describe('the tree-root rule', () => {
  it('hashes ids the same way everywhere; stride 1 makes every peer a root', () => {
    expect(peerHash('')).toBe(0x811c9dc5)
    expect(peerHash('p3')).toBe(peerHash('p3'))
    expect(['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'].filter((p) => isTreeRoot(p, 4))).toEqual(['p3', 'p7'])
    for (const p of ['p0', 'x', '12D3KooW']) expect(isTreeRoot(p, 1)).toBe(true)
    // About 1 in `stride` over many ids.
    const ids = Array.from({ length: 20_000 }, (_, i) => `p${i}`)
    const share = ids.filter((p) => isTreeRoot(p, 16)).length / ids.length
    expect(share).toBeGreaterThan(1 / 16 * 0.8)
    expect(share).toBeLessThan(1 / 16 * 1.2)
  })

  it('a tree root uses its own trees; another peer the nearest tree root, then the smallest hash; null when none is alive', () => {
    expect(pickTreeRoot('p3', 4, ['p0', 'p7'], () => 1)).toBe('p3')
    const dist = new Map<PeerId, number>([['p3', 9], ['p7', 2]])
    expect(pickTreeRoot('p0', 4, ['p0', 'p3', 'p7'], (p) => dist.get(p))).toBe('p7')
    const byHash = peerHash('p3') < peerHash('p7') ? 'p3' : 'p7'
    expect(pickTreeRoot('p0', 4, ['p3', 'p7'], () => undefined)).toBe(byHash)
    expect(pickTreeRoot('p0', 4, ['p1', 'p2'], () => 1)).toBeNull()
  })

  it('the core prefers a tree root under which it has a parent in the tree the stream takes, then the nearest', () => {
    // p3 and p7 are tree roots under stride 4. This peer measured p3 at 0.3 ms and p7 at 6 ms.
    const rtt = new Map<PeerId, number>([['p3', 0.3], ['p7', 6]])
    const state = (parent: PeerId | null, metric: number): TreeState => ({ parent, metric }) as unknown as TreeState
    const trees = (attached: Record<string, PeerId | null>) => ({
      get: (kind: TreeKind, root: PeerId): TreeState | undefined => (root === 'p3' || root === 'p7') ? state(attached[`${kind}:${root}`] ?? null, root === 'p3' ? 0.5 : 6.2) : undefined
    })
    const alive = ['p0', 'p3', 'p7']
    // Attached in both trees of both: the nearer by latency-tree distance.
    const both = trees({ 'lat:p3': 'p1', 'bw:p3': 'p1', 'lat:p7': 'p1', 'bw:p7': 'p1' })
    expect(treeRootOf('p0', 4, 'lat', alive, both, (p) => rtt.get(p))).toBe('p3')
    // p3's bandwidth tree lost this peer's parent: a long broadcast takes p7's, a short one still p3's.
    const noBw = trees({ 'lat:p3': 'p1', 'lat:p7': 'p1', 'bw:p7': 'p1' })
    expect(treeRootOf('p0', 4, 'bw', alive, noBw, (p) => rtt.get(p))).toBe('p7')
    expect(treeRootOf('p0', 4, 'lat', alive, noBw, (p) => rtt.get(p))).toBe('p3')
    // Attached nowhere: the nearest by RTT; nothing alive: itself.
    expect(treeRootOf('p0', 4, 'lat', alive, trees({}), (p) => rtt.get(p))).toBe('p3')
    expect(treeRootOf('p0', 4, 'lat', ['p0', 'p1'], trees({}), (p) => rtt.get(p))).toBe('p0')
  })
})

const STRIDE = { treeRootStride: 4 }

function rootsOnly (): Loop {
  return settled(23, { config: STRIDE, wire: true })
}

describe('five cores, only p3 roots trees', () => {
  it('every peer holds both trees of p3 and no other', () => {
    const loop = rootsOnly()
    for (const p of loop.running()) {
      const trees = loop.core(p).trees
      for (const root of ['p0', 'p1', 'p2', 'p4']) expect(trees.get('lat', root), `${p}: trees of ${root}`).toBeUndefined()
      expect(trees.get('lat', 'p3')).toBeDefined()
      expect(trees.get('bw', 'p3')).toBeDefined()
      expect(loop.core(p).isTreeRoot).toBe(p === 'p3')
    }
  })

  it('a broadcast from a peer that is no root goes down and up p3\'s tree: exactly once, no point-to-point', () => {
    const loop = rootsOnly()
    for (const [root, bytes] of [['p0', 1], ['p4', 3], ['p1', 1 << 20]] as const) {
      const id = loop.input(root, (c) => c.broadcast(loop.now, new Uint8Array(bytes)))
      loop.runUntil(() => loop.outputs('broadcast-done', root).some((l) => (l.out as { id: string }).id === id), 10_000, `broadcast ${id}`)
      loop.run(200)
      expectExactlyOnce(loop, id, 23)
      const opens = loop.sent.filter((m) => m.message.t === 'chunk' && m.message.open?.id === id).map((m) => ({ from: m.from, to: m.to, open: (m.message as { open: { tree?: string, fallback: boolean } }).open }))
      expect(opens.every((o) => o.open.tree === 'p3'), `${id} names p3's tree on every hop`).toBe(true)
      expect(opens.filter((o) => o.open.fallback)).toEqual([])
      // The origin sent its part up to its parent in p3's tree.
      const kind = bytes >= 256 * 1024 ? 'bw' : 'lat'
      const parent = loop.core(root).trees.get(kind, 'p3')?.parent
      expect(parent).toBeTruthy()
      expect(opens.some((o) => o.from === root && o.to === parent)).toBe(true)
      // A long one first asks p3 for its bandwidth tree's cluster entries (overlay/stripe-asks.ts; none here: one cluster).
      const asked = loop.sent.filter((m) => (m.message.t === 'entries-req' || m.message.t === 'entries-rep') && (m.message as { id: string }).id === id).map((m) => `${m.from}>${m.to} ${m.message.t}`)
      expect(asked).toEqual(kind === 'bw' ? [`${root}>p3 entries-req`, `p3>${root} entries-rep`] : [])
    }
    loop.ok()
  })

  it('a reduction started at a peer that is no root is correct; a collective needs a tree root', () => {
    const loop = rootsOnly()
    const id = loop.input('p0', (c) => c.reduce(loop.now, { op: 'sum', length: 2 }))
    loop.runUntil(() => loop.outputs('reduced', 'p0').length > 0, 10_000, 'reduced')
    const r = loop.outputs('reduced', 'p0')[0]?.out as Extract<Output, { type: 'reduced' }>
    expect(r.id).toBe(id)
    expect([...r.value]).toEqual([23 * 24 / 2, 23])
    expect(() => { loop.core('p1').reduceCollective(loop.now, { id: 'c', root: 'p0', op: 'sum', length: 2 }) }).toThrow(InvalidArgumentError)
    for (const p of loop.running()) loop.input(p, (c) => { c.reduceCollective(loop.now, { id: 'c3', root: 'p3', op: 'sum', length: 2 }) })
    loop.runUntil(() => loop.outputs('reduced', 'p3').length > 0, 70_000, 'collective')
    expect([...(loop.outputs('reduced', 'p3')[0]?.out as Extract<Output, { type: 'reduced' }>).value]).toEqual([23 * 24 / 2, 23])
    loop.ok()
  })
  it('a part a child sent up is never routed back down to it, even when the parent\'s reach set for it is stale', () => {
    const loop = rootsOnly()
    // A peer that is no tree root, with a parent in p3's latency tree.
    const s = loop.running().find((p) => p !== 'p3' && loop.core(p).trees.get('lat', 'p3')?.parent != null) as PeerId
    const parent = loop.core(s).trees.get('lat', 'p3')?.parent as PeerId
    // The parent believes s's subtree also reaches a virtual node of a peer outside it.
    const st = loop.core(parent).trees.get('lat', 'p3') as TreeState
    const reach = st.children.get(s)
    expect(reach).toBeDefined()
    const outside = loop.running().find((p) => p !== s && p !== parent && !(reach as IntervalSet).intersects(loop.core(p).ownedSet)) as PeerId
    expect(outside).toBeDefined()
    st.children.set(s, (reach as IntervalSet).union(loop.core(outside).ownedSet))
    st.routeOrder = null // as the table does on every change of the children
    for (const [what, start] of [['reduction', (c: TreecastCore) => c.reduce(loop.now, { op: 'sum', length: 1 })], ['broadcast', (c: TreecastCore) => c.broadcast(loop.now, new Uint8Array(1))]] as const) {
      const id = loop.input(s, start)
      if (what === 'reduction') {
        loop.runUntil(() => loop.outputs('reduced', s).length > 0, 10_000, 'reduced')
        expect([...(loop.outputs('reduced', s)[0]?.out as Extract<Output, { type: 'reduced' }>).value]).toEqual([23 * 24 / 2])
      } else {
        loop.runUntil(() => loop.outputs('broadcast-done', s).some((l) => (l.out as { id: string }).id === id), 10_000, 'broadcast')
        loop.run(200)
        expectExactlyOnce(loop, id, 23)
      }
      const back = loop.sent.filter((m) => m.from === parent && m.to === s && m.message.t === 'chunk' && m.message.open?.id === id)
      expect(back, `${what}: ${parent} sent ${s}'s own part back to it`).toEqual([])
    }
    loop.ok()
  })

  it('a tree root that does not answer the entries question: the long broadcast goes unstriped after stripeAskTimeoutMs; a forged answer is rejected', () => {
    const loop = rootsOnly()
    const p3 = loop.core('p3')
    const handle = p3.handle.bind(p3)
    p3.handle = (now, from, msg) => { if (msg.t !== 'entries-req') handle(now, from, msg) }
    const t0 = loop.now
    const id = loop.input('p1', (c) => c.broadcast(loop.now, new Uint8Array(1 << 20)))
    loop.input('p1', (c) => { c.handle(loop.now, 'p2', { t: 'entries-rep', id, entries: [] }) })
    expect(loop.core('p1').stats.rejected['unknown-entries']).toBe(1)
    loop.runUntil(() => loop.outputs('broadcast-done', 'p1').some((l) => (l.out as { id: string }).id === id), 10_000, 'broadcast')
    loop.run(200)
    expectExactlyOnce(loop, id, 23)
    const first = loop.sent.find((m) => m.message.t === 'chunk' && m.message.open?.id === id)
    expect(first?.at).toBeGreaterThanOrEqual(t0 + 100)
    loop.ok()
  })
})

describe('who probes after a join (003: affected peers only)', () => {
  const names = (root: boolean): PeerId => {
    for (let i = 10; ; i++) if (isTreeRoot(`p${i}`, STRIDE.treeRootStride) === root) return `p${i}`
  }

  for (const joinerRoots of [false, true]) {
    it(joinerRoots ? 'a joiner that roots trees: every member starts a burst, to join its trees' : 'a joiner that roots no trees: only the joiner starts a burst; the members\' trees are unchanged', () => {
      const loop = rootsOnly()
      loop.run(5_000)
      const members = loop.running()
      // Bursts (003's schedule: until a parent in every tree, then the extra probes) started per member.
      const bursts = new Map(members.map((p) => [p, 0]))
      for (const p of members) {
        const probing = (loop.core(p) as unknown as { probing: { trigger: (now: number) => void } }).probing
        const trigger = probing.trigger.bind(probing)
        probing.trigger = (now) => { bursts.set(p, (bursts.get(p) as number) + 1); trigger(now) }
      }
      const joiner = names(joinerRoots)
      loop.create(joiner)
      loop.input(joiner, (c) => c.join(loop.now, 'p2'))
      loop.runUntil(() => loop.core(joiner).state === 'running', 10_000, 'joined')
      loop.run(5_000)
      expect(loop.core(joiner).probesStarted).toBeGreaterThan(0)
      for (const p of members) {
        expect(bursts.get(p), joinerRoots ? `${p} probes for ${joiner}'s trees` : `${p} is not affected by ${joiner}'s join`).toBe(joinerRoots ? 1 : 0)
        expect(loop.core(p).trees.get('lat', joiner) !== undefined).toBe(joinerRoots)
      }
      expect(loop.stable()).toBe(true)
      loop.ok()
    })
  }
})
