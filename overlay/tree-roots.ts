/**
 * Which peers keep trees rooted at them (docs/SCALE.md). With 003's design every peer is
 * a root: N peers each hold 2N trees, which past a few hundred peers is most of what the
 * overlay costs. With a stride s > 1 only the peers whose id hashes to 0 mod s are tree
 * roots (about N/s of them, spread at random over the clusters), and every tree still
 * spans every peer. A peer that is not a tree root broadcasts through the tree of the
 * nearest tree root it knows, from its own place in that tree: down to its children, and
 * up to its parent for everything its subtree does not reach (overlay/streams.ts). This is
 * root substitution (MPICH-G2, paper 000) without the extra hop to the substitute.
 *
 * The rule depends on the peer id alone, so every peer agrees on it without a message,
 * whatever it knows of the membership, and nothing is re-elected on churn. Sans-IO.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeTable } from '../trees/tree-table.ts'
import type { TreeKind } from '../trees/tree-kind.ts'

/** 32-bit FNV-1a of a peer id's UTF-16 code units: stable across runs and machines. */
export function peerHash (peer: PeerId): number {
  let h = 0x811c9dc5
  for (let i = 0; i < peer.length; i++) {
    h ^= peer.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h
}

/** Whether `peer` roots trees under `stride` (1: every peer does, as in 003). */
export function isTreeRoot (peer: PeerId, stride: number): boolean {
  return stride <= 1 || peerHash(peer) % stride === 0
}

/**
 * The tree a broadcast or reduction started at `self` travels: its own when it is a tree
 * root, else the live tree root nearest by `distanceOf` (the core gives this peer's
 * distance to the root in its latency tree, else the RTT it measured; undefined: unknown),
 * then by the smallest hash. `null` when no live tree root is known: the stream is then sent
 * point-to-point, as from a root whose trees are not built yet.
 */
export function pickTreeRoot (self: PeerId, stride: number, alive: Iterable<PeerId>, distanceOf: (peer: PeerId) => number | undefined): PeerId | null {
  if (isTreeRoot(self, stride)) return self
  let best: PeerId | null = null
  let bestRtt = Infinity
  let bestHash = Infinity
  for (const p of alive) {
    if (p === self || !isTreeRoot(p, stride)) continue
    const rtt = distanceOf(p) ?? Infinity
    const hash = peerHash(p)
    if (rtt < bestRtt || (rtt === bestRtt && (hash < bestHash || (hash === bestHash && best !== null && p < best)))) {
      best = p
      bestRtt = rtt
      bestHash = hash
    }
  }
  return best
}

/** Ranks tree roots this peer has no parent under after every root it has one under. */
const DETACHED_MS = 1e9

/**
 * {@link pickTreeRoot} with the core's distances: first the tree roots under which this
 * peer has a parent in the tree of `kind` the stream will take (from anywhere else it
 * could only go point-to-point), then the rest; within each, this peer's distance to the
 * root in its latency tree of that root, else the RTT it measured. `self` when no live
 * tree root is known (the stream then goes point-to-point).
 */
export function treeRootOf (self: PeerId, stride: number, kind: TreeKind, alive: Iterable<PeerId>, trees: Pick<TreeTable, 'get'>, rttOf: (peer: PeerId) => number | undefined): PeerId {
  return pickTreeRoot(self, stride, alive, (p) => {
    const lat = trees.get('lat', p)
    const dist = lat !== undefined && lat.parent !== null && Number.isFinite(lat.metric) ? lat.metric : rttOf(p)
    if ((trees.get(kind, p)?.parent ?? null) !== null) return dist ?? DETACHED_MS / 2
    return dist === undefined ? undefined : DETACHED_MS + dist
  }) ?? self
}
