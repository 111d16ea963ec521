/**
 * What one peer holds for one tree (003 §IV-B, §IV-C: parent, RTT or estimate to it, its
 * distance or rate, children and what each reaches), and the bookkeeping of parent
 * changes under way (pending attach, locks, tombstones); trees/tree-table.ts keeps them.
 */
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeKind } from './tree-kind.ts'
import type { TreeOp } from './tree-ops.ts'

/** A parent change under way. */
export interface PendingAttach { id: number, candidate: PeerId, rttMs: number, bw: number, metric: number, linkEst: number, sentAt: number, short: boolean }

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
  /** What the parent was last told this subtree reaches. */
  sentReach: IntervalSet | null
  /** Metric last sent to the children. */
  sentMetric: number
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

/** Forgets the locks and unanswered candidate locks of `origin` in a tree or a tombstone. */
export function forgetOrigin (held: Tombstone, origin: PeerId): void {
  for (const [key, o] of held.unanswered) if (o === origin) held.unanswered.delete(key)
  for (const [key, lock] of held.locks) if (lock.origin === origin) held.locks.delete(key)
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
