/**
 * MPICH's broadcast and reduction algorithms over a group of peers (R. Thakur, R.
 * Rabenseifner, W. Gropp, "Optimization of Collective Communication Operations in
 * MPICH", IJHPCA 2005; the MPICH-like baseline of 003 §II-A and §V). Used on all peers
 * by the `mpich` baseline and inside each cluster by `magpie`.
 *
 * Broadcast (MPIR_Bcast_intra), by payload size m and group size n:
 * - m < 12288 B (MPIR_BCAST_SHORT_MSG) or n < 8 (MPIR_BCAST_MIN_PROCS): binomial tree.
 * - m < 524288 B (MPIR_BCAST_LONG_MSG) and n a power of two: binomial scatter, then
 *   recursive-doubling allgather.
 * - otherwise: binomial scatter, then ring allgather.
 * Reduction: binomial tree (the brief's "binomial reduction"; MPICH's Rabenseifner
 * reduce-scatter/gather for long arrays is not modelled).
 */
import type { Topology } from '../sim/network.ts'
import { Rng } from '../sim/rng.ts'
import type { BaselineImpl } from './baseline.ts'
import { Plan, elementAligned, segments } from './plan.ts'
import { binomialTree, ceilPow2, treeBroadcast, treeReduce } from './trees.ts'
import type { MpichRankOrder } from './types.ts'

/** MPIR_BCAST_SHORT_MSG. */
export const MPICH_BCAST_SHORT_MSG = 12_288
/** MPIR_BCAST_LONG_MSG. */
export const MPICH_BCAST_LONG_MSG = 524_288
/** MPIR_BCAST_MIN_PROCS. */
export const MPICH_BCAST_MIN_PROCS = 8

export type MpichBcastAlgorithm = 'binomial' | 'scatter-recursive-doubling' | 'scatter-ring'

/** The algorithm MPICH picks for `bytes` over `n` ranks. */
export function mpichBcastAlgorithm(bytes: number, n: number): MpichBcastAlgorithm {
  if (bytes < MPICH_BCAST_SHORT_MSG || n < MPICH_BCAST_MIN_PROCS) return 'binomial'
  if (bytes < MPICH_BCAST_LONG_MSG && (n & (n - 1)) === 0) return 'scatter-recursive-doubling'
  return 'scatter-ring'
}

/**
 * Rank order of a topology-unaware launcher: rank r runs on the returned peer r. See
 * `BaselineInit.mpichRankOrder`.
 */
export function mpichRanks(topology: Topology, order: MpichRankOrder, seed: number): number[] {
  const n = topology.peerCount
  const peers = Array.from({ length: n }, (_, i) => i)
  if (order === 'cluster') return peers
  if (order === 'shuffled') return new Rng(seed).fork('mpich-rank-order').shuffle(peers)
  // round-robin: one peer of each cluster in turn, skipping exhausted clusters.
  const queues = topology.clusters.map(c => Array.from({ length: c.peers }, (_, i) => c.firstPeer + i))
  const out: number[] = []
  while (out.length < n) for (const q of queues) if (q.length > 0) out.push(q.shift() as number)
  return out
}

/**
 * Adds MPICH's broadcast of `[0, bytes)` over `group` from rank `rootRank` with `algorithm`
 * (by default MPICH's choice); returns the algorithm used. Every message is at most `segmentBytes` (a long scatter block goes as
 * several messages, as TCP would stream it).
 */
export function mpichBroadcast(plan: Plan, group: readonly number[], rootRank: number, bytes: number, segmentBytes: number, stream = 0, algorithm = mpichBcastAlgorithm(bytes, group.length)): MpichBcastAlgorithm {
  const n = group.length
  if (n === 1) return algorithm
  if (algorithm === 'binomial') {
    treeBroadcast(plan, binomialTree(group, rootRank), bytes, segmentBytes, 'child-major', stream)
    return algorithm
  }
  const peer = (rel: number): number => group[(rel + rootRank) % n] as number
  const blockBytes = Math.ceil(bytes / n)
  const blockStart = (rel: number): number => Math.min(rel * blockBytes, bytes)
  const sendBlocks = (from: number, to: number, firstRel: number, endRel: number): void => {
    const a = blockStart(firstRel)
    const b = blockStart(Math.min(endRel, n))
    if (b > a) for (const [s, e] of segments(a, b, segmentBytes)) plan.send(from, to, s, e, 1, stream)
  }
  // Binomial scatter: relative rank r forwards to child r + mask the blocks of its subtree.
  for (let rel = 0; rel < n; rel++) {
    const low = rel === 0 ? ceilPow2(n) : rel & -rel
    for (let mask = low >> 1; mask > 0; mask >>= 1) {
      if (rel + mask < n) sendBlocks(peer(rel), peer(rel + mask), rel + mask, rel + 2 * mask)
    }
  }
  if (algorithm === 'scatter-ring') {
    // Step i: relative rank r sends block (r - i) mod n to r + 1.
    for (let i = 0; i < n - 1; i++) {
      for (let rel = 0; rel < n; rel++) {
        const blk = (rel - i + n) % n
        sendBlocks(peer(rel), peer((rel + 1) % n), blk, blk + 1)
      }
    }
  } else {
    // Recursive doubling: at step `mask`, r exchanges its aligned group of `mask` blocks with r ^ mask.
    for (let mask = 1; mask < n; mask <<= 1) {
      for (let rel = 0; rel < n; rel++) {
        const first = rel & ~(mask - 1)
        sendBlocks(peer(rel), peer(rel ^ mask), first, first + mask)
      }
    }
  }
  return algorithm
}

/** Adds MPICH's binomial reduction of `[0, bytes)` over `group` to rank `rootRank`, pipelined per segment. */
export function mpichReduce(plan: Plan, group: readonly number[], rootRank: number, bytes: number, segmentBytes: number, stream = 0): void {
  treeReduce(plan, binomialTree(group, rootRank), bytes, segmentBytes, stream)
}

/**
 * The `mpich` baseline: MPICH's algorithms over all peers in the launcher's rank order
 * (the root keeps its peer; ranks are only a numbering), blind to the clusters.
 */
export const mpich: BaselineImpl = {
  broadcast(topology, root, bytes, config) {
    const ranks = mpichRanks(topology, config.mpichRankOrder, config.seed)
    const plan = new Plan(bytes)
    const algorithm = mpichBroadcast(plan, ranks, ranks.indexOf(root), bytes, config.segmentBytes)
    return { plan, params: { algorithm, rankOrder: config.mpichRankOrder, seed: config.seed, segmentBytes: config.segmentBytes, shortMsgBytes: MPICH_BCAST_SHORT_MSG, longMsgBytes: MPICH_BCAST_LONG_MSG, minProcs: MPICH_BCAST_MIN_PROCS } }
  },
  reduce(topology, root, elements, config) {
    const ranks = mpichRanks(topology, config.mpichRankOrder, config.seed)
    const bytes = elements * config.elementBytes
    const plan = new Plan(bytes)
    const segmentBytes = elementAligned(config.segmentBytes, config.elementBytes)
    mpichReduce(plan, ranks, ranks.indexOf(root), bytes, segmentBytes)
    return { plan, params: { algorithm: 'binomial', rankOrder: config.mpichRankOrder, seed: config.seed, segmentBytes, elementBytes: config.elementBytes } }
  }
}
