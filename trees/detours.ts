/**
 * Detours in latency trees (used by the optional detour probes, overlay/probing.ts): a peer
 * whose parent is far and is itself far from the root reaches the root through two far
 * hops (a third cluster) where one could do.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeTable } from './tree-table.ts'

/**
 * Whether this peer's latency tree of `root` runs through a detour: its parent is far (RTT
 * at least `farRttMs`) and itself at least `farRttMs` from the root.
 */
export function isDetour (table: Pick<TreeTable, 'get'>, root: PeerId, farRttMs: number): boolean {
  const st = table.get('lat', root)
  if (st === undefined || st.parent === null || st.parent === root) return false
  return st.parentRttMs >= farRttMs && st.metric - st.parentRttMs >= farRttMs
}

/** Roots of the latency trees of `table` reached through a detour, longest detour first, at most `max`. */
export function detourRoots (table: Pick<TreeTable, 'get' | 'all'>, farRttMs: number, max: number): PeerId[] {
  const found: Array<[PeerId, number]> = []
  for (const st of table.all()) {
    if (st.kind === 'lat' && isDetour(table, st.root, farRttMs)) found.push([st.root, st.metric - st.parentRttMs])
  }
  found.sort((a, b) => b[1] - a[1])
  return found.slice(0, max).map(([root]) => root)
}
