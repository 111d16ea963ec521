/**
 * Every tree this peer is part of: per root, a latency-aware and a bandwidth-aware tree
 * (003 §IV-B, §IV-C). For each it keeps its parent, the RTT to it, its distance to the
 * root or its estimated rate, its children and the virtual-node set reachable through
 * each child.
 *
 * Parent changes are cycle-free by construction: before p moves under c, a `check` walks
 * from c up to the root along parent pointers. Every node it passes is locked (it will not
 * change its own parent) until p commits or gives up, and the check fails if it meets p.
 * So when p commits, the path c..root is exactly as checked and does not contain p.
 *
 * Leaves need less. A peer x with parent y is always known to y: x's check (either kind)
 * locked y first, and x's commit sends y the unlock and the adoption in one batch, so y has
 * x as a child or still holds the lock (or a lock that expired without an answer: kept as
 * `unanswered` until the origin answers or dies). A peer with no children, no locks and no
 * unanswered locks therefore has no descendants, and no move of its can close a cycle: it
 * sends a `short` check that only its candidate answers (locking itself, so the invariant
 * holds for the new child too). In a cold start every first attach is such a move.
 *
 * Dropping a root's trees (the root died) must not break that: a child may still point
 * here, and a check may still count on a lock here, if the root comes back (a rejoin
 * keeps its name) and the trees are made again. So the dropped trees' children are
 * disowned (they answer with a detach) and, with the locks, left in a tombstone that the
 * remade tree starts from: it is no leaf until every former child has answered.
 *
 * Nor must restarts: messages carry no incarnation, so a peer that restarted unnoticed may
 * attach here under the old one's name. A child dropped for a death or a restart is
 * disowned, and so is a peer reporting a reach as a non-child (held unanswered).
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { MAX_CHECK_PATH, type ProbeTreeEntry, type TreeEntry, type TreeOp } from './tree-ops.ts'
import { bandwidthEstimate, bandwidthPrefers, latencyPrefers } from './parent-rules.ts'
import { TREE_KINDS, type TreeKind } from './tree-kind.ts'
import { bwLoad, childKey, expireLocks, newTreeState, forgetAnswered, forgetOrigin, forgetRestarted, forwardedChecksFailed, isLeaf, latMetricsDue, lockKey, noParentMetric, noteToldDist, pendingUnlock, probeEntriesOf, type TreeState } from './tree-state.ts'
import { TreeNews } from './tree-news.ts'
import { bwMetricsDue, depthTiePrefers, depthUnder, metricDepth } from './depth-tie.ts'
import { LateAdopts } from './late-adopts.ts'
import { Tombstones } from './tombstones.ts'
import type { TreeHost, TreeStats } from './tree-host.ts'
import { hasEntries, judgeEntryLinks, NO_ENTRIES, sameEntries, setChildEntries, subtreeEntries, withEntries } from './tree-entries.ts'

export type { TreeState } from './tree-state.ts'
export type { TreeHost, TreeStats } from './tree-host.ts'

/** Concurrent parent-change checks one peer lets pass through it, per tree. */
export const MAX_LOCKS_PER_TREE = 64
export { MAX_TOMBSTONES } from './tombstones.ts'

/** All trees of one peer. */
export class TreeTable {
  /** Trees by kind, then root (no string keys on the hot path). */
  private readonly byKind: Record<TreeKind, Map<PeerId, TreeState>> = { lat: new Map(), bw: new Map() }
  private nextId = 1
  private connected = 0
  /** Leaving: no more parent changes (see leaveAll). */
  private frozen = false
  /** Trees whose reach or metric may have changed since the last flush. */
  private readonly dirty = new Set<TreeState>()
  /** `dirty` is not empty (a field of this object: the outbox asks after every input). */
  private anyDirty = false
  /** What probeEntries returned, while no tree changed since (replies are frequent). */
  private entries: ProbeTreeEntry[] | null = null
  private readonly news = new TreeNews()
  private readonly lateAdopts = new LateAdopts()
  /** The RTT from which a parent link is far, as of the last flush (refreshEntries; trees/tree-entries.ts). */
  private farMs = Infinity
  /** Locks and unanswered children of dropped trees (see the file comment; trees/tombstones.ts). */
  private readonly tombstones = new Tombstones()
  readonly stats: TreeStats = { parentChanges: 0, checksRejected: 0, attachesAborted: 0 }

