/**
 * The tree table (trees/tree-table.ts) under change: locks of a peer that is gone,
 * concurrent parent changes that must never make a cycle, reach, metrics and departures
 * (hand-wired network: test/tree-net.ts).
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { detourRoots, isDetour } from '../trees/detours.ts'
import { TREE_KINDS } from '../trees/tree-kind.ts'
import { TreeNet, attractive } from './tree-net.ts'

/** After the lock timeout (a probe of r judged at 1000 ms expires locks, and moves nothing), `peer` holds no lock and waits for no answer in r's trees. */
function expectFree (net: TreeNet, peer: string): void {
  net.now = 1000
  expect(net.judge(peer, 'r', 1, 1e6)).toBe(0)
  for (const kind of TREE_KINDS) {
    const st = net.t(peer).get(kind, 'r')
    expect(st?.locks.size).toBe(0)
    expect(st?.unanswered.size).toBe(0)
  }
}

describe('TreeTable: locks of a peer that is gone', () => {
  it('are dropped at once, so the tree can change again without waiting for the lock timeout', () => {
    const net = new TreeNet(['r', 'a', 'b', 'c'], 4000)
    net.build('r', [['a', 'r'], ['b', 'r'], ['c', 'r']], 10)
    expect(net.t('b').judge(0, 'a', 1, 1e12, [attractive('r')])).toBe(2)
    net.deliverAll('b>a') // both checks lock a; b then leaves before any result or unlock
    for (const l of net.links.values()) l.length = 0
    expect(net.t('a').get('lat', 'r')?.locks.size).toBe(1)
    expect(net.t('a').judge(10, 'c', 1, 1e12, [attractive('r')])).toBe(0) // a is locked
    net.alive.delete('b')
    net.t('a').peerGone('b')
    expect(net.t('a').get('lat', 'r')?.locks.size).toBe(0)
    expect(net.t('a').get('bw', 'r')?.locks.size).toBe(0)
    expect(net.t('a').judge(20, 'c', 1, 1e12, [attractive('r')])).toBe(2)
  })

  it('of a change pending in a tree this peer drops are released: the candidate is told (unlock)', () => {
    // x asks c (a full check, through c up to r); x then hears that r died (the old
    // incarnation of a root that came back, say) and drops r's trees; r's answer never
    // reaches it (the core drops a dead member's messages).
    const net = new TreeNet(['r', 'c', 'x'], 100)
    net.build('r', [['c', 'r'], ['x', 'r']], 10)
    net.fullChecks.add('x')
    expect(net.judge('x', 'c', 1, 1e12, [attractive('r')])).toBe(2)
    net.deliverAll('x>c')
    net.deliverAll('c>r')
    net.t('x').removeRoot('r')
    net.links.set('r>x', [])
    net.drain()
    // c took x's check as its candidate; after the lock timeout it holds nothing for x: still a leaf.
    expectFree(net, 'c')
  })

  it('of a change pending towards a peer heard of as dead are released: it may be a newer incarnation, which took the check', () => {
    const net = new TreeNet(['r', 'c', 'x'], 100)
    net.build('r', [['c', 'r'], ['x', 'r']], 10)
    expect(net.judge('x', 'c', 1, 1e12, [attractive('r')])).toBe(2)
    net.deliverAll('x>c')
    // x hears that c's old incarnation died (the c its check reached is the new one), then gets c's answer.
    net.alive.delete('c')
    net.t('x').peerGone('c', 'dead')
    net.deliverAll('c>x')
    net.alive.add('c')
    net.drain()
    expectFree(net, 'c')
  })

  it('are not taken when its check arrives after it is known gone (it would never answer: no leaf again)', () => {
    const net = new TreeNet(['r', 'a', 'x'], 100)
    net.build('r', [['a', 'r'], ['x', 'r']], 10)
    // x (a leaf) asks a alone, then leaves; a hears of the leave (from another peer) before the check.
    expect(net.judge('x', 'a', 1, 1e12, [attractive('r')])).toBe(2)
    net.t('x').leaveAll()
    net.alive.delete('x')
    net.t('a').peerGone('x', 'left')
    net.deliverAll('x>a')
    // a holds nothing for x, then or after the lock timeout: still a leaf.
    expectFree(net, 'a')
  })
})

