/**
 * Cluster entries of a bandwidth tree: where the tree crosses a far link. A peer whose
 * parent is far (its RTT to the parent at least a few times its nearest peer's) is an
 * entry; it reports itself up the tree with the virtual nodes reachable through it but
 * not through entries further down, and every peer passes its children's entries on with
 * its reach. The root thus knows one entry per cluster its tree enters, and what each
 * cluster's part of the tree reaches, which is what a striped broadcast needs
 * (overlay/stripes.ts). Lists are bounded; most subtrees have none.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeEntry, TreeOp } from './tree-ops.ts'
import type { TreeState } from './tree-state.ts'

/** Entries one subtree reports at most (the rest are dropped: their parts stay with the tree). */
export const MAX_TREE_ENTRIES = 16

const NONE: readonly TreeEntry[] = Object.freeze([])

/**
 * The entries of a subtree: this peer first when it is an entry (with its reach minus the
 * nested entries' parts, and its cluster tag `near` when it has one), then its children's,
 * in child order, at most MAX_TREE_ENTRIES.
 */
export function subtreeEntries (self: PeerId, isEntry: boolean, reach: IntervalSet, children: Iterable<readonly TreeEntry[]>, near?: readonly PeerId[]): readonly TreeEntry[] {
  let below: TreeEntry[] | null = null
  for (const list of children) {
    if (list.length === 0) continue
    below ??= []
    for (const e of list) {
      if (below.length >= MAX_TREE_ENTRIES) break
      below.push(e)
    }
  }
  if (!isEntry) return below ?? NONE
  const nested = below === null ? IntervalSet.EMPTY : IntervalSet.unionAll(below.map((e) => e.reach))
  const mine: TreeEntry = near !== undefined && near.length > 0 ? { peer: self, reach: reach.difference(nested), near } : { peer: self, reach: reach.difference(nested) }
  return below === null ? [mine] : [mine, ...below.slice(0, MAX_TREE_ENTRIES - 1)]
}

/** Whether two entry lists are the same (same peers, reaches and cluster tags, same order). */
export function sameEntries (a: readonly TreeEntry[], b: readonly TreeEntry[]): boolean {
  if (a === b) return true
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as TreeEntry
    const y = b[i] as TreeEntry
    if (x.peer !== y.peer || !x.reach.equals(y.reach) || !sameTag(x.near, y.near)) return false
  }
  return true
}

function sameTag (a: readonly PeerId[] | undefined, b: readonly PeerId[] | undefined): boolean {
  if (a === b) return true
  if ((a?.length ?? 0) !== (b?.length ?? 0)) return false
  return (a ?? []).every((p, i) => p === b?.[i])
}

/** The empty list, shared. */
export const NO_ENTRIES = NONE

/** Whether `st` may have entries to report: a bandwidth tree where this peer, or a child's subtree, is one. */
export function hasEntries (st: TreeState): boolean {
  return st.kind === 'bw' && (st.entry || st.childEntries.size > 0)
}

/** Records what a child reported of the cluster entries below it (bandwidth trees only). */
export function setChildEntries (st: TreeState, child: PeerId, entries: readonly TreeEntry[] | undefined): void {
  if (entries === undefined || entries.length === 0 || st.kind !== 'bw') st.childEntries.delete(child)
  else st.childEntries.set(child, entries)
}

/** Judges every tree's parent link against `farMs` again; returns the trees whose entry flag changed. */
export function judgeEntryLinks (trees: Iterable<TreeState>, farMs: number): TreeState[] {
  const changed: TreeState[] = []
  for (const st of trees) {
    const entry = st.parent !== null && st.parentRttMs >= farMs
    if (entry !== st.entry) { st.entry = entry; changed.push(st) }
  }
  return changed
}

/** An `adopt` or `reach` op with the subtree's entries, when it has any. */
export function withEntries<T extends Extract<TreeOp, { op: 'adopt' | 'reach' }>> (op: T, entries: readonly TreeEntry[]): T {
  return entries.length === 0 ? op : { ...op, entries }
}