  /**
   * @param bwMaxChildren - a bandwidth-tree candidate with this many children already is not taken as a parent (0: no limit, as in 003)
   * @param bwTieDepthHops - a bandwidth-tree tie moves a peer this many hops nearer the root (0: never, as in 003; trees/depth-tie.ts)
   */
  constructor (private readonly host: TreeHost, private readonly lockTimeoutMs: number, private readonly tieTolerance = 0, private readonly bwMaxChildren = 0, private readonly bwTieDepthHops = 0) {}

  /** Numbers parent changes (check ids) from `first` on: the core's incarnation's block (overlay/incarnation-numbers.ts), when it joins. */
  numberFrom (first: number): void { this.nextId = first }

  /** The tree of `root` of this kind, if known. */
  get (kind: TreeKind, root: PeerId): TreeState | undefined {
    return this.byKind[kind].get(root)
  }

  /** The virtual nodes reachable through this peer in a tree (own plus children's). */
  reachOf (kind: TreeKind, root: PeerId): IntervalSet | undefined {
    const st = this.get(kind, root)
    return st === undefined ? undefined : this.freshReach(st)
  }

  /** Creates both trees of `root` if missing (and `root` is a tree root); true if it created one. */
  ensureRoot (root: PeerId): boolean {
    if (this.host.isTreeRoot?.(root) === false || (this.byKind.lat.has(root) && this.byKind.bw.has(root))) return false
    for (const kind of TREE_KINDS) {
      const trees = this.byKind[kind]
      if (trees.has(root)) continue
      const isRoot = root === this.host.self
      const tomb = this.tombstones.take(kind, root)
      this.entries = null
      trees.set(root, newTreeState(kind, root, isRoot, this.host.owned(), tomb))
    }
    return true
  }

  /** Drops both trees of a root that left, died or restarted; children, parent (it may have remade the tree with this peer in it) and a pending change's candidate are told, locks kept aside. */
  removeRoot (root: PeerId): void {
    for (const kind of TREE_KINDS) {
      const st = this.byKind[kind].get(root)
      if (st === undefined) continue
      if (st.parent !== null) { this.connected--; this.host.sendOp(st.parent, { op: 'detach', kind, root }) }
      const unlock = pendingUnlock(st, this.host.self)
      if (unlock !== null && this.host.isAlive(unlock.to)) this.host.sendOp(unlock.to, unlock.op)
      this.byKind[kind].delete(root)
      this.entries = null
      for (const child of st.children.keys()) { this.host.sendOp(child, { op: 'disown', kind, root }); st.unanswered.set(childKey(child), child) }
      this.tombstones.keep(kind, root, { locks: st.locks, unanswered: st.unanswered })
    }
  }

  /**
   * A peer is gone (it `left`, is `dead`, or restarted): orphan the trees it parented, drop
   * it as a child (disowned if dead or restarted, see above). Returns true if it was a parent
   * somewhere. Whatever the reason it is sent a `detach` where it was the parent and an
   * `unlock` for a change pending towards it: the id may be a newer incarnation's that
   * adopted this peer or took the check. Restarted: the new incarnation's checks keep their
   * locks (`keepsCheck`: its block of ids), and it is sent a `disown` where it was a child
   * (held unanswered until its detach: swarm seed 8673 of the striped family).
   */
  peerGone (peer: PeerId, gone: 'left' | 'dead' | { keepsCheck: (id: number) => boolean } = 'left'): boolean {
    const restarted = typeof gone === 'object' ? gone : undefined
    this.lateAdopts.hold(peer, restarted?.keepsCheck)
    let wasParent = false
    for (const st of this.all()) {
      if (st.parent === peer) {
        wasParent = true
        this.setParent(st, null)
        for (const { to, op } of forwardedChecksFailed(st)) this.host.sendOp(to, op)
        this.host.sendOp(peer, { op: 'detach', kind: st.kind, root: st.root })
      }
      const wasChild = st.children.delete(peer)
      if (wasChild) { this.dropChild(st, peer); this.recomputeReach(st) }
      if (wasChild && gone === 'dead') this.host.sendOp(peer, { op: 'disown', kind: st.kind, root: st.root })
      if (st.pending?.candidate === peer) { this.host.sendOp(peer, { op: 'unlock', kind: st.kind, root: st.root, id: st.pending.id, origin: this.host.self }); st.pending = null }
      // Its checks under way will never commit: their locks would hold this tree still.
      if (restarted === undefined) forgetOrigin(st, peer)
      else if (forgetRestarted(st, peer, restarted.keepsCheck, wasChild)) this.host.sendOp(peer, { op: 'disown', kind: st.kind, root: st.root })
    }
    this.tombstones.peerGone(peer, restarted, (kind, root) => this.host.sendOp(peer, { op: 'disown', kind, root }))
    return wasParent
  }

