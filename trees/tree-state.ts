/**
 * What one peer holds for one tree (003 §IV-B, §IV-C: parent, RTT or estimate to it, its
 * distance or rate, children and what each reaches), and the bookkeeping of parent
 * changes under way (pending attach, locks, tombstones); trees/tree-table.ts keeps them.
 */
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeKind } from './tree-kind.ts'
import { ROOT_EST_BYTES_PER_SEC } from './parent-rules.ts'
import { NO_ENTRIES } from './tree-entries.ts'
import type { ProbeTreeEntry, TreeEntry, TreeOp } from './tree-ops.ts'

/** A parent change under way. */
export interface PendingAttach { id: number, candidate: PeerId, rttMs: number, bw: number, metric: number, linkEst: number, sentAt: number, short: boolean, depth: number }

/** What a dropped tree leaves behind for the next tree of the same root. */
export interface Tombstone { readonly locks: Map<string, Lock>, readonly unanswered: Map<string, PeerId> }

/** A check passing through (or asking) this peer. */
export interface Lock {
  readonly expiresAt: number
  readonly origin: PeerId
  /** This peer is the origin's candidate: the origin may become its child. */
  readonly candidate: boolean
  /** The check's id at its origin. */
  readonly id: number
  /**
   * The check's path up to this peer when it was forwarded to this peer's parent (null: a
   * short check, answered here): if that parent goes, this peer answers the origin itself.
   */
  readonly forwarded: readonly PeerId[] | null
  /** Latency tree, short check: the distance this peer answered with. */
  readonly dist?: number
}

/** One tree as this peer sees it. */
export interface TreeState {
  readonly kind: TreeKind
  readonly root: PeerId
  parent: PeerId | null
  /** RTT to the parent, ms. */
  parentRttMs: number
  /** bw(p,parent) / n_children(parent) at attach time (bandwidth tree). */
  linkEst: number
  /** lat: dist to the root (ms); bw: estimated rate from the root (bytes/s). */
  metric: number
  /** Children and the virtual nodes reachable through each. */
  readonly children: Map<PeerId, IntervalSet>
  /** bw(child, this peer) as each child measured it (bandwidth tree). */
  readonly childBw: Map<PeerId, number>
  /** The estimate last sent to each child (bandwidth tree). */
  readonly sentChildEst: Map<PeerId, number>
  /** Own virtual nodes plus all children's reach (valid when not reachStale). */
  reach: IntervalSet
  reachStale: boolean
  /**
   * The children by reach size, largest first, then by id: the order a stream routes in
   * (overlay/streams.ts). Built on demand by {@link childrenByReach}; null since the
   * children last changed (the table clears it with `reachStale`).
   */
  routeOrder: ReadonlyArray<readonly [PeerId, IntervalSet]> | null
  /** What the parent was last told this subtree reaches. */
  sentReach: IntervalSet | null
  /** Metric last sent to the children. */
  sentMetric: number
  /**
   * Latency tree: origins of short checks answered here with a distance this peer no
   * longer had when they committed, and that distance: sent the new one once they are
   * children (sentMetric does not cover them). At most MAX_TOLD_DISTS, oldest dropped.
   */
  readonly toldDist: Map<PeerId, number>
  /** Bandwidth tree: this peer's link to its parent is far (trees/tree-entries.ts). */
  entry: boolean
  /** Bandwidth tree: the cluster entries each child reported below it (children with none are absent). */
  readonly childEntries: Map<PeerId, readonly TreeEntry[]>
  /** The entries last reported to the parent. */
  sentEntries: readonly TreeEntry[]
  /** Checks passing through this peer, by `origin#id`. */
  readonly locks: Map<string, Lock>
  /**
   * Candidate locks that expired before their origin answered, by `origin#id` (the origin
   * may yet commit under this peer): while any is here, this peer does not use short checks.
   */
  readonly unanswered: Map<string, PeerId>
  pending: PendingAttach | null
  /**
   * The last candidate whose check failed here, and when: it is not tried again in this
   * tree for a lock timeout (it is most likely a descendant, and each doomed check locks
   * this peer's path and holds better candidates off).
   */
  refused: { readonly candidate: PeerId, readonly at: number } | null
  /** Bandwidth tree: hops from the root (0 at the root, Infinity without a parent or not known), and the one the children were last told (trees/depth-tie.ts). */
  depth: number
  sentDepth: number
}

/** The key of a check's lock: its origin and the origin's id for it. */
export function lockKey (origin: PeerId, id: number): string {
  return `${origin}#${id}`
}

/** The `unanswered` key of a disowned former child (lock keys end in a digit, these in NUL). */
export function childKey (child: PeerId): string {
  return `${child}\u0000`
}

/** A tree's metric while it has no parent: no distance, no rate. */
export function noParentMetric (kind: TreeKind): number {
  return kind === 'lat' ? Infinity : 0
}

/** Metrics within 1% of each other: an update to a neighbour is not worth a message. */
export function closeEnough (a: number, b: number): boolean {
  if (a === b) return true
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false
  return Math.abs(a - b) <= 0.01 * Math.max(Math.abs(a), Math.abs(b))
}

