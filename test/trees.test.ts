/**
 * The adaptive trees: 003's parent rules (trees/parent-rules.ts), the probing schedule
 * (trees/probe-schedule.ts) and the tree table with its cycle-free parent changes
 * (trees/tree-table.ts), driven through a hand-wired in-memory network of tables.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { bandwidthEstimate, bandwidthPrefers, latencyPrefers, ROOT_EST_BYTES_PER_SEC } from '../trees/parent-rules.ts'
import { ProbeSchedule } from '../trees/probe-schedule.ts'
import { TreeTable, type TreeHost } from '../trees/tree-table.ts'
import { detourRoots, isDetour } from '../trees/detours.ts'
import { TREE_KINDS, treeKey, type TreeKind } from '../trees/tree-kind.ts'
import type { ProbeTreeEntry, TreeOp } from '../overlay/messages.ts'

// ---- parent rules -------------------------------------------------------------------------

describe('latency rule (003 §IV-B)', () => {
  it('moves only when RTT(p,c) < RTT(p,parent) AND dist(c) < dist(p)', () => {
    // parent RTT 10, own dist 30
    expect(latencyPrefers(true, 10, 30, 5, 20)).toBe(true)
    expect(latencyPrefers(true, 10, 30, 10, 20)).toBe(false) // RTT equal
    expect(latencyPrefers(true, 10, 30, 11, 20)).toBe(false) // RTT worse
    expect(latencyPrefers(true, 10, 30, 5, 30)).toBe(false) // dist equal
    expect(latencyPrefers(true, 10, 30, 5, 31)).toBe(false) // dist worse
    expect(latencyPrefers(true, 10, 30, 50, 0)).toBe(false) // the root itself, but far away
  })

  it('the tie tolerance is off by default (003 exactly); on, an equal RTT may shorten the distance clearly', () => {
    // Equal RTT, much shorter path: 003 says no.
    expect(latencyPrefers(true, 10, 100, 10, 20)).toBe(false)
    expect(latencyPrefers(true, 10, 100, 10, 20, 0)).toBe(false)
    // With 5%: RTT within 5% and dist(c) + RTT(p,c) < 95% of dist(p).
    expect(latencyPrefers(true, 10, 100, 10.4, 20, 0.05)).toBe(true)
    expect(latencyPrefers(true, 10, 100, 10.6, 20, 0.05)).toBe(false)
    expect(latencyPrefers(true, 10, 100, 10, 85, 0.05)).toBe(false) // 95 is not < 95
    expect(latencyPrefers(true, 10, 100, 10, -1, 0.05)).toBe(false)
  })

  it('with the tie tolerance, a cluster regroups: a candidate at a quarter of the parent RTT, no farther from the root, takes p', () => {
    // p hangs directly off the root's cluster (6 ms RTT, dist 6.15); a near peer (0.3 ms)
    // with the same distance: 003 says no (dist equal); regrouping says yes (one wide-area
    // edge per cluster instead of one per peer).
    expect(latencyPrefers(true, 6, 6.15, 0.3, 6.15)).toBe(false)
    expect(latencyPrefers(true, 6, 6.15, 0.3, 6.15, 0.05)).toBe(true)
    // Farther from the root than the tolerance: no.
    expect(latencyPrefers(true, 6, 6.15, 0.3, 6.5, 0.05)).toBe(false)
    // Not near enough (more than a quarter of the parent's RTT): no.
    expect(latencyPrefers(true, 6, 6.15, 1.6, 6.15, 0.05)).toBe(false)
    // The way back: a far candidate never beats a near parent this way.
    expect(latencyPrefers(true, 0.3, 6.45, 6, 0.15, 0.05)).toBe(false)
  })

  it('a parentless peer takes any connected candidate, never a not-connected one (-1)', () => {
    expect(latencyPrefers(false, Infinity, Infinity, 1000, 999)).toBe(true)
    expect(latencyPrefers(false, Infinity, Infinity, 1, 0)).toBe(true)
    expect(latencyPrefers(false, Infinity, Infinity, 1, -1)).toBe(false)
    expect(latencyPrefers(true, 10, 30, 1, -1)).toBe(false)
  })
})

describe('bandwidth rule (003 §IV-C)', () => {
  it('est(p,c) = min(est(c), bw / (n_children(c) + 1)) for a new child', () => {
    expect(bandwidthEstimate(1000, 600, 2, false)).toBe(200)
    expect(bandwidthEstimate(100, 600, 2, false)).toBe(100)
    expect(bandwidthEstimate(ROOT_EST_BYTES_PER_SEC, 600, 0, false)).toBe(600)
  })

  it('n_children already counts p when p is a child of c', () => {
    expect(bandwidthEstimate(1000, 600, 2, true)).toBe(300)
    expect(bandwidthEstimate(1000, 600, 0, true)).toBe(600)
  })

  it('a not-connected candidate (-1) has estimate -1 and is never preferred', () => {
    expect(bandwidthEstimate(-1, 600, 0, false)).toBe(-1)
    expect(bandwidthPrefers(false, 0, -1)).toBe(false)
    expect(bandwidthPrefers(true, 10, -1)).toBe(false)
  })

  it('the tie tolerance is off by default; on, a near-equal estimate moves to a much closer candidate', () => {
    expect(bandwidthPrefers(true, 100, 100, 10, 1)).toBe(false)
    expect(bandwidthPrefers(true, 100, 100, 10, 1, 0)).toBe(false)
    expect(bandwidthPrefers(true, 100, 96, 10, 4.9, 0.05)).toBe(true)
    expect(bandwidthPrefers(true, 100, 96, 10, 5, 0.05)).toBe(false) // not under half the RTT
    expect(bandwidthPrefers(true, 100, 94, 10, 1, 0.05)).toBe(false) // estimate too low
    expect(bandwidthPrefers(true, 100, -1, 10, 1, 0.05)).toBe(false)
  })

  it('with the tie tolerance, a better estimate must beat the current one by more than the tolerance', () => {
    // A 4% better estimate from a candidate no closer: a tie, no move (each move costs a check).
    expect(bandwidthPrefers(true, 100, 104, 10, 10, 0.05)).toBe(false)
    expect(bandwidthPrefers(true, 100, 105, 10, 10, 0.05)).toBe(false)
    expect(bandwidthPrefers(true, 100, 105.1, 10, 10, 0.05)).toBe(true)
    // The same 4% from a much closer candidate: the tie-break moves it.
    expect(bandwidthPrefers(true, 100, 104, 10, 1, 0.05)).toBe(true)
    // Without the tolerance, 003's rule: any greater estimate.
    expect(bandwidthPrefers(true, 100, 100.1, 10, 10, 0)).toBe(true)
  })

  it('moves only to a strictly greater estimate; parentless takes any connected candidate', () => {
    expect(bandwidthPrefers(true, 100, 101)).toBe(true)
    expect(bandwidthPrefers(true, 100, 100)).toBe(false)
    expect(bandwidthPrefers(true, 100, 99)).toBe(false)
    expect(bandwidthPrefers(false, 0, 0)).toBe(true)
    expect(bandwidthPrefers(false, 0, 1)).toBe(true)
  })
})

// ---- probe schedule -----------------------------------------------------------------------

describe('ProbeSchedule', () => {
  /** Runs `next` with a script of parentless counts; returns the decisions. */
  const run = (s: ProbeSchedule, parentless: number[]): string[] => parentless.map((n) => s.next(n))

  it('is idle until triggered', () => {
    const s = new ProbeSchedule(3)
    expect(s.isActive).toBe(false)
    expect(s.next(5)).toBe('idle')
    expect(s.started).toBe(0)
  })

  it('probes while trees are parentless, then exactly extraCount more, then idles', () => {
    const s = new ProbeSchedule(3)
    s.trigger()
    expect(run(s, [4, 2, 1])).toEqual(['probe', 'probe', 'probe'])
    expect(run(s, [0, 0, 0])).toEqual(['probe', 'probe', 'probe'])
    expect(s.isActive).toBe(true)
    expect(s.next(0)).toBe('idle')
    expect(s.isActive).toBe(false)
    expect(s.next(0)).toBe('idle')
    expect(s.next(3)).toBe('idle') // inactive until the next trigger
    expect(s.started).toBe(6)
  })

  it('with no parentless tree at all, exactly extraCount probes', () => {
    for (const extra of [0, 1, 10]) {
      const s = new ProbeSchedule(extra)
      s.trigger()
      const d = run(s, new Array<number>(extra + 5).fill(0))
      expect(d.filter((x) => x === 'probe').length).toBe(extra)
      expect(d.slice(extra).every((x) => x === 'idle')).toBe(true)
    }
  })

  it('a tree becoming parentless during the extra probes is probed for without using up the extras', () => {
    const s = new ProbeSchedule(2)
    s.trigger()
    expect(run(s, [0, 1, 1, 0, 0, 0])).toEqual(['probe', 'probe', 'probe', 'probe', 'idle', 'idle'])
  })

  it('trigger resets the extra count', () => {
    const s = new ProbeSchedule(3)
    s.trigger()
    expect(run(s, [0, 0])).toEqual(['probe', 'probe'])
    s.trigger()
    expect(run(s, [0, 0, 0, 0])).toEqual(['probe', 'probe', 'probe', 'idle'])
    expect(s.started).toBe(5)
  })

  it('stop idles at once, even with parentless trees', () => {
    const s = new ProbeSchedule(10)
    s.trigger()
    expect(s.next(2)).toBe('probe')
    s.stop()
    expect(s.isActive).toBe(false)
    expect(run(s, [2, 0])).toEqual(['idle', 'idle'])
  })
})