  /**
   * This peer is leaving: it detaches from every parent now and makes no more parent changes.
   * Peers learn of the leave and drop it as a child, so it must not point at them any more
   * (the leaf argument above needs every child pointer to be known to its parent).
   */
  leaveAll (): void {
    this.frozen = true
    for (const st of this.all()) {
      st.pending = null
      if (st.parent === null) continue
      this.host.sendOp(st.parent, { op: 'detach', kind: st.kind, root: st.root })
      this.setParent(st, null)
    }
  }

  /** Own virtual nodes changed: every tree's reach changes. */
  ownedChanged (): void { for (const st of this.all()) this.recomputeReach(st) }

  /** Trees (of other roots) in which this peer has no parent. */
  parentlessCount (): number {
    let n = 0
    for (const st of this.all()) if (st.root !== this.host.self && st.parent === null) n++
    return n
  }

  /** Trees (of other roots) in which this peer has a parent: kept incrementally. */
  get connectedCount (): number { return this.connected }

  /** The largest distance to a root over the latency trees this peer is connected in. */
  maxDistMs (): number {
    let max = 0
    for (const st of this.all()) {
      if (st.kind === 'lat' && Number.isFinite(st.metric) && st.metric > max) max = st.metric
    }
    return max
  }

  /** This peer's state for every tree, as carried in a probe reply (shared: do not modify). */
  probeEntries (): readonly ProbeTreeEntry[] {
    this.entries ??= probeEntriesOf(this.byKind, this.host.self, this.bwTieDepthHops > 0)
    return this.entries
  }

  /**
   * Judges a probed candidate for every tree at once (003 §IV-A) and starts a parent change
   * wherever it is better; returns the changes started. Without `bwBytesPerSec` (no download)
   * only latency trees are judged. A root with trees here counts as alive: drop a dead one's.
   */
  judge (now: number, cand: PeerId, rttMs: number, bwBytesPerSec: number | undefined, entries: readonly ProbeTreeEntry[]): number {
    let started = 0
    if (this.frozen) return 0
    const self = this.host.self
    for (const e of entries) {
      if (e.root === self) continue
      // A root with trees here is alive (the core adds and drops them with the member list).
      let lat = this.byKind.lat.get(e.root)
      if (lat === undefined) { if (!this.host.isAlive(e.root)) continue; this.ensureRoot(e.root); lat = this.byKind.lat.get(e.root); if (lat === undefined) continue }
      if (this.judgeLat(now, lat, cand, rttMs, e)) started++
      if (bwBytesPerSec !== undefined && this.judgeBw(now, this.byKind.bw.get(e.root) as TreeState, cand, rttMs, bwBytesPerSec, e)) started++
    }
    return started
  }

  /** Whether `st` may start a parent change towards `cand` now. */
  private mayMove (now: number, st: TreeState, cand: PeerId): boolean {
    this.expire(st, now)
    if (st.pending !== null || st.locks.size > 0) return false
    return st.refused === null || st.refused.candidate !== cand || now - st.refused.at >= this.lockTimeoutMs
  }

  private judgeLat (now: number, st: TreeState, cand: PeerId, rttMs: number, e: ProbeTreeEntry): boolean {
    if (!this.mayMove(now, st, cand)) return false
    if (st.parent === cand) {
      if (e.dist >= 0) { st.parentRttMs = rttMs; st.metric = e.dist + rttMs; this.touch(st) }
      return false
    }
    if (!latencyPrefers(st.parent !== null, st.parentRttMs, st.metric, rttMs, e.dist, this.tieTolerance)) return false
    this.startAttach(now, st, cand, rttMs, 0, e.dist + rttMs, 0)
    return true
  }