/**
 * Forgets the locks and unanswered candidate locks of `origin` in a tree or a tombstone,
 * except those of checks whose id `keeps` (a restarted origin's own checks, see
 * TreeTable.peerGone). A disowned former child's key (childKey) has no id: always forgotten.
 */
export function forgetOrigin (held: Tombstone, origin: PeerId, keeps?: (id: number) => boolean): void {
  for (const [key, o] of held.unanswered) {
    if (o !== origin) continue
    const kept = keeps !== undefined && key !== childKey(origin) && keeps(idOfLockKey(key))
    if (!kept) held.unanswered.delete(key)
  }
  for (const [key, lock] of held.locks) if (lock.origin === origin && !(keeps?.(lock.id) ?? false)) held.locks.delete(key)
}

/**
 * forgetOrigin for an origin that restarted (TreeTable.peerGone): its new incarnation's
 * checks keep their locks. Returns whether to send it a `disown` (again): it was a child
 * here (`wasChild`), or a disown to it is still unanswered, which may have reached the old
 * incarnation only. The key stays held until the new one answers, or goes too.
 */
export function forgetRestarted (held: Tombstone, origin: PeerId, keeps: (id: number) => boolean, wasChild: boolean): boolean {
  const disown = wasChild || held.unanswered.has(childKey(origin))
  forgetOrigin(held, origin, keeps)
  if (disown) held.unanswered.set(childKey(origin), origin)
  return disown
}

/** The check id in a lock key (lockKey). */
function idOfLockKey (key: string): number {
  return Number(key.slice(key.lastIndexOf('#') + 1))
}

/**
 * This peer's parent in `st` is gone, and with it the checks this peer forwarded there: no
 * result will come for them, and their origins (and every lock on their paths, this one
 * included) would wait a lock timeout, holding this orphan still (churn-64: 3 peers without
 * a parent in 4 trees for 4 s after half the peers left). Returns the no to send to each
 * origin now. The locks stay until the origins' unlocks (or expiry): an origin that got a
 * yes from above before this no commits under locks still held, and one that gets this no
 * first ignores any later yes, so no commit ever happens without its path locked.
 */
export function forwardedChecksFailed (st: TreeState): Array<{ to: PeerId, op: TreeOp }> {
  const out: Array<{ to: PeerId, op: TreeOp }> = []
  for (const lock of st.locks.values()) {
    if (lock.forwarded === null) continue
    out.push({ to: lock.origin, op: { op: 'result', kind: st.kind, root: st.root, id: lock.id, ok: false, dist: 0, path: [...lock.forwarded] } })
  }
  return out
}

/** A peer's state for every tree, as a probe reply carries it (both kinds of a root exist together). */
export function probeEntriesOf (byKind: Readonly<Record<TreeKind, ReadonlyMap<PeerId, TreeState>>>, self: PeerId, withDepth = false): ProbeTreeEntry[] {
  const out: ProbeTreeEntry[] = []
  for (const [root, lat] of byKind.lat) {
    const bw = byKind.bw.get(root) as TreeState
    const isRoot = root === self
    const dist = (isRoot || lat.parent !== null) && Number.isFinite(lat.metric) ? lat.metric : -1
    const est = isRoot || bw.parent !== null ? bw.metric : -1
    const entry = { root, dist, est, latChildren: lat.children.size, bwChildren: bw.children.size }
    out.push(withDepth ? { ...entry, bwDepth: est < 0 || !Number.isFinite(bw.depth) ? -1 : bw.depth } : entry)
  }
  return out
}

/** No children, no locks, no unanswered candidate locks: no peer has this one as its parent. */
export function isLeaf (st: TreeState): boolean {
  return st.children.size === 0 && st.locks.size === 0 && st.unanswered.size === 0
}

/**
 * A lock (`origin#id`) or a former child (`id` null, see childKey) is answered: forgets it
 * in a tree or a tombstone (the key is built only when there is something to forget).
 * Returns true when nothing is left held there.
 */
export function forgetAnswered (held: Tombstone, origin: PeerId, id: number | null): boolean {
  if (held.unanswered.size === 0 && (id === null || held.locks.size === 0)) return held.locks.size === 0
  const key = id === null ? childKey(origin) : lockKey(origin, id)
  held.locks.delete(key)
  held.unanswered.delete(key)
  return held.locks.size === 0 && held.unanswered.size === 0
}

/**
 * Drops what timed out in `st`: a parent change pending for longer than the lock timeout
 * (returning the unlock its candidate must be sent: the change will never commit), and
 * expired locks (a candidate lock whose origin never answered becomes `unanswered`).
 */
