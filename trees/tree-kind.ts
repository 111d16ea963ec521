/**
 * The two kinds of tree every root has (003 §IV-B, §IV-C), and how a tree is named.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'

/** `lat`: latency-aware tree; `bw`: bandwidth-aware tree. */
export type TreeKind = 'lat' | 'bw'

/** Both kinds, in the order they are iterated everywhere. */
export const TREE_KINDS: readonly TreeKind[] = ['lat', 'bw']

/** A tree's key: its kind and its root. */
export function treeKey (kind: TreeKind, root: PeerId): string {
  return `${kind}:${root}`
}