  private judgeBw (now: number, st: TreeState, cand: PeerId, rttMs: number, bwBytesPerSec: number, e: ProbeTreeEntry): boolean {
    if (!this.mayMove(now, st, cand)) return false
    const isChild = st.parent === cand
    const linkEst = bwBytesPerSec / Math.max(1, e.bwChildren + (isChild ? 0 : 1))
    const est = bandwidthEstimate(e.est, bwBytesPerSec, e.bwChildren, isChild)
    if (isChild) {
      if (est >= 0) { st.parentRttMs = rttMs; st.entry = rttMs >= this.farMs; st.linkEst = linkEst; st.metric = est; this.touch(st) }
      return false
    }
    if (this.bwMaxChildren > 0 && e.bwChildren >= this.bwMaxChildren) return false
    if (!bandwidthPrefers(st.parent !== null, st.metric, est, st.parentRttMs, rttMs, this.tieTolerance) && !depthTiePrefers(st, est, rttMs, e, this.tieTolerance, this.bwTieDepthHops)) return false
    this.startAttach(now, st, cand, rttMs, bwBytesPerSec, est, linkEst, depthUnder(e))
    return true
  }

  /** Handles one tree operation from `from`. */
  handleOp (now: number, from: PeerId, op: TreeOp): void {
    const st = this.get(op.kind, op.root)
    this.lateAdopts.heard(from, op)
    if (op.op === 'detach') this.answered(st, op.kind, op.root, from, null)
    else if (op.op === 'unlock') this.answered(st, op.kind, op.root, op.origin, op.id)
    switch (op.op) {
      case 'check': return this.onCheck(now, st, op)
      case 'result': return this.onResult(now, st, op)
      case 'adopt':
        if (st === undefined || this.lateAdopts.isLate(from) || !this.host.isAlive(from)) {
          this.host.sendOp(from, { op: 'disown', kind: op.kind, root: op.root })
          if (st === undefined && this.host.isAlive(from) && !this.lateAdopts.isLate(from)) this.tombstones.holdDisowned(op.kind, op.root, from) // it may still point here
          return
        }
        st.children.set(from, op.reach)
        st.childBw.set(from, op.bw)
        setChildEntries(st, from, op.entries)
        this.recomputeReach(st)
        return
      case 'detach':
        // Only ever child -> old parent; never clears a parent (one that moved under its former child gets its detach).
        if (st === undefined) return
        if (st.children.delete(from)) { this.dropChild(st, from); this.recomputeReach(st) }
        return
      case 'disown':
        // Whatever the tree here, `from` is not our parent in it now; say so (it waits for that).
        if (st !== undefined && st.parent === from) { this.setParent(st, null); this.host.parentLost?.(now) }
        this.host.sendOp(from, { op: 'detach', kind: op.kind, root: op.root })
        return
      case 'unlock':
        return
      case 'reach':
        if (st === undefined) return
        if (!st.children.has(from)) { this.host.sendOp(from, { op: 'disown', kind: op.kind, root: op.root }); if (this.host.isAlive(from)) st.unanswered.set(childKey(from), from); return }
        st.children.set(from, op.reach)
        setChildEntries(st, from, op.entries)
        this.recomputeReach(st)
        return
      case 'metric':
        if (st === undefined || st.parent !== from) return
        // lat: the parent's distance; bw: this peer's estimate as the parent computes it,
        // min(est(parent), bw(p,parent) / n_children(parent)), kept fresh as siblings come and go.
        {
          metricDepth(st, op) // bw, with depths on: the parent's depth, passed on down at the flush (touched below)
          const rose = st.kind === 'lat' && op.value + st.parentRttMs > st.metric && from !== op.root
          st.metric = st.kind === 'lat' ? op.value + st.parentRttMs : op.value
          this.touch(st)
          // After the update: the host may probe at once and read this tree's new state.
          if (rose) this.host.latParentDist?.(now, op.root, st.parentRttMs, op.value)
        }
    }
  }

  /**
   * Sends what changed since the last flush: subtree reach to parents, metrics to
   * children. Called once per handled event so updates batch per neighbour.
   */
  flush (): void {
    this.refreshEntries()
    if (this.dirty.size === 0) return
    const dirty = [...this.dirty]
    this.dirty.clear()
    this.anyDirty = false
    let news = false
    for (const st of dirty) {
      if (this.byKind[st.kind].get(st.root) !== st) continue
      if (this.news.observe(st, st.parent !== null)) news = true
      const reach = this.freshReach(st)
      if (st.parent !== null) {
        const entries = this.entriesOf(st)
        const entriesChanged = !sameEntries(entries, st.sentEntries)
        if (st.sentReach === null || !st.sentReach.equals(reach) || entriesChanged) {
          st.sentReach = reach
          st.sentEntries = entries
          this.host.sendOp(st.parent, withEntries({ op: 'reach', kind: st.kind, root: st.root, reach }, entries))
        }
      }
      const connected = st.root === this.host.self || st.parent !== null
      if (!connected || st.children.size === 0) continue
      if (st.kind === 'lat') {
        for (const child of latMetricsDue(st)) this.host.sendOp(child, { op: 'metric', kind: st.kind, root: st.root, value: st.metric })
        continue
      }
      for (const [child, op] of bwMetricsDue(st, this.bwTieDepthHops > 0)) this.host.sendOp(child, op)
    }
    if (news) this.host.treeNews?.()
  }

