/**
 * Tombstones of dropped trees (trees/tree-table.ts, file comment): when a root's trees are
 * dropped (it died or restarted), their locks and the children that have not answered
 * their `disown` are kept here, by kind then root, so that a remade tree starts from them
 * and is no leaf until every former child has answered. Bounded: past MAX_TOMBSTONES the
 * oldest is dropped.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeKind } from './tree-kind.ts'
import { TREE_KINDS } from './tree-kind.ts'
import { forgetAnswered, forgetOrigin, forgetRestarted, holdDisowned, type Tombstone } from './tree-state.ts'

/** Trees of dead roots whose former children have not answered yet, at most (oldest dropped). */
export const MAX_TOMBSTONES = 4096

/** The tombstones of one peer's dropped trees. */
export class Tombstones {
  private readonly byKind: Record<TreeKind, Map<PeerId, Tombstone>> = { lat: new Map(), bw: new Map() }

  /** Takes (and forgets) the tombstone of `root`'s `kind` tree: the remade tree starts from it. */
  take (kind: TreeKind, root: PeerId): Tombstone | undefined {
    const tomb = this.byKind[kind].get(root)
    this.byKind[kind].delete(root)
    return tomb
  }

  /** Keeps a dropped tree's locks and unanswered children, unless it has none. */
  keep (kind: TreeKind, root: PeerId, tomb: Tombstone): void {
    if (tomb.locks.size === 0 && tomb.unanswered.size === 0) return
    const tombs = this.byKind[kind]
    if (tombs.size >= MAX_TOMBSTONES) tombs.delete(tombs.keys().next().value as PeerId)
    tombs.set(root, tomb)
  }

  /** `child` adopted this peer in a tree it does not have: disowned, it may still point here until it answers. */
  holdDisowned (kind: TreeKind, root: PeerId, child: PeerId): void {
    holdDisowned(this.byKind[kind], root, child, MAX_TOMBSTONES)
  }

  /** `origin` answered check `id` (or a disown, `id` null) in a dropped tree. */
  answered (kind: TreeKind, root: PeerId, origin: PeerId, id: number | null): void {
    const tomb = this.byKind[kind].get(root)
    if (tomb !== undefined && forgetAnswered(tomb, origin, id)) this.byKind[kind].delete(root)
  }

  /**
   * `peer` is gone: its locks and answers are forgotten; `restarted`: the new incarnation's
   * checks keep their locks, and `disown` is called where it must be disowned again.
   */
  peerGone (peer: PeerId, restarted: { keepsCheck: (id: number) => boolean } | undefined, disown: (kind: TreeKind, root: PeerId) => void): void {
    for (const kind of TREE_KINDS) {
      for (const [root, tomb] of this.byKind[kind]) {
        if (restarted === undefined) forgetOrigin(tomb, peer)
        else if (forgetRestarted(tomb, peer, restarted.keepsCheck, false)) disown(kind, root)
        if (tomb.unanswered.size === 0 && tomb.locks.size === 0) this.byKind[kind].delete(root)
      }
    }
  }
}
