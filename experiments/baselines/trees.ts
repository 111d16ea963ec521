/**
 * Tree shapes over a group of peers and the generic ways to run a broadcast or a
 * reduction along a tree. A group is an array of peers indexed by rank; shapes use ranks
 * relative to the group's root rank, like MPICH.
 */
import type { Topology } from '../sim/network.ts'
import { segments } from './plan.ts'
import type { Plan } from './plan.ts'

/** A tree over peers: `children.get(p)` in send order; `parent.get(p)` undefined at the root. */
export interface Tree {
  readonly root: number
  readonly children: Map<number, number[]>
  readonly parent: Map<number, number>
}

function emptyTree(root: number): Tree {
  return { root, children: new Map(), parent: new Map() }
}

function link(t: Tree, parent: number, child: number): void {
  const cs = t.children.get(parent)
  if (cs === undefined) t.children.set(parent, [child])
  else cs.push(child)
  t.parent.set(child, parent)
}

/** Smallest power of two >= n. */
export function ceilPow2(n: number): number {
  let m = 1
  while (m < n) m <<= 1
  return m
}

/**
 * MPICH's binomial tree over `group` rooted at rank `rootRank`: relative rank r's parent is
 * r with its lowest set bit cleared; its children are r + mask for every power of two
 * mask below that bit, sent to in decreasing mask order (largest subtree first) for a
 * broadcast. `ceil(log2 n)` rounds.
 */
export function binomialTree(group: readonly number[], rootRank: number): Tree {
  const n = group.length
  const peer = (rel: number): number => group[(rel + rootRank) % n] as number
  const t = emptyTree(peer(0))
  for (let rel = 0; rel < n; rel++) {
    const low = rel === 0 ? ceilPow2(n) : rel & -rel
    for (let mask = low >> 1; mask > 0; mask >>= 1) {
      if (rel + mask < n) link(t, peer(rel), peer(rel + mask))
    }
  }
  return t
}

/** A flat tree: `root` sends to every other member of `group`, in group order. */
export function flatTree(group: readonly number[], root: number): Tree {
  const t = emptyTree(root)
  for (const p of group) if (p !== root) link(t, root, p)
  return t
}

/** A chain through `order` (order[0] is the root). */
export function chainTree(order: readonly number[]): Tree {
  const t = emptyTree(order[0] as number)
  for (let i = 1; i < order.length; i++) link(t, order[i - 1] as number, order[i] as number)
  return t
}

/** Depth of the deepest peer of `t` (0 for a lone root). */
export function treeDepth(t: Tree): number {
  let max = 0
  const walk = (p: number, d: number): void => {
    max = Math.max(max, d)
    for (const c of t.children.get(p) ?? []) walk(c, d + 1)
  }
  walk(t.root, 0)
  return max
}

/** Peers of each cluster, in peer order. */
export function clusterMembers(topology: Topology): number[][] {
  return topology.clusters.map(c => Array.from({ length: c.peers }, (_, i) => c.firstPeer + i))
}

/** The coordinator of each cluster: the root in its own cluster (root substitution), else the cluster's first peer. */
export function coordinators(topology: Topology, root: number): number[] {
  const rc = topology.clusterOf(root)
  return topology.clusters.map((c, i) => i === rc ? root : c.firstPeer)
}

/**
 * How a parent sends the payload to its children: 'child-major' sends the whole payload
 * to one child, then to the next (MPICH's blocking sends along a binomial tree);
 * 'segment-major' sends each segment to every child before the next segment (concurrent
 * non-blocking sends sharing the uplink, and a pipelined tree).
 */
export type SendOrder = 'child-major' | 'segment-major'

/** Adds a broadcast of `[0, bytes)` along `tree` (every parent forwards what it receives). */
export function treeBroadcast(plan: Plan, tree: Tree, bytes: number, segmentBytes: number, order: SendOrder, stream = 0): void {
  const segs = segments(0, bytes, segmentBytes)
  for (const [p, cs] of tree.children) {
    if (order === 'child-major') {
      for (const c of cs) for (const [a, b] of segs) plan.send(p, c, a, b, 1, stream)
    } else {
      for (const [a, b] of segs) for (const c of cs) plan.send(p, c, a, b, 1, stream)
    }
  }
}

/**
 * Adds a reduction of `[0, bytes)` up `tree`: each non-root peer sends each segment to its
 * parent once it has combined that segment from all its children (pipelined per segment).
 * `extraNeed(p)` adds children outside `tree` (the wide-area children of a coordinator).
 */
export function treeReduce(plan: Plan, tree: Tree, bytes: number, segmentBytes: number, stream = 0, extraNeed: (p: number) => number = () => 0): void {
  const segs = segments(0, bytes, segmentBytes)
  for (const [p, parent] of tree.parent) {
    const need = (tree.children.get(p)?.length ?? 0) + extraNeed(p)
    for (const [a, b] of segs) plan.send(p, parent, a, b, need, stream)
  }
}

/** One tree from several over disjoint child sets (a wide-area tree plus one tree per cluster); children keep the order of `trees`. */
export function mergeTrees(root: number, trees: readonly Tree[]): Tree {
  const t = emptyTree(root)
  for (const s of trees) for (const [p, cs] of s.children) for (const c of cs) link(t, p, c)
  return t
}