// ---- tree table ---------------------------------------------------------------------------

interface Sent { from: PeerId, to: PeerId, op: TreeOp }

/** A group of tree tables wired through per-link FIFO channels that the test drains. */
class TreeNet {
  readonly tables = new Map<PeerId, TreeTable>()
  readonly owned = new Map<PeerId, IntervalSet>()
  readonly alive = new Set<PeerId>()
  /** Per directed link, the ops in flight in FIFO order. */
  readonly links = new Map<string, Sent[]>()
  /** Every op ever sent, in order. */
  readonly log: Sent[] = []
  readonly changes: Array<{ peer: PeerId, kind: TreeKind, root: PeerId, parent: PeerId | null }> = []
  /** latParentDist calls, with what isDetour(root, 5) said during the call. */
  readonly parentDists: Array<{ peer: PeerId, root: PeerId, rttMs: number, distMs: number, detourNow: boolean }> = []
  now = 0

  constructor (peers: readonly PeerId[], readonly lockTimeoutMs = 1000) {
    peers.forEach((p, i) => {
      this.owned.set(p, IntervalSet.range(i * 10, i * 10 + 10))
      this.alive.add(p)
      const host: TreeHost = {
        self: p,
        owned: () => this.owned.get(p) ?? IntervalSet.EMPTY,
        isAlive: (q) => this.alive.has(q),
        sendOp: (to, op) => {
          const s = { from: p, to, op }
          this.log.push(s)
          const key = `${p}>${to}`
          let l = this.links.get(key)
          if (l === undefined) { l = []; this.links.set(key, l) }
          l.push(s)
        },
        parentChanged: (kind, root, parent) => { this.changes.push({ peer: p, kind, root, parent }) },
        latParentDist: (_now, root, rttMs, distMs) => { this.parentDists.push({ peer: p, root, rttMs, distMs, detourNow: isDetour(this.t(p), root, 5) }) }
      }
      this.tables.set(p, new TreeTable(host, lockTimeoutMs))
    })
  }

