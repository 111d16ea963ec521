/**
 * The tree table (trees/tree-table.ts): local state, and attaching through a check up the
 * candidate's path, driven through a hand-wired in-memory network of tables
 * (test/tree-net.ts). The parent rules are in test/tree-rules.test.ts; locks of gone
 * peers, concurrent changes, reach and departures in test/tree-changes.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { ROOT_EST_BYTES_PER_SEC } from '../trees/parent-rules.ts'
import { TREE_KINDS, treeKey } from '../trees/tree-kind.ts'
import type { ProbeTreeEntry } from '../overlay/messages.ts'
import { TreeNet, attractive } from './tree-net.ts'

describe('TreeTable: local state', () => {
  it('ensureRoot creates both trees; the own root has dist 0 and the root rate, others are parentless', () => {
    const net = new TreeNet(['r', 'a'])
    net.ensureRoot('r')
    net.t('a').ensureRoot('a')
    const r = net.t('r')
    expect(r.get('lat', 'r')?.metric).toBe(0)
    expect(r.get('bw', 'r')?.metric).toBe(ROOT_EST_BYTES_PER_SEC)
    const a = net.t('a')
    expect(a.get('lat', 'r')?.metric).toBe(Infinity)
    expect(a.get('bw', 'r')?.metric).toBe(0)
    expect(a.parentlessCount()).toBe(2) // own trees do not count
    expect(a.connectedCount).toBe(0)
    expect(a.reachOf('lat', 'r')?.equals(IntervalSet.range(10, 20))).toBe(true)
    const byRoot = new Map(a.probeEntries().map((e) => [e.root, e]))
    expect(byRoot.get('a')).toEqual({ root: 'a', dist: 0, est: ROOT_EST_BYTES_PER_SEC, latChildren: 0, bwChildren: 0 })
    expect(byRoot.get('r')).toEqual({ root: 'r', dist: -1, est: -1, latChildren: 0, bwChildren: 0 })
    expect(treeKey('lat', 'r')).toBe('lat:r')
  })

  it('judge skips its own root, dead roots, and not-connected candidates', () => {
    const net = new TreeNet(['r', 'a', 'b'])
    net.ensureRoot('r')
    net.ensureRoot('a')
    // b is not connected in r's trees: -1 entries are never taken.
    expect(net.judge('a', 'b', 1, 1e6)).toBe(0)
    // a's own tree is never joined.
    expect(net.t('a').judge(0, 'r', 1, 1e6, [attractive('a')])).toBe(0)
    // A dead root: its host drops its trees (the core does on the member change), and a
    // root without trees here is asked about (a root with trees is taken to be alive).
    net.alive.delete('r')
    net.t('a').removeRoot('r')
    expect(net.t('a').judge(0, 'r', 1, 1e6, [attractive('r')])).toBe(0)
    expect(net.t('a').get('lat', 'r')).toBeUndefined()
    expect(net.log).toEqual([])
  })
})

describe('TreeTable: attaching through a check', () => {
  it('judge starts a check to the candidate in every tree it prefers', () => {
    const net = new TreeNet(['r', 'a'])
    net.ensureRoot('r')
    expect(net.judge('a', 'r', 20, 5e5)).toBe(2)
    const checks = net.sentOps('check')
    expect(checks.map((c) => [c.from, c.to, c.op.kind])).toEqual([['a', 'r', 'lat'], ['a', 'r', 'bw']])
    for (const c of checks) expect(c.op).toMatchObject({ op: 'check', root: 'r', origin: 'a', dist: 0, path: [] })
    // Still parentless until the result comes back; a second judge while pending starts nothing.
    expect(net.parentOf('a', 'lat', 'r')).toBeNull()
    expect(net.judge('a', 'r', 1, 1e9)).toBe(0)
  })

  it('the check walks up to the root; the origin commits, adopts and detaches from the old parent', () => {
    const net = new TreeNet(['r', 'a', 'b', 'c', 'd'])
    // r <- a <- b, and c under r with a child d (so c's move needs the whole walk).
    net.build('r', [['a', 'r'], ['b', 'a'], ['c', 'r'], ['d', 'c']], 10)
    net.log.length = 0
    // c moves under b: RTT 3 < 10 and dist(b) = 5 < dist(c) = 10 (entries say so).
    const entries: ProbeTreeEntry[] = [{ root: 'r', dist: 5, est: 1e9, latChildren: 0, bwChildren: 0 }]
    expect(net.judge('c', 'b', 3, 1e9, entries)).toBe(2)
    const delivered = net.drain()
    const lat = delivered.filter((s) => s.op.kind === 'lat')
    // The walk: c -> b (check), b -> a, a -> r, r -> c (result), then unlocks, adopt, detach.
    expect(lat.map((s) => `${s.op.op}:${s.from}>${s.to}`)).toEqual([
      'check:c>b', 'check:b>a', 'check:a>r', 'result:r>c',
      'unlock:c>b', 'unlock:c>a', 'adopt:c>b', 'detach:c>r', 'metric:c>d',
      'reach:b>a', 'metric:b>c', 'reach:a>r'
    ])
    const result = lat.find((s) => s.op.op === 'result')?.op
    expect(result).toMatchObject({ ok: true, path: ['b', 'a'], dist: 20 })
    for (const kind of TREE_KINDS) {
      expect(net.parentOf('c', kind, 'r')).toBe('b')
      expect(net.t('b').get(kind, 'r')?.children.has('c')).toBe(true)
      expect(net.t('r').get(kind, 'r')?.children.has('c')).toBe(false)
      // Locks were released everywhere.
      for (const p of ['a', 'b']) expect(net.t(p).get(kind, 'r')?.locks.size).toBe(0)
    }
    // lat metric: the checked distance of b (20) plus the RTT to it.
    expect(net.t('c').get('lat', 'r')?.metric).toBe(23)
    expect(net.t('c').get('lat', 'r')?.parentRttMs).toBe(3)
    // Reach propagated up: r reaches c's nodes through a now.
    expect(net.t('r').get('lat', 'r')?.children.get('a')?.containsAll(IntervalSet.range(30, 40))).toBe(true)
    expect(net.t('r').reachOf('lat', 'r')?.equals(IntervalSet.range(0, 50))).toBe(true)
    expect(net.changes.filter((c) => c.peer === 'c' && c.root === 'r').map((c) => c.parent)).toEqual(['r', 'r', 'b', 'b'])
  })

  it('a leaf asks only its candidate (a short check): locked until the adoption, distance from the candidate', () => {
    const net = new TreeNet(['r', 'a', 'b', 'c'])
    net.build('r', [['a', 'r'], ['b', 'a'], ['c', 'r']], 10)
    net.log.length = 0
    const entries: ProbeTreeEntry[] = [{ root: 'r', dist: 5, est: 1e9, latChildren: 0, bwChildren: 0 }]
    expect(net.judge('c', 'b', 3, 1e9, entries)).toBe(2)
    expect(net.sentOps('check').every((s) => s.op.op === 'check' && s.op.short === true)).toBe(true)
    net.deliverAll('c>b')
    // b locked itself for c and answered at once: nothing went up to a or r.
    for (const kind of TREE_KINDS) expect(net.t('b').get(kind, 'r')?.locks.size).toBe(1)
    const delivered = net.drain().filter((s) => s.op.kind === 'lat')
    expect(delivered.map((s) => `${s.op.op}:${s.from}>${s.to}`)).toEqual([
      'result:b>c', 'unlock:c>b', 'adopt:c>b', 'detach:c>r', 'reach:b>a', 'metric:b>c', 'reach:a>r'
    ])
    expect(delivered[0]?.op).toMatchObject({ ok: true, path: ['b'], dist: 20 })
    for (const kind of TREE_KINDS) {
      expect(net.parentOf('c', kind, 'r')).toBe('b')
      expect(net.t('b').get(kind, 'r')?.locks.size).toBe(0)
    }
    expect(net.t('c').get('lat', 'r')?.metric).toBe(23)
  })

  it('a short check is aborted when a child committed under the leaf meanwhile (it may be the candidate\'s ancestor)', () => {
    const net = new TreeNet(['r', 'x', 'y', 'p'])
    net.build('r', [['x', 'r'], ['y', 'x'], ['p', 'r']], 10)
    // p (a leaf) asks y (x's child) to be its parent.
    expect(net.t('p').judge(0, 'y', 1, 1e12, [attractive('r')])).toBe(2)
    // x (with child y) moves under p: its full check walks p -> r and commits first.
    expect(net.t('x').judge(0, 'p', 1, 1e12, [attractive('r')])).toBe(2)
    net.deliverAll('x>p') // x's checks reach p first (p locks, forwards to r)
    net.deliverAll('p>r')
    net.deliverAll('r>x') // results: x commits, unlock + adopt go to p
    net.deliverAll('x>p') // p now has child x (and y below it)
    net.drain() // p's short check to y is answered now: committing would close p -> y -> x -> p
    for (const kind of TREE_KINDS) {
      expect(net.cycle(kind, 'r')).toBeUndefined()
      expect(net.parentOf('x', kind, 'r')).toBe('p')
      expect(net.parentOf('p', kind, 'r')).toBe('r')
    }
    expect(net.t('p').stats.attachesAborted).toBe(2)
  })

  it('a candidate lock that expired unanswered keeps the peer from short checks until the origin answers', () => {
    const net = new TreeNet(['r', 'a', 'b', 'c'], 100)
    net.build('r', [['a', 'r'], ['b', 'r'], ['c', 'r']], 10)
    // b asks a (short: b is a leaf); the answer and b's unlock are lost in transit.
    expect(net.t('b').judge(0, 'a', 1, 1e12, [attractive('r')])).toBe(2)
    net.deliverAll('b>a')
    for (const l of net.links.values()) l.length = 0
    // a's lock expires: b may still commit under a as far as a knows, so a is not a leaf.
    net.now = 150
    net.log.length = 0
    expect(net.t('a').judge(150, 'c', 1, 1e12, [attractive('r')])).toBe(2)
    const checks = net.sentOps('check', { from: 'a' })
    expect(checks.every((s) => s.op.op === 'check' && s.op.short !== true)).toBe(true)
    expect(net.t('a').get('lat', 'r')?.unanswered.size).toBe(1)
    net.drain()
    // b gives up its pending change on its next look at the tree and tells a.
    net.now = 300
    net.t('b').judge(300, 'c', 50, 1, [{ root: 'r', dist: 1e6, est: 0, latChildren: 0, bwChildren: 0 }])
    net.t('b').flush()
    net.drain()
    expect(net.t('a').get('lat', 'r')?.unanswered.size).toBe(0)
  })

  it('bandwidth: est = min(est(c), bw / (children + 1)) at commit, and only a strictly better one moves', () => {
    const net = new TreeNet(['r', 'a', 'b'])
    net.build('r', [['a', 'r']], 10, 1000)
    // a: est = min(1e15, 1000 / 1) = 1000.
    expect(net.t('a').get('bw', 'r')?.metric).toBe(1000)
    expect(net.t('a').get('bw', 'r')?.linkEst).toBe(1000)
    // b parentless: takes r with one child already: est = 3000 / 2.
    expect(net.t('b').judge(0, 'r', 10, 3000, net.t('r').probeEntries())).toBe(2)
    net.t('b').flush()
    net.drain()
    expect(net.t('b').get('bw', 'r')?.metric).toBe(1500)
    // b probes a (est 1000, 0 children): est(b,a) = min(1000, 5000/1) = 1000 < 1500: stays.
    // (lat: dist(a) = 10 is not < dist(b) = 10 either.)
    expect(net.t('b').judge(0, 'a', 1, 5000, net.t('a').probeEntries())).toBe(0)
    expect(net.log.filter((x) => x.op.op === 'check' && x.from === 'b' && x.to === 'a')).toEqual([])
    // A candidate whose estimate equals the current one exactly does not move; one just above does.
    expect(net.t('b').judge(0, 'a', 1, 1e9, [{ root: 'r', dist: 50, est: 1500, latChildren: 0, bwChildren: 0 }])).toBe(0)
    expect(net.t('b').judge(0, 'a', 1, 1e9, [{ root: 'r', dist: 50, est: 1501, latChildren: 0, bwChildren: 0 }])).toBe(1)
    net.drain()
    expect(net.parentOf('b', 'bw', 'r')).toBe('a')
    expect(net.parentOf('b', 'lat', 'r')).toBe('r')
    // a's real estimate (1000) then flows down: min(1000, b's link estimate 1e9).
    expect(net.t('b').get('bw', 'r')?.metric).toBe(1000)
    expect(net.t('b').get('bw', 'r')?.linkEst).toBe(1e9)
  })

  it('bandwidth: a parent keeps its children\'s estimates at min(est(parent), bw / n_children) as siblings come and go', () => {
    const net = new TreeNet(['r', 'a', 'b', 'c'])
    net.build('r', [['a', 'r']], 10, 1200)
    expect(net.t('a').get('bw', 'r')?.metric).toBe(1200)
    // b joins r with its own measured bandwidth; a's share of r's bandwidth halves.
    expect(net.t('b').judge(0, 'r', 10, 3000, net.t('r').probeEntries())).toBe(2)
    net.drain()
    expect(net.t('a').get('bw', 'r')?.metric).toBe(600)
    expect(net.t('b').get('bw', 'r')?.metric).toBe(1500)
    // c under a: capped by a's estimate.
    expect(net.t('c').judge(0, 'a', 10, 1e9, net.t('a').probeEntries())).toBe(2)
    net.drain()
    expect(net.t('c').get('bw', 'r')?.metric).toBe(600)
    // b leaves r: a's estimate recovers, and flows on down to c.
    net.alive.delete('b')
    net.t('r').peerGone('b')
    net.t('r').flush()
    net.drain()
    expect(net.t('a').get('bw', 'r')?.metric).toBe(1200)
    expect(net.t('c').get('bw', 'r')?.metric).toBe(1200)
  })

  it('a parentless peer never takes a candidate that is not connected', () => {
    const net = new TreeNet(['r', 'a', 'b'])
    net.ensureRoot('r')
    const entries = net.t('b').probeEntries()
    expect(entries.find((e) => e.root === 'r')).toMatchObject({ dist: -1, est: -1 })
    expect(net.judge('a', 'b', 1, 1e9, entries)).toBe(0)
    expect(net.log).toEqual([])
  })

  it('a candidate whose check failed is not tried again in that tree for a lock timeout', () => {
    const net = new TreeNet(['r', 'a', 'b', 'c'])
    net.build('r', [['a', 'r'], ['b', 'a'], ['c', 'b']], 10)
    expect(net.t('a').judge(0, 'c', 1, 1e12, [attractive('r')])).toBe(2)
    net.drain()
    expect(net.t('a').stats.checksRejected).toBe(2)
    // Probed again at once (a near peer asked over and over): no new doomed check.
    expect(net.t('a').judge(1, 'c', 1, 1e12, [attractive('r')])).toBe(0)
    // Another candidate is judged as usual; c again once a lock timeout has passed.
    expect(net.t('a').judge(2, 'b', 1, 1e12, [attractive('r')])).toBe(2)
    net.drain()
    expect(net.t('a').judge(10_000, 'c', 1, 1e12, [attractive('r')])).toBe(2)
  })

  it('a check that reaches its origin is rejected: no move under an own descendant', () => {
    const net = new TreeNet(['r', 'a', 'b', 'c'])
    net.build('r', [['a', 'r'], ['b', 'a'], ['c', 'b']], 10)
    net.log.length = 0
    // a would move under its grandchild c.
    expect(net.t('a').judge(0, 'c', 1, 1e12, [attractive('r')])).toBe(2)
    net.drain()
    for (const kind of TREE_KINDS) {
      expect(net.parentOf('a', kind, 'r')).toBe('r')
      expect(net.cycle(kind, 'r')).toBeUndefined()
      for (const p of ['b', 'c']) expect(net.t(p).get(kind, 'r')?.locks.size).toBe(0)
    }
    const results = net.sentOps('result')
    expect(results.length).toBe(2)
    for (const r of results) expect(r.op).toMatchObject({ ok: false, path: ['c', 'b'] })
    expect(results.every((r) => r.from === 'a' && r.to === 'a')).toBe(true)
    expect(net.t('a').stats.checksRejected).toBe(2)
    expect(net.sentOps('adopt')).toEqual([])
  })

  it('a check meeting a parentless or unknown node is rejected', () => {
    const net = new TreeNet(['r', 'a', 'b'])
    net.build('r', [['a', 'r']], 10)
    net.t('b').ensureRoot('r') // b knows r's trees but has no parent
    net.log.length = 0
    // a asks parentless b (lying entries make it attractive).
    expect(net.t('a').judge(0, 'b', 1, 1e12, [attractive('r')])).toBe(2)
    net.drain()
    expect(net.sentOps('result').every((s) => s.op.op === 'result' && !s.op.ok)).toBe(true)
    expect(net.parentOf('a', 'lat', 'r')).toBe('r')
  })

  it('a locked node refuses to change its parent while a check through it is pending', () => {
    const net = new TreeNet(['r', 'a', 'b', 'c'])
    net.build('r', [['a', 'r'], ['b', 'r'], ['c', 'r']], 10)
    net.log.length = 0
    // c checks a: the check locks a and waits at r (we hold r's links).
    expect(net.t('c').judge(0, 'a', 1, 1e12, [attractive('r')])).toBe(2)
    net.deliverAll('c>a')
    expect(net.t('a').get('lat', 'r')?.locks.size).toBe(1)
    expect(net.t('a').get('bw', 'r')?.locks.size).toBe(1)
    // a is locked: a better candidate starts nothing.
    expect(net.t('a').judge(0, 'b', 1, 1e12, [attractive('r')])).toBe(0)
    // Release: everything settles, c ends under a, then a may move again.
    net.drain()
    expect(net.parentOf('c', 'lat', 'r')).toBe('a')
    expect(net.t('a').get('lat', 'r')?.locks.size).toBe(0)
    expect(net.t('a').judge(0, 'b', 1, 1e12, [attractive('r')])).toBe(2)
    net.drain()
    expect(net.parentOf('a', 'lat', 'r')).toBe('b')
  })

  it('an attach whose origin got locked meanwhile is aborted at the result', () => {
    const net = new TreeNet(['r', 'a', 'b', 'c'])
    net.build('r', [['a', 'r'], ['b', 'r'], ['c', 'r']], 10)
    net.log.length = 0
    // a starts moving under b; before its result, c's check passes through a.
    expect(net.t('a').judge(0, 'b', 1, 1e12, [attractive('r')])).toBe(2)
    expect(net.t('c').judge(0, 'a', 1, 1e12, [attractive('r')])).toBe(2)
    net.deliverAll('c>a') // a is locked now (both kinds)
    net.drain()
    // a gave up (locked at its result); c went under a, which is still under r.
    expect(net.t('a').stats.attachesAborted).toBe(2)
    for (const kind of TREE_KINDS) {
      expect(net.parentOf('a', kind, 'r')).toBe('r')
      expect(net.parentOf('c', kind, 'r')).toBe('a')
    }
  })

  it('locks expire after lockTimeoutMs when the unlock is lost; a late result is aborted', () => {
    const net = new TreeNet(['r', 'a', 'b'], 100)
    net.build('r', [['a', 'r'], ['b', 'r']], 10)
    expect(net.t('b').judge(0, 'a', 1, 1e12, [attractive('r')])).toBe(2)
    net.deliverOne('b>a') // the lat check only
    expect(net.t('a').get('lat', 'r')?.locks.size).toBe(1)
    expect(net.t('a').get('bw', 'r')?.locks.size).toBe(0)
    net.now = 60 // past lockTimeout / 2: the result is too late to be trusted
    net.drain()
    expect(net.parentOf('b', 'lat', 'r')).toBe('r')
    expect(net.t('b').stats.attachesAborted).toBe(2)
    // Lost unlock: lock a again and drop everything in flight; at t >= 60 + 100 it is gone.
    expect(net.t('b').judge(60, 'a', 1, 1e12, [attractive('r')])).toBe(2)
    net.deliverAll('b>a')
    for (const l of net.links.values()) l.length = 0
    expect(net.t('a').judge(100, 'b', 1, 1e12, [attractive('r')])).toBe(0)
    expect(net.t('a').judge(200, 'b', 1, 1e12, [attractive('r')])).toBe(2)
  })
})