  /** True when some tree's reach or metric may have to be sent. */
  get hasDirty (): boolean { return this.anyDirty }

  /** Every tree: latency trees, then bandwidth trees. */
  * all (): IterableIterator<TreeState> {
    yield * this.byKind.lat.values()
    yield * this.byKind.bw.values()
  }

  /** `st` changed (parent, metric, children or reach): flush sends it, probe replies see it. */
  private touch (st: TreeState): void {
    this.dirty.add(st)
    this.anyDirty = true
    this.entries = null
  }

  private dropChild (st: TreeState, child: PeerId): void {
    st.childBw.delete(child)
    st.sentChildEst.delete(child)
    st.childEntries.delete(child)
  }

  /** The cluster entries of this peer's subtree in `st` (none outside bandwidth trees). */
  private entriesOf (st: TreeState): readonly TreeEntry[] {
    return hasEntries(st) ? subtreeEntries(this.host.self, st.entry, this.freshReach(st), st.childEntries.values(), st.entry ? this.host.clusterTag?.() : undefined) : NO_ENTRIES
  }

  /**
   * Where this peer's own bandwidth tree crosses into other clusters: one entry per
   * wide-area edge, each with the virtual nodes its side reaches (overlay/stripes.ts).
   */
  stripeEntries (): readonly TreeEntry[] {
    const st = this.byKind.bw.get(this.host.self)
    return st === undefined ? NO_ENTRIES : this.entriesOf(st)
  }

  /** When what counts as far changed (a nearer peer was measured), every bandwidth tree's parent link is judged again. */
  private refreshEntries (): void {
    const far = this.host.farRttMs?.() ?? Infinity
    if (far === this.farMs) return
    this.farMs = far
    for (const st of judgeEntryLinks(this.byKind.bw.values(), far)) this.touch(st)
  }

  private startAttach (now: number, st: TreeState, cand: PeerId, rttMs: number, bw: number, metric: number, linkEst: number, depth = Infinity): void {
    const id = this.nextId++
    // judge() only starts a change when this tree has no locks, so this is the whole test.
    const short = isLeaf(st) && (this.host.mayShortCheck?.(now) ?? true)
    st.pending = { id, candidate: cand, rttMs, bw, metric, linkEst, sentAt: now, short, depth }
    const check = { op: 'check', kind: st.kind, root: st.root, id, origin: this.host.self, dist: 0, path: [] } as const
    this.host.sendOp(cand, short ? { ...check, short: true } : check)
  }

  /** A check through this peer. None is locked for a gone origin: it would never answer, and the lock would stay unanswered (no leaf again). */
  private onCheck (now: number, st: TreeState | undefined, op: Extract<TreeOp, { op: 'check' }>): void {
    const self = this.host.self
    const reject = (): void => { this.stats.checksRejected++; this.host.sendOp(op.origin, { op: 'result', kind: op.kind, root: op.root, id: op.id, ok: false, dist: 0, path: op.path }) }
    if (op.origin === self || !this.host.isAlive(op.origin)) { reject(); return }
    const candidate = op.path.length === 0
    // A full bandwidth-tree parent (children and adoptions under way) refuses more.
    if (candidate && st !== undefined && st.kind === 'bw' && this.bwMaxChildren > 0 && !st.children.has(op.origin) && bwLoad(st) >= this.bwMaxChildren) { reject(); return }
    if (op.root === self) {
      // The root itself is never locked: it has no parent to change in its own tree.
      this.host.sendOp(op.origin, { op: 'result', kind: op.kind, root: op.root, id: op.id, ok: true, dist: op.dist, path: op.path })
      return
    }
    // A short check from this peer's own parent: it has descendants it does not know of (a restart, say).
    if (st === undefined || st.parent === null || op.path.length >= MAX_CHECK_PATH || (op.short === true && (!candidate || st.parent === op.origin))) { reject(); return }
    this.expire(st, now)
    if (st.locks.size >= MAX_LOCKS_PER_TREE || (candidate && st.unanswered.size >= MAX_LOCKS_PER_TREE)) { reject(); return }
    const path = [...op.path, self]
    st.locks.set(lockKey(op.origin, op.id), { expiresAt: now + this.lockTimeoutMs, origin: op.origin, candidate, id: op.id, forwarded: op.short === true ? null : path, ...(op.short === true && st.kind === 'lat' ? { dist: st.metric } : {}) })
    if (op.short === true) {
      // The origin has no descendants: only this peer (its future parent) needs to know.
      this.host.sendOp(op.origin, { op: 'result', kind: op.kind, root: op.root, id: op.id, ok: true, dist: st.kind === 'lat' ? st.metric : 0, path })
      return
    }
    this.host.sendOp(st.parent, { ...op, dist: op.dist + st.parentRttMs, path })
  }

