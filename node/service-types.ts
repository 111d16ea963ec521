/**
 * The options and results of a treecast node's service (node/treecast-service.ts), and
 * the node-level defaults of the core's options.
 */
import type { CoreInit } from '../overlay/config.ts'
import type { CombineFn } from '../overlay/reduce-ops.ts'
import type { ContributeFn } from '../overlay/reduction.ts'
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { TreeKind } from '../trees/tree-kind.ts'
import type { NodeNetInit } from './config.ts'

/**
 * The RTT survey of a starting node (the core's `nearSurveyCount`): 6 peers, not the
 * core's 32. Each survey ping to a peer not yet connected includes a dial; 24 peers in one
 * process surveying 32 each at once timed out and reported live peers down, 6 each settle.
 * On 24 real peers in 4 emulated clusters it cuts the latency tree's wide-area edges from
 * 10-15 to 4-5 and 128 KB broadcasts from 238-320 ms to 151-161 ms (EXPERIMENTS.md,
 * gossipsub-compare).
 */
export const NODE_NEAR_SURVEY_COUNT = 6

/**
 * The payload bytes per chunk of a node (the core's `chunkBytes`): 63 KiB, not the core's
 * 64 KiB, so that a chunk's frame (its header, usually under 200 bytes, and its data) fits
 * in one Noise message of at most 65,519 bytes with Yamux's header (node/frame-channel.ts
 * `BATCH_BYTES`). A 64 KiB chunk crossed as a full Noise message and a small one.
 */
export const NODE_CHUNK_BYTES = 63 * 1024

/** Options of a treecast node; every field has a default. */
export interface TreecastInit extends NodeNetInit {
  /**
   * Protocol options (probe size, switch point, chunk size, timeouts...): see `CoreInit`.
   * `failureDetectionTimeoutMs` defaults to this init's value, `probePingCount` to 2 and
   * `nearSurveyCount` to {@link NODE_NEAR_SURVEY_COUNT} (6; the core's 32 would dial 32 peers
   * at once at start).
   * Many peers in one process measure each other badly during their cold start; set
   * `steadyProbeIntervalMs` (e.g. 1000) there so trees keep improving (node/README.md).
   * @default {}
   */
  core?: CoreInit
  /**
   * The application's contribution to a reduction for a set of owned virtual nodes.
   * @default zeros
   */
  contribute?: ContributeFn
  /**
   * Custom reduction operations by name (sum, prod, min, max, band, bor, bxor are built in).
   * @default {}
   */
  ops?: Readonly<Record<string, CombineFn>>
  /**
   * Uniform random numbers in [0,1) for probe targets. Inject a seeded one for tests.
   * @default Math.random
   */
  random?: () => number
  /**
   * How long `join()` waits for the contact's answer.
   * @default 30000
   */
  joinTimeoutMs?: number
  /**
   * After an eviction (the others declared this peer dead while it was alive), how many
   * members to try, one after the other, to rejoin through, each time as a new incarnation
   * asking for the virtual nodes owned when evicted (node/rejoin.ts). 0: stay out (the
   * daemon exits instead, so that its supervisor restarts it).
   * @default 3
   */
  rejoinAttempts?: number
}

/** Options of one broadcast. */
export interface BroadcastOptions {
  /** Which tree: 'auto' picks by size against the switch point. @default 'auto' */
  mode?: 'auto' | TreeKind
  /**
   * A virtual node: the broadcast is rooted at its owner, which receives the payload from
   * here and broadcasts it from its own trees. @default this peer is the root
   */
  root?: number
}

/** A broadcast in flight. */
export interface BroadcastHandle {
  readonly id: string
  /** Resolves when every virtual node has it (all acknowledgements in at the root). */
  readonly done: Promise<void>
}

/** A completed reduction. */
export interface ReduceResult {
  readonly id: string
  readonly value: Float64Array
  readonly covered: IntervalSet
  readonly durationMs: number
}

/** Tree neighbours of this peer for one root. */
export interface TreeView {
  readonly kind: TreeKind
  readonly root: string
  readonly parent: string | null
  readonly children: readonly string[]
  /** lat: distance to the root (ms); bw: estimated rate from the root (bytes/s). */
  readonly metric: number
}
