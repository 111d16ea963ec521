/**
 * A group of tree tables (trees/tree-table.ts) wired through per-link FIFO channels that a
 * test drains, shared by test/trees.test.ts, test/tree-changes.test.ts and test/tree-restarts.test.ts.
 */
import { expect } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { ROOT_EST_BYTES_PER_SEC } from '../trees/parent-rules.ts'
import { TreeTable, type TreeHost } from '../trees/tree-table.ts'
import { isDetour } from '../trees/detours.ts'
import { TREE_KINDS, type TreeKind } from '../trees/tree-kind.ts'
import type { ProbeTreeEntry, TreeOp } from '../overlay/messages.ts'

export interface Sent { from: PeerId, to: PeerId, op: TreeOp }

/** A group of tree tables wired through per-link FIFO channels that the test drains. */
export class TreeNet {
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

  /** What counts as a far link (trees/tree-entries.ts); Infinity: none. */
  farRttMs = Infinity
  /** Peers whose host says no short checks (TreeHost.mayShortCheck). */
  readonly fullChecks = new Set<PeerId>()
  private readonly hosts = new Map<PeerId, TreeHost>()
  private readonly bwMaxChildren: number

  constructor (peers: readonly PeerId[], readonly lockTimeoutMs = 1000, opts: { bwMaxChildren?: number, tieTolerance?: number, bwTieDepthHops?: number } = {}) {
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
        latParentDist: (_now, root, rttMs, distMs) => { this.parentDists.push({ peer: p, root, rttMs, distMs, detourNow: isDetour(this.t(p), root, 5) }) },
        farRttMs: () => this.farRttMs,
        mayShortCheck: () => !this.fullChecks.has(p)
      }
      this.hosts.set(p, host)
      this.tables.set(p, new TreeTable(host, lockTimeoutMs, opts.tieTolerance ?? 0, opts.bwMaxChildren ?? 0, opts.bwTieDepthHops ?? 0))
    })
    this.bwMaxChildren = opts.bwMaxChildren ?? 0
  }

  /** `p` crashes and restarts unnoticed: a fresh table (its peers still hold what they held), which sends full checks only with `fullChecks`. */
  restart (p: PeerId, fullChecks: boolean): TreeTable {
    const t = new TreeTable(this.hosts.get(p) as TreeHost, this.lockTimeoutMs, 0, this.bwMaxChildren)
    this.tables.set(p, t)
    if (fullChecks) this.fullChecks.add(p)
    for (const l of this.links.values()) l.length = 0
    return t
  }

  /** Builds `root`'s trees from `parents` (10 ms links), then `p` restarts unnoticed (see restart) and knows the root again. */
  builtThenRestarted (root: PeerId, parents: ReadonlyArray<[child: PeerId, parent: PeerId]>, p: PeerId, fullChecks: boolean): TreeTable {
    this.build(root, parents, 10)
    const t = this.restart(p, fullChecks)
    this.ensureRoot(root)
    return t
  }

  /** `from` probes `cand`, which looks attractive in `root`'s trees: both parent changes start, and the net drains. */
  move (from: PeerId, cand: PeerId, root: PeerId): void {
    expect(this.t(from).judge(0, cand, 1, 1e12, [attractive(root)])).toBe(2)
    this.drain()
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

  /** Delivers everything, oldest link first (a global FIFO), calling `after` after each op. Returns the ops delivered. */
  drain (max = 10_000, after?: () => void): Sent[] {
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
      after?.()
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

  /** Drains (drain) and says whether the trees of `root` had a cycle at any point, in either kind. */
  drainSawCycle (root: PeerId): boolean {
    let saw = false
    const look = (): void => { saw ||= TREE_KINDS.some((kind) => this.cycle(kind, root) !== undefined) }
    look()
    this.drain(10_000, look)
    return saw
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
export const attractive = (root: PeerId): ProbeTreeEntry => ({ root, dist: 0, est: ROOT_EST_BYTES_PER_SEC, latChildren: 0, bwChildren: 0 })