describe('TreeTable: concurrent parent changes never make a cycle', () => {
  it('two peers moving under each other at the same time: at most one moves', () => {
    for (const order of [['a', 'b'], ['b', 'a']] as const) {
      const net = new TreeNet(['r', 'a', 'b'])
      net.build('r', [['a', 'r'], ['b', 'r']], 10)
      expect(net.t('a').judge(0, 'b', 1, 1e12, [attractive('r')])).toBe(2)
      expect(net.t('b').judge(0, 'a', 1, 1e12, [attractive('r')])).toBe(2)
      // Both checks pass each other before either result comes back.
      net.deliverAll(`${order[0]}>${order[1]}`)
      net.deliverAll(`${order[1]}>${order[0]}`)
      net.drain()
      for (const kind of TREE_KINDS) {
        expect(net.cycle(kind, 'r')).toBeUndefined()
        expect(net.parentOf('a', kind, 'r')).toBe('r')
        expect(net.parentOf('b', kind, 'r')).toBe('r')
      }
    }
  })

  it('each moving under the other\'s descendant, in one interleaving where one of them succeeds', () => {
    const net = new TreeNet(['r', 'a', 'b', 'a1', 'b1'])
    net.build('r', [['a', 'r'], ['b', 'r'], ['a1', 'a'], ['b1', 'b']], 10)
    expect(net.t('a').judge(0, 'b1', 1, 1e12, [attractive('r')])).toBe(2)
    // a's attach completes fully before b even probes.
    net.drain()
    expect(net.parentOf('a', 'lat', 'r')).toBe('b1')
    expect(net.t('b').judge(0, 'a1', 1, 1e12, [attractive('r')])).toBe(2)
    net.drain()
    for (const kind of TREE_KINDS) {
      expect(net.parentOf('b', kind, 'r')).toBe('r')
      expect(net.cycle(kind, 'r')).toBeUndefined()
    }
    expect(net.t('b').stats.checksRejected).toBe(2)
  })

  it.each([
    { timed: false, minCommits: 300 },
    // Time advances 0-4 ms per delivery with 40 ms locks: late results abort, locks expire.
    { timed: true, minCommits: 150 }
  ])('property: over random trees, concurrent moves and link interleavings, parent pointers stay acyclic (timed: $timed)', ({ timed, minCommits }) => {
    const PEERS = ['r', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6']
    const arbTree = fc.tuple(...PEERS.slice(1).map((_, i) => fc.nat(i))) // parent index of peer i+1 among 0..i
    const arbMoves = fc.array(fc.record({ who: fc.integer({ min: 1, max: 6 }), cand: fc.integer({ min: 0, max: 6 }), at: fc.nat(40) }), { minLength: 2, maxLength: 6 })
    const arbSchedule = fc.array(fc.nat(1000), { minLength: 0, maxLength: 200 })
    let committedMoves = 0
    fc.assert(fc.property(arbTree, arbMoves, arbSchedule, (tree, moves, schedule) => {
      const net = new TreeNet(PEERS, timed ? 40 : 1e9)
      net.build('r', tree.map((parent, i): [PeerId, PeerId] => [PEERS[i + 1] as PeerId, PEERS[parent] as PeerId]), 10)
      const before = net.changes.length
      const todo = [...moves].sort((x, y) => x.at - y.at)
      let step = 0
      const check = (): void => {
        for (const kind of TREE_KINDS) {
          const c = net.cycle(kind, 'r')
          if (c !== undefined) throw new Error(`cycle in ${kind} tree after step ${step}: ${c.join(' -> ')}`)
        }
      }
      for (;;) {
        while (todo.length > 0 && (todo[0]?.at ?? 0) <= step) {
          const m = todo.shift() as { who: number, cand: number }
          if (m.who === m.cand) continue
          net.judge(PEERS[m.who] as PeerId, PEERS[m.cand] as PeerId, 1, 1e12, [attractive('r')])
        }
        const busy = net.busyLinks()
        if (busy.length === 0) {
          if (todo.length === 0) break
          step = todo[0]?.at ?? step
          continue
        }
        const pick = schedule[step % Math.max(1, schedule.length)] ?? 0
        net.deliverOne(busy[pick % busy.length] as string)
        if (timed) net.now += pick % 5
        step++
        check()
        if (step > 5000) throw new Error('did not settle')
      }
      check()
      // Settled: every parent knows its child, every child its parent, no lock is left.
      for (const kind of TREE_KINDS) {
        for (const p of PEERS) {
          const st = net.t(p).get(kind, 'r')
          expect(st?.locks.size).toBe(0)
          expect(st?.pending).toBeNull()
          if (p !== 'r') expect(st?.parent).not.toBeNull()
          for (const child of st?.children.keys() ?? []) expect(net.parentOf(child, kind, 'r')).toBe(p)
          const parent = st?.parent
          if (parent != null) expect(net.t(parent).get(kind, 'r')?.children.has(p)).toBe(true)
        }
      }
      committedMoves += net.changes.length - before
    }), { numRuns: 300 })
    // The property is not vacuous: many moves did commit.
    expect(committedMoves).toBeGreaterThan(minCommits)
  })
})

describe('TreeTable: reach, metrics, departures', () => {
  it('reach sets propagate to the parent after flush(), through every level', () => {
    const net = new TreeNet(['r', 'a', 'b'])
    net.build('r', [['a', 'r'], ['b', 'a']], 10)
    expect(net.t('r').reachOf('lat', 'r')?.equals(IntervalSet.range(0, 30))).toBe(true)
    // b gains nodes: nothing is sent until flush.
    net.owned.set('b', IntervalSet.fromRanges([[20, 30], [100, 105]]))
    net.log.length = 0
    net.t('b').ownedChanged()
    expect(net.log).toEqual([])
    net.t('b').flush()
    expect(net.log.map((s) => `${s.op.op}:${s.op.kind}:${s.from}>${s.to}`)).toEqual(['reach:lat:b>a', 'reach:bw:b>a'])
    net.drain()
    for (const kind of TREE_KINDS) {
      expect(net.t('a').get(kind, 'r')?.children.get('b')?.has(104)).toBe(true)
      expect(net.t('r').get(kind, 'r')?.children.get('a')?.has(104)).toBe(true)
      expect(net.t('r').reachOf(kind, 'r')?.has(104)).toBe(true)
    }
    // An unchanged reach is not sent again.
    net.log.length = 0
    net.t('b').ownedChanged()
    net.t('b').flush()
    expect(net.log).toEqual([])
  })

  it('metrics flow down: a child\'s distance is its parent\'s plus the RTT', () => {
    const net = new TreeNet(['r', 'a', 'b'])
    net.build('r', [['a', 'r'], ['b', 'a']], 10)
    expect(net.t('a').get('lat', 'r')?.metric).toBe(10)
    expect(net.t('b').get('lat', 'r')?.metric).toBe(20)
    // a re-probes r with a faster RTT: its distance drops, b learns it after a's flush.
    expect(net.judge('a', 'r', 4, 1e6)).toBe(0)
    expect(net.t('a').get('lat', 'r')?.metric).toBe(4)
    net.drain()
    expect(net.t('b').get('lat', 'r')?.metric).toBe(14)
    // bw: the rate from the root is capped by every link on the way.
    expect(net.t('b').get('bw', 'r')?.metric).toBeLessThanOrEqual(net.t('a').get('bw', 'r')?.metric ?? 0)
  })

  it('detours: reported after a new parent or a grown distance, with the tree already updated', () => {
    const net = new TreeNet(['r', 'a', 'b'])
    net.build('r', [['a', 'r'], ['b', 'a']], 10)
    // a's parent is the root: nothing reported for a; b's parent a is 10 ms away and 10 ms from r.
    expect(net.parentDists.map((d) => [d.peer, d.root, d.rttMs, d.distMs, d.detourNow])).toEqual([['b', 'r', 10, 10, true]])
    expect(detourRoots(net.t('b'), 5, 8)).toEqual(['r'])
    expect(isDetour(net.t('b'), 'r', 11)).toBe(false)
    expect(isDetour(net.t('a'), 'r', 5)).toBe(false)
    // a's RTT to r grows (re-measured): b hears a larger distance and reports it.
    net.parentDists.length = 0
    net.judge('a', 'r', 30, 1e6)
    net.drain()
    expect(net.t('b').get('lat', 'r')?.metric).toBe(40)
    expect(net.parentDists.map((d) => [d.peer, d.distMs, d.detourNow])).toEqual([['b', 30, true]])
    // A distance that shrinks is not reported.
    net.parentDists.length = 0
    net.judge('a', 'r', 4, 1e6)
    net.drain()
    expect(net.parentDists).toEqual([])
  })

  it('peerGone orphans the trees the peer parented and drops it as a child', () => {
    const net = new TreeNet(['r', 'a', 'b', 'c'])
    net.build('r', [['a', 'r'], ['b', 'a'], ['c', 'a']], 10)
    expect(net.t('b').connectedCount).toBe(2)
    net.changes.length = 0
    net.alive.delete('a')
    expect(net.t('b').peerGone('a')).toBe(true)
    for (const kind of TREE_KINDS) {
      const st = net.t('b').get(kind, 'r')
      expect(st?.parent).toBeNull()
      expect(st?.metric).toBe(kind === 'lat' ? Infinity : 0)
      expect(st?.parentRttMs).toBe(Infinity)
    }
    expect(net.t('b').connectedCount).toBe(0)
    expect(net.t('b').parentlessCount()).toBe(2)
    expect(net.changes.filter((c) => c.peer === 'b').map((c) => c.parent)).toEqual([null, null])
    // r drops a as a child, and a's reach with it.
    expect(net.t('r').peerGone('a')).toBe(false)
    expect(net.t('r').get('lat', 'r')?.children.size).toBe(0)
    expect(net.t('r').reachOf('lat', 'r')?.equals(IntervalSet.range(0, 10))).toBe(true)
    // An orphan reports itself not connected in probes.
    expect(net.t('b').probeEntries().find((e) => e.root === 'r')).toMatchObject({ dist: -1, est: -1 })
  })

  it('peerGone cancels an attach pending towards the gone peer', () => {
    const net = new TreeNet(['r', 'a', 'b'])
    net.build('r', [['a', 'r'], ['b', 'r']], 10)
    expect(net.t('b').judge(0, 'a', 1, 1e12, [attractive('r')])).toBe(2)
    expect(net.t('b').get('lat', 'r')?.pending).not.toBeNull()
    net.alive.delete('a')
    net.t('b').peerGone('a')
    expect(net.t('b').get('lat', 'r')?.pending).toBeNull()
    expect(net.parentOf('b', 'lat', 'r')).toBe('r')
  })

  it("a peer whose parent is gone answers no to the checks it forwarded there, so their paths unlock at once", () => {
    // r <- x <- a <- b, and c (with a child d, so its checks walk to the root) asks b.
    const net = new TreeNet(['r', 'x', 'a', 'b', 'c', 'd'], 4000)
    net.build('r', [['x', 'r'], ['a', 'x'], ['b', 'a'], ['c', 'r'], ['d', 'c']], 10)
    expect(net.t('c').judge(0, 'b', 1, 1e12, [attractive('r')])).toBe(2)
    net.deliverAll('c>b') // b locks (candidate), forwards to a
    net.deliverAll('b>a') // a locks, forwards to x
    // x goes before it sees the checks: they are lost with it.
    net.alive.delete('x')
    net.links.set('a>x', [])
    net.t('a').peerGone('x')
    net.drain()
    // Long before the 4 s lock timeout: c gave up, and every lock on the path is gone.
    expect(net.now).toBe(0)
    for (const kind of TREE_KINDS) {
      expect(net.t('c').get(kind, 'r')?.pending).toBeNull()
      expect(net.parentOf('c', kind, 'r')).toBe('r')
      expect(net.t('b').get(kind, 'r')?.locks.size).toBe(0)
      expect(net.t('a').get(kind, 'r')?.locks.size).toBe(0)
      expect(net.parentOf('a', kind, 'r')).toBeNull()
    }
    // a may move again at once: it takes r directly.
    expect(net.judge('a', 'r', 1, 1e12)).toBe(2)
    net.drain()
    for (const kind of TREE_KINDS) expect(net.parentOf('a', kind, 'r')).toBe('r')
  })

  it('a no from a peer whose parent went, after a yes from above: the origin commits under locks still held, and ignores the no', () => {
    const net = new TreeNet(['r', 'x', 'a', 'b', 'c', 'd'], 4000)
    net.build('r', [['x', 'r'], ['a', 'x'], ['b', 'a'], ['c', 'r'], ['d', 'c']], 10)
    expect(net.t('c').judge(0, 'b', 1, 1e12, [attractive('r')])).toBe(2)
    net.deliverAll('c>b')
    net.deliverAll('b>a')
    net.deliverAll('a>x') // x locks and forwards to r, which answers yes to c
    net.deliverAll('x>r')
    // Now x goes, and a answers no; the yes is ahead of it.
    net.alive.delete('x')
    net.t('a').peerGone('x')
    expect(net.t('a').get('lat', 'r')?.locks.size).toBe(1) // held until c's unlock
    net.deliverAll('r>c') // the yes: c commits under b
    for (const kind of TREE_KINDS) expect(net.parentOf('c', kind, 'r')).toBe('b')
    net.drain() // the no is ignored; the unlocks arrive
    for (const kind of TREE_KINDS) {
      expect(net.parentOf('c', kind, 'r')).toBe('b')
      expect(net.cycle(kind, 'r')).toBeUndefined()
      expect(net.t('a').get(kind, 'r')?.locks.size).toBe(0)
      expect(net.t('b').get(kind, 'r')?.locks.size).toBe(0)
    }
  })

  it('a detach from a former child never clears the parent it has since become (regression)', () => {
    // p5 moved under its former child p6 after p6 moved to r; p6's detach, meant for its
    // old parent p5, must not orphan p5. Found by the concurrent-moves property.
    const net = new TreeNet(['r', 'p5', 'p6'])
    net.build('r', [['p5', 'r'], ['p6', 'p5']], 10)
    const p5 = net.t('p5')
    p5.handleOp(0, 'p6', { op: 'detach', kind: 'lat', root: 'r' })
    expect(p5.get('lat', 'r')?.children.has('p6')).toBe(false)
    expect(p5.get('lat', 'r')?.parent).toBe('r')
    const st = p5.get('lat', 'r')
    if (st !== undefined) st.parent = 'p6'
    p5.handleOp(0, 'p6', { op: 'detach', kind: 'lat', root: 'r' })
    expect(p5.get('lat', 'r')?.parent).toBe('p6')
    p5.handleOp(0, 'p6', { op: 'disown', kind: 'lat', root: 'r' })
    expect(p5.get('lat', 'r')?.parent).toBeNull()
  })

  it('removeRoot drops both trees of that root and keeps the connected count right', () => {
    const net = new TreeNet(['r', 's', 'a'])
    net.build('r', [['a', 'r']], 10)
    net.build('s', [['a', 's']], 10)
    const a = net.t('a')
    expect(a.connectedCount).toBe(4)
    a.removeRoot('r')
    expect(a.get('lat', 'r')).toBeUndefined()
    expect(a.get('bw', 'r')).toBeUndefined()
    expect(a.connectedCount).toBe(2)
    expect(a.probeEntries().map((e) => e.root)).not.toContain('r')
    expect([...a.all()].every((st) => st.root !== 'r')).toBe(true)
    a.removeRoot('r') // idempotent
    expect(a.connectedCount).toBe(2)
    // An adopt for a removed tree is answered with a disown.
    net.log.length = 0
    a.handleOp(0, 'p', { op: 'adopt', kind: 'lat', root: 'r', reach: IntervalSet.of(1), bw: 1e6 })
    expect(net.sentOps('disown')).toMatchObject([{ from: 'a', to: 'p', op: { op: 'disown', kind: 'lat', root: 'r' } }])
  })

  it('a root that dies and comes back: the remade tree is no leaf until its former children answered (swarm seed 14)', () => {
    // r's trees: r <- y <- x. y drops r's trees (it learns r's old incarnation died) while
    // x, which already saw r come back, still has y as its parent. Without the tombstone y
    // remade r's tree empty, took x as parent with a short check, and closed y -> x -> y.
    const net = new TreeNet(['r', 'y', 'x'])
    net.build('r', [['y', 'r'], ['x', 'y']], 10)
    const y = net.t('y')
    y.removeRoot('r')
    y.ensureRoot('r')
    expect(net.t('x').get('lat', 'r')?.parent).toBe('y')
    expect(y.get('lat', 'r')?.unanswered.size).toBe(1)
    net.log.length = 0
    expect(y.judge(0, 'x', 1, 1e12, [attractive('r')])).toBe(2)
    // Not a leaf: the full check walks x -> y and is refused.
    expect(net.sentOps('check', { from: 'y' }).every((c) => c.op.op === 'check' && c.op.short !== true)).toBe(true)
    net.drain()
    for (const kind of TREE_KINDS) {
      expect(net.cycle(kind, 'r')).toBeUndefined()
      // x got the disown and answered with a detach, which cleared the tombstone's entry.
      expect(net.parentOf('x', kind, 'r')).toBeNull()
      expect(y.get(kind, 'r')?.unanswered.size).toBe(0)
    }
  })

  it('a leaving peer detaches from every parent at once and makes no more parent changes (swarm seed 90)', () => {
    // Peers drop a leaver as a child as soon as they learn it left; had it kept pointing at
    // its parent, that parent would look like a leaf and could short-check into the
    // leaver's own subtree.
    const net = new TreeNet(['r', 'p', 'l', 'c'])
    net.build('r', [['p', 'r'], ['l', 'p'], ['c', 'l']], 10)
    net.log.length = 0
    net.t('l').leaveAll()
    for (const kind of TREE_KINDS) expect(net.parentOf('l', kind, 'r')).toBeNull()
    expect(net.sentOps('detach').map((s) => `${s.from}>${s.to}`)).toEqual(['l>p', 'l>p'])
    net.drain()
    for (const kind of TREE_KINDS) expect(net.t('p').get(kind, 'r')?.children.has('l')).toBe(false)
    // Frozen: probes start nothing, and a result that comes back is not committed.
    expect(net.t('l').judge(0, 'r', 1, 1e12, [attractive('r')])).toBe(0)
    expect(net.t('l').connectedCount).toBe(0)
  })

  it('a tombstone is forgotten once every former child answered, and when the root never comes back', () => {
    const net = new TreeNet(['r', 'y', 'x'])
    net.build('r', [['y', 'r'], ['x', 'y']], 10)
    net.t('y').removeRoot('r')
    net.drain() // disown -> x, detach -> y
    net.t('y').ensureRoot('r')
    for (const kind of TREE_KINDS) expect(net.t('y').get(kind, 'r')?.unanswered.size).toBe(0)
    // A child that dies instead of answering also clears it.
    const net2 = new TreeNet(['r', 'y', 'x'])
    net2.build('r', [['y', 'r'], ['x', 'y']], 10)
    net2.t('y').removeRoot('r')
    net2.alive.delete('x')
    net2.t('y').peerGone('x')
    net2.t('y').ensureRoot('r')
    for (const kind of TREE_KINDS) expect(net2.t('y').get(kind, 'r')?.unanswered.size).toBe(0)
    // Without either, the remade tree would start with the former child unanswered.
    const net3 = new TreeNet(['r', 'y', 'x'])
    net3.build('r', [['y', 'r'], ['x', 'y']], 10)
    net3.t('y').removeRoot('r')
    net3.t('y').ensureRoot('r')
    for (const kind of TREE_KINDS) expect(net3.t('y').get(kind, 'r')?.unanswered.size).toBe(1)
  })

  it('ops from strangers change nothing here: reach from a non-child (answered with a disown, test/tree-restarts), metric from a non-parent', () => {
    const net = new TreeNet(['r', 'a', 'b'])
    net.build('r', [['a', 'r']], 10)
    const before = net.t('r').reachOf('lat', 'r')
    net.t('r').handleOp(0, 'b', { op: 'reach', kind: 'lat', root: 'r', reach: IntervalSet.range(500, 600) })
    expect(net.t('r').reachOf('lat', 'r')).toBe(before)
    net.t('a').handleOp(0, 'b', { op: 'metric', kind: 'lat', root: 'r', value: 0 })
    expect(net.t('a').get('lat', 'r')?.metric).toBe(10)
    net.t('a').handleOp(0, 'b', { op: 'unlock', kind: 'lat', root: 'zz', id: 1, origin: 'b' })
    net.t('a').handleOp(0, 'b', { op: 'detach', kind: 'lat', root: 'zz' })
    expect(net.parentOf('a', 'lat', 'r')).toBe('r')
  })
})
