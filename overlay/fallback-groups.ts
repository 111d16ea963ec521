/**
 * Rule III's fan-out for bandwidth-tree broadcasts (`fallbackFanout`): what the tree does
 * not reach from a peer goes to a few owners that route it on, not one copy per owner.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'

/**
 * Rule III for long payloads: the owners left after the tree, in virtual-node order, cut
 * into at most `fanout` contiguous groups; each group's part goes to its first owner, which
 * delivers its own and routes the rest the same way (its tree first). A peer whose subtree
 * went away at once (a leaver, or a parent whose children left) then sends two copies of a
 * 4 MB broadcast instead of one per owner (fig9: about 100), and the part still reaches
 * every owner in about log2(owners) pipelined hops. `fanout` 0: one route per owner (003).
 */
export function fallbackGroups (owners: ReadonlyArray<[PeerId, IntervalSet]>, fanout: number): Array<[PeerId, IntervalSet]> {
  if (fanout <= 0 || owners.length <= fanout) return [...owners]
  const out: Array<[PeerId, IntervalSet]> = []
  for (let g = 0; g < fanout; g++) {
    const lo = Math.floor(g * owners.length / fanout)
    const hi = Math.floor((g + 1) * owners.length / fanout)
    const group = owners.slice(lo, hi)
    const head = group[0]
    if (head === undefined) continue
    out.push([head[0], IntervalSet.unionAll(group.map((x) => x[1]))])
  }
  return out
}
