/**
 * What trees exchange: the per-tree state a candidate reports in a probe, and the tree
 * maintenance operations (overlay/messages.ts carries them on the wire).
 */
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeKind } from './tree-kind.ts'

/** One tree as a candidate reports it in a probe. `dist`/`est` are -1 when not connected. */
export interface ProbeTreeEntry {
  readonly root: PeerId
  readonly dist: number
  readonly est: number
  readonly latChildren: number
  readonly bwChildren: number
  /** Hops from the root in the bandwidth tree (-1: not connected; absent: not reported, `bwTieDepthHops` 0 or an older peer). */
  readonly bwDepth?: number
}

/**
 * A cluster entry of a bandwidth tree (overlay/stripes.ts): a peer whose link to its parent
 * is far (a wide-area edge), with the virtual nodes reachable through it but not through
 * the entries below it. Subtrees report their entries up with their reach, so a root
 * knows where its tree crosses into other clusters.
 */
export interface TreeEntry {
  readonly peer: PeerId
  readonly reach: IntervalSet
  /**
   * The entry's cluster tag (overlay/cluster-tag.ts): the smallest ids among itself and the
   * peers it measured near. Two entries whose tags share an id are in one cluster, so a
   * striped broadcast sends them one stripe, not two over the same wide-area link.
   */
  readonly near?: readonly PeerId[]
}

/** Tree maintenance operations, batched per neighbour. */
export type TreeOp =
  /**
   * A parent-change check on its way from the candidate up to the root. `short`: the origin
   * has no descendants, so only the candidate is asked (it locks itself and answers with its
   * own distance) instead of the whole path.
   */
  | { readonly op: 'check', readonly kind: TreeKind, readonly root: PeerId, readonly id: number, readonly origin: PeerId, readonly dist: number, readonly path: readonly PeerId[], readonly short?: true }
  | { readonly op: 'result', readonly kind: TreeKind, readonly root: PeerId, readonly id: number, readonly ok: boolean, readonly dist: number, readonly path: readonly PeerId[] }
  | { readonly op: 'adopt', readonly kind: TreeKind, readonly root: PeerId, readonly reach: IntervalSet, /** bw(child,parent) as the child measured it (bandwidth tree; 0 otherwise). */ readonly bw: number, readonly entries?: readonly TreeEntry[] }
  /** Child to its old parent: remove me from your children. */
  | { readonly op: 'detach', readonly kind: TreeKind, readonly root: PeerId }
  /** To a peer that thinks it is our child: it is not (we do not know that tree, or it as a child there). */
  | { readonly op: 'disown', readonly kind: TreeKind, readonly root: PeerId }
  | { readonly op: 'unlock', readonly kind: TreeKind, readonly root: PeerId, readonly id: number, readonly origin: PeerId }
  /** The subtree's reach, and on bandwidth trees its cluster entries (absent: none). */
  | { readonly op: 'reach', readonly kind: TreeKind, readonly root: PeerId, readonly reach: IntervalSet, readonly entries?: readonly TreeEntry[] }
  /** lat: the parent's distance; bw: this peer's estimate as the parent computes it, and with `bwTieDepthHops` the parent's depth. */
  | { readonly op: 'metric', readonly kind: TreeKind, readonly root: PeerId, readonly value: number, readonly depth?: number }

/** Peers a check passes at most (its path): a longer check is refused, a longer result ignored. */
export const MAX_CHECK_PATH = 1024

/**
 * The answers to tree ops from a peer whose messages are dropped (an incarnation held
 * dead, or a stranger): one that names this peer its parent (`adopt`, `reach`) is told it
 * is not. It may be a newer incarnation that attached here before this peer heard of it,
 * and it would otherwise point here unknown to this peer, which could then close a cycle
 * as a leaf. A `disown` gets the `detach` its sender waits for (holding its tree no leaf):
 * it may be a newer incarnation that heard of this peer's restart before this peer heard of it.
 */
export function disownsFor (ops: readonly TreeOp[]): TreeOp[] {
  const out: TreeOp[] = []
  for (const op of ops) {
    if (op.op === 'adopt' || op.op === 'reach') out.push({ op: 'disown', kind: op.kind, root: op.root })
    else if (op.op === 'disown') out.push({ op: 'detach', kind: op.kind, root: op.root })
  }
  return out
}