  private onResult (now: number, st: TreeState | undefined, op: Extract<TreeOp, { op: 'result' }>): void {
    // A check's path is never longer than onCheck lets it grow; a dead node holds no lock to free.
    if (op.path.length > MAX_CHECK_PATH) return
    for (const node of op.path) if (this.host.isAlive(node)) this.host.sendOp(node, { op: 'unlock', kind: op.kind, root: op.root, id: op.id, origin: this.host.self })
    if (st === undefined || st.pending === null || st.pending.id !== op.id || this.frozen) return
    const p = st.pending
    st.pending = null
    if (!op.ok) { st.refused = { candidate: p.candidate, at: now }; return }
    this.expire(st, now)
    // A short check holds only while this peer has no descendants (a child committed meanwhile may be the candidate's ancestor).
    if (st.locks.size > 0 || (p.short && !isLeaf(st)) || now - p.sentAt > this.lockTimeoutMs / 2 || !this.host.isAlive(p.candidate)) {
      this.stats.attachesAborted++
      return
    }
    const old = st.parent
    st.parentRttMs = p.rttMs
    st.entry = st.kind === 'bw' && p.rttMs >= this.farMs
    st.linkEst = p.linkEst
    st.metric = st.kind === 'lat' ? op.dist + p.rttMs : p.metric
    st.depth = p.depth
    this.touch(st)
    this.setParent(st, p.candidate)
    st.sentReach = this.freshReach(st)
    st.sentEntries = this.entriesOf(st)
    this.host.sendOp(p.candidate, withEntries({ op: 'adopt', kind: st.kind, root: st.root, reach: st.sentReach, bw: p.bw }, st.sentEntries))
    if (old !== null && old !== p.candidate) this.host.sendOp(old, { op: 'detach', kind: st.kind, root: st.root })
    if (st.kind === 'lat' && p.candidate !== st.root) this.host.latParentDist?.(now, st.root, p.rttMs, op.dist)
  }

  /**
   * A lock (`origin#id`) or a former child (`id` null, see childKey) is answered: forget it in
   * the tree, or in its tombstone. The key is only built when there is something to forget.
   */
  private answered (st: TreeState | undefined, kind: TreeKind, root: PeerId, origin: PeerId, id: number | null): void {
    if (st !== undefined && id !== null && noteToldDist(st, origin, id)) this.touch(st)
    if (st !== undefined) forgetAnswered(st, origin, id)
    else this.tombstones.answered(kind, root, origin, id)
  }

  private setParent (st: TreeState, parent: PeerId | null): void {
    if (st.parent === parent) return
    if (st.parent === null && parent !== null) this.connected++
    if (st.parent !== null && parent === null) this.connected--
    st.parent = parent
    this.touch(st)
    if (parent === null) {
      st.metric = noParentMetric(st.kind)
      st.parentRttMs = Infinity
      st.sentReach = null
      st.entry = false
      st.sentEntries = NO_ENTRIES
      st.depth = Infinity
    }
    this.stats.parentChanges++
    this.host.parentChanged(st.kind, st.root, parent)
  }

  /** Marks the reach stale; it is recomputed once, when next needed (flush or commit). */
  private recomputeReach (st: TreeState): void {
    st.reachStale = true
    st.routeOrder = null
    this.touch(st)
  }

  private freshReach (st: TreeState): IntervalSet {
    if (st.reachStale) {
      st.reach = st.children.size === 0 ? this.host.owned() : IntervalSet.unionAll([this.host.owned(), ...st.children.values()])
      st.reachStale = false
    }
    return st.reach
  }

  private expire (st: TreeState, now: number): void {
    const unlock = expireLocks(st, now, this.lockTimeoutMs, this.host.self)
    if (unlock !== null) this.host.sendOp(unlock.to, unlock.op)
  }
}
