/**
 * What a tree table (trees/tree-table.ts) needs from the peer around it, and the counters
 * it keeps.
 */
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeOp } from './tree-ops.ts'
import type { TreeKind } from './tree-kind.ts'

/** What the table needs from the peer around it. */
export interface TreeHost {
  readonly self: PeerId
  owned (): IntervalSet
  isAlive (peer: PeerId): boolean
  sendOp (to: PeerId, op: TreeOp): void
  parentChanged (kind: TreeKind, root: PeerId, parent: PeerId | null): void
  /** This peer took a new parent in its latency tree of `root`, or its parent reported a larger distance than before: the parent's RTT and distance (see Probing.detourSeen). */
  latParentDist? (now: number, root: PeerId, parentRttMs: number, parentDistMs: number): void
  /** False while peers may still name this one their parent unknown to it (a restart before its crash was noticed): a leaf's checks are then full ones. Absent: true. */
  mayShortCheck? (now: number): boolean
  /** Some tree got much better (trees/tree-news.ts): called from `flush`, at most once per call. */
  treeNews? (): void
  /** The RTT from which a link counts as far (a cluster crossing; trees/tree-entries.ts); Infinity or absent: none is. */
  farRttMs? (): number
  /** This peer's cluster tag, reported with its cluster entries (trees/tree-entries.ts); absent: none. */
  clusterTag? (): readonly PeerId[]
  /** Whether `root` keeps trees (overlay/tree-roots.ts); absent: every peer does. */
  isTreeRoot? (root: PeerId): boolean
  /** A `disown` took this peer's parent in a tree (003: probe again after the loss of a parent). */
  parentLost? (now: number): void
}

/** Counters of tree activity. */
export interface TreeStats { parentChanges: number, checksRejected: number, attachesAborted: number }