  t (p: PeerId): TreeTable {
    const t = this.tables.get(p)
    if (t === undefined) throw new Error(`no table ${p}`)
    return t
  }

  /** Every table knows the trees of `root`. */
  ensureRoot (root: PeerId): void {
    for (const t of this.tables.values()) t.ensureRoot(root)
  }

  /** Links with something in flight, in a stable order. */
  busyLinks (): string[] {
    return [...this.links].filter(([, l]) => l.length > 0).map(([k]) => k).sort()
  }

  /** Delivers the head of one link (and flushes the receiver, as the core does). */
  deliverOne (link: string): Sent | undefined {
    const s = this.links.get(link)?.shift()
    if (s === undefined) return undefined
    if (!this.alive.has(s.to)) return s
    const t = this.t(s.to)
    t.handleOp(this.now, s.from, s.op)
    t.flush()
    return s
  }

  /** Delivers what is in flight on one link now (not what that provokes). */
  deliverAll (link: string): void {
    const n = this.links.get(link)?.length ?? 0
    for (let i = 0; i < n; i++) this.deliverOne(link)
  }

  /** Delivers everything, oldest link first (a global FIFO). Returns the ops delivered. */
  drain (max = 10_000): Sent[] {
    const out: Sent[] = []
    for (let i = 0; i < max; i++) {
      // Global FIFO: the link whose head was sent first.
      let best: string | undefined
      let bestIdx = Infinity
      for (const k of this.busyLinks()) {
        const head = this.links.get(k)?.[0]
        const idx = head === undefined ? Infinity : this.log.indexOf(head)
        if (idx < bestIdx) { bestIdx = idx; best = k }
      }
      if (best === undefined) return out
      const s = this.deliverOne(best)
      if (s !== undefined) out.push(s)
    }
    throw new Error('tree ops did not settle')
  }

