/**
 * The contract between the static baselines (experiments/baselines/) and the experiments
 * that compare treecast with them (experiments/figures/). Every baseline runs on the
 * simulator's network model (experiments/sim/network.ts: same topology, same links, same
 * per-message CPU cost) as a fixed schedule of sends, so its figures and treecast's come
 * from the same model in the same run.
 */
import type { Topology, TopologyInit } from '../sim/network.ts'

/** The static baselines of issue 5. */
export type BaselineName = 'mpich' | 'magpie' | 'mpich-g2' | 'list' | 'model'

/** Every baseline, in the order tables and plots show them. */
export const BASELINES: readonly BaselineName[] = ['mpich', 'magpie', 'mpich-g2', 'list', 'model']

/** Options shared by the baselines; each field has a default. */
export interface BaselineInit {
  /**
   * Segment size for pipelined algorithms (list, scatter/allgather, segmented trees) when
   * the algorithm does not choose its own (the model-driven one does).
   * @default 65536 (treecast's default chunk size, so both pay the same per-message cost)
   */
  segmentBytes?: number
  /**
   * Per-message header bytes added to every send (treecast's messages carry headers too).
   * @default 32
   */
  headerBytes?: number
  /**
   * Bytes per reduction array element.
   * @default 8
   */
  elementBytes?: number
  /**
   * How the topology-unaware MPICH-like baseline numbers its ranks (it cannot see the
   * clusters, so rank order is whatever the launcher gave): 'shuffled' (a random
   * permutation drawn from `seed`), 'round-robin' (rank r on cluster r mod k, like a host
   * list that cycles over the sites) or 'cluster' (peer order, cluster by cluster: the
   * luckiest case, where a binomial tree crosses few wide-area links).
   * @default 'shuffled'
   */
  mpichRankOrder?: MpichRankOrder
  /**
   * Seed of the random choices (only the 'shuffled' MPICH rank order draws any).
   * @default 1
   */
  seed?: number
}

/** See {@link BaselineInit.mpichRankOrder}. */
export type MpichRankOrder = 'shuffled' | 'round-robin' | 'cluster'

/** The outcome of one collective run by a baseline on the modelled network. */
export interface CollectiveResult {
  baseline: BaselineName
  /** Per peer (index = peer number): ms from the start until that peer holds the whole payload; 0 at the root. For a reduction: NaN except at the root, which holds the result. */
  arrivalMs: Float64Array
  /** ms from the start until the last peer holds the payload (broadcast) or the root holds the result (reduction). */
  completionMs: number
  /** Messages sent (segments count one each). */
  messages: number
  /** Bytes sent, headers included. */
  bytes: number
  /** Bytes that crossed wide-area links. */
  wanBytes: number
  /**
   * Bytes sent from cluster `from` to cluster `to`, headers included, as
   * `bytesFromTo[from][to]` (the diagonal is the traffic inside a cluster).
   */
  bytesFromTo?: number[][]
  /** What the algorithm chose, for the experiment's output (algorithm, segment size, tree shape...). */
  params: Record<string, string | number | boolean>
}

/** Lower bounds of the modelled network for a broadcast from `root`. */
export interface LowerBounds {
  /** The largest one-way propagation delay from the root to any peer, ms. */
  latencyMs: number
  /** The minimum cut separating the root from some peer (max-flow), bytes per second. */
  minCutBytesPerSec: number
  /** `bytes / minCutBytesPerSec` in ms: no broadcast of `bytes` can finish sooner. */
  bandwidthMs: number
}

/** The functions experiments/baselines/index.ts exports. */
export interface BaselinesApi {
  broadcast(name: BaselineName, topology: TopologyInit | Topology, root: number, bytes: number, init?: BaselineInit): CollectiveResult
  reduce(name: BaselineName, topology: TopologyInit | Topology, root: number, elements: number, init?: BaselineInit): CollectiveResult
  lowerBounds(topology: TopologyInit | Topology, root: number, bytes: number): LowerBounds
}