export function expireLocks (st: TreeState, now: number, lockTimeoutMs: number, self: PeerId): { to: PeerId, op: TreeOp } | null {
  let unlock: { to: PeerId, op: TreeOp } | null = null
  if (st.pending !== null && now - st.pending.sentAt > lockTimeoutMs) {
    unlock = pendingUnlock(st, self)
    st.pending = null
  }
  if (st.locks.size === 0) return unlock
  for (const [k, lock] of st.locks) {
    if (lock.expiresAt > now) continue
    st.locks.delete(k)
    if (lock.candidate) st.unanswered.set(k, lock.origin)
  }
  return unlock
}

/**
 * The unlock that tells the candidate of `st`'s pending change that it will never commit
 * (expired, or its tree dropped: the candidate would otherwise hold its lock unanswered for
 * ever, and never be a leaf again), or null when no change is pending.
 */
export function pendingUnlock (st: TreeState, self: PeerId): { to: PeerId, op: TreeOp } | null {
  const p = st.pending
  return p === null ? null : { to: p.candidate, op: { op: 'unlock', kind: st.kind, root: st.root, id: p.id, origin: self } }
}

/** A fresh tree of `root`, parent-less (unless this peer is its root), starting from a dropped tree's tombstone if any. */
export function newTreeState (kind: TreeKind, root: PeerId, isRoot: boolean, owned: IntervalSet, tomb: Tombstone | undefined): TreeState {
  return {
    kind,
    root,
    parent: null,
    parentRttMs: Infinity,
    linkEst: 0,
    metric: isRoot ? (kind === 'lat' ? 0 : ROOT_EST_BYTES_PER_SEC) : noParentMetric(kind),
    children: new Map(),
    childBw: new Map(),
    sentChildEst: new Map(),
    reach: owned,
    reachStale: false,
    routeOrder: null,
    sentReach: null,
    sentMetric: NaN,
    toldDist: new Map(),
    entry: false,
    childEntries: new Map(),
    sentEntries: NO_ENTRIES,
    locks: tomb?.locks ?? new Map(),
    unanswered: tomb?.unanswered ?? new Map(),
    pending: null,
    refused: null,
    depth: isRoot ? 0 : Infinity,
    sentDepth: NaN
  }
}

/** Children plus adoptions under way (candidate locks held here) in `st`. */
export function bwLoad (st: TreeState): number {
  let n = st.children.size
  if (st.locks.size > 0) for (const lock of st.locks.values()) if (lock.candidate && !st.children.has(lock.origin)) n++
  return n
}

/** `st`'s children by reach size, largest first, then by id (cached until the children change). */
export function childrenByReach (st: TreeState): ReadonlyArray<readonly [PeerId, IntervalSet]> {
  st.routeOrder ??= [...st.children].sort((a, b) => b[1].size - a[1].size || (a[0] < b[0] ? -1 : 1))
  return st.routeOrder
}

/** Origins told a stale distance that one tree remembers at most (TreeState.toldDist). */
export const MAX_TOLD_DISTS = 64

/**
 * A check of `origin` through this peer is over (its unlock): if it was a short latency
 * check answered with a distance this peer has no more (an ancestor moved, or measured
 * its parent again, meanwhile: the origin, about to adopt, holds the old one), notes it in
 * `toldDist`. Returns whether it did (flush must look at the tree).
 */
export function noteToldDist (st: TreeState, origin: PeerId, id: number): boolean {
  const dist = st.locks.get(lockKey(origin, id))?.dist
  if (dist === undefined) return false
  st.toldDist.delete(origin)
  if (closeEnough(dist, st.metric)) return false
  if (st.toldDist.size >= MAX_TOLD_DISTS) st.toldDist.delete(st.toldDist.keys().next().value as PeerId)
  st.toldDist.set(origin, dist)
  return true
}

/**
 * The children of a connected latency tree to send its distance to now: all of them when
 * it moved by more than closeEnough since last sent, else the new children that were told
 * a stale one (toldDist). Updates what was sent.
 */
export function latMetricsDue (st: TreeState): PeerId[] {
  if (!closeEnough(st.metric, st.sentMetric)) {
    st.sentMetric = st.metric
    st.toldDist.clear()
    return [...st.children.keys()]
  }
  const due: PeerId[] = []
  for (const [origin, dist] of st.toldDist) {
    if (!st.children.has(origin)) continue
    st.toldDist.delete(origin)
    if (!closeEnough(dist, st.metric)) due.push(origin)
  }
  return due
}

/**
 * A peer committed under this one in a tree this peer does not hold (dropped: its root died
 * or left) and was disowned: until it answers (its detach), it may still point here, so the
 * key waits in the root's tombstone (made if needed, at most `max` kept) and a tree remade
 * for that root is no leaf meanwhile. Its check's unlock came just before the adopt and
 * freed the last lock there, so nothing held the tree still.
 */
export function holdDisowned (tombs: Map<PeerId, Tombstone>, root: PeerId, child: PeerId, max: number): void {
  let tomb = tombs.get(root)
  if (tomb === undefined) {
    if (tombs.size >= max) tombs.delete(tombs.keys().next().value as PeerId)
    tomb = { locks: new Map(), unanswered: new Map() }
    tombs.set(root, tomb)
  }
  tomb.unanswered.set(childKey(child), child)
}