  /** `p` probes `cand` and judges it with the candidate's real entries; flushes `p`. */
  judge (p: PeerId, cand: PeerId, rttMs: number, bw: number, entries?: readonly ProbeTreeEntry[]): number {
    const t = this.t(p)
    const n = t.judge(this.now, cand, rttMs, bw, entries ?? this.t(cand).probeEntries())
    t.flush()
    return n
  }

  /** Builds a tree of `root` (both kinds) with parent[child] = parent, by real attaches. */
  build (root: PeerId, parents: ReadonlyArray<[child: PeerId, parent: PeerId]>, rttMs = 100, bw = 1e6): void {
    this.ensureRoot(root)
    for (const [child, parent] of parents) {
      expect(this.judge(child, parent, rttMs, bw)).toBe(2)
      this.drain()
      for (const kind of TREE_KINDS) expect(this.t(child).get(kind, root)?.parent).toBe(parent)
    }
  }

  parentOf (p: PeerId, kind: TreeKind, root: PeerId): PeerId | null {
    return this.t(p).get(kind, root)?.parent ?? null
  }

  /** Some peer whose parent chain loops, or undefined. */
  cycle (kind: TreeKind, root: PeerId): PeerId[] | undefined {
    for (const start of this.tables.keys()) {
      const seen: PeerId[] = []
      let cur: PeerId | null = start
      while (cur !== null) {
        if (seen.includes(cur)) return [...seen, cur]
        seen.push(cur)
        cur = this.parentOf(cur, kind, root)
      }
    }
    return undefined
  }

  sentOps (op: TreeOp['op'], filter: Partial<Sent> = {}): Sent[] {
    return this.log.filter((s) => s.op.op === op && (filter.from === undefined || s.from === filter.from) && (filter.to === undefined || s.to === filter.to))
  }
}

/** A probe entry for `root` that makes any parent-having peer want to move. */
const attractive = (root: PeerId): ProbeTreeEntry => ({ root, dist: 0, est: ROOT_EST_BYTES_PER_SEC, latChildren: 0, bwChildren: 0 })

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
    net.alive.delete('r')
    expect(net.t('a').judge(0, 'r', 1, 1e6, [attractive('r')])).toBe(0)
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

  it('ops from strangers are ignored: reach from a non-child, metric from a non-parent', () => {
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
