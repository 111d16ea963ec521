/**
 * Options of the protocol core. Every field is optional; defaults are named constants and
 * the reason for each is one line beside it.
 */
import { InvalidConfigError } from './errors.ts'
import { MAX_STRIPES } from './stripes.ts'
import { unknownKey } from './unknown-keys.ts'

/** 003 §IV-A: bandwidth is measured by downloading 128 KB from the candidate. */
export const DEFAULT_PROBE_BYTES = 128 * 1024
/** 003 §IV-A: "each processor performs 10 extra measurements". */
export const DEFAULT_PROBE_EXTRA_COUNT = 10
/** A probe that has not answered in this time is abandoned and another peer is tried. */
export const DEFAULT_PROBE_TIMEOUT_MS = 3000
/** 003 §IV-D: latency tree below 256 KB, bandwidth tree from 256 KB on. */
export const DEFAULT_SWITCH_POINT_BYTES = 256 * 1024
/** Pipelining unit: small enough that a deep tree adds little, large enough to amortize headers. */
export const DEFAULT_CHUNK_BYTES = 64 * 1024
/** 003 §IV-E: wait for children up to (factor x largest known distance to a root). */
export const DEFAULT_REDUCE_TIMEOUT_FACTOR = 2
/** Floor of the reduction timeout, for trees whose distances are still unknown or tiny. */
export const DEFAULT_REDUCE_TIMEOUT_MIN_MS = 5
/**
 * A reduction root's first wait between rounds of asking the owners of virtual nodes still
 * missing (at least the reduction timeout); each round waits twice as long as the one
 * before, up to 16x, and an owner asked is not asked again for 16 of these while it is
 * alive and has not answered.
 */
export const DEFAULT_REDUCE_RETRY_MS = 250
/** A reduction still incomplete after this is reported as failed, never left hanging. */
export const DEFAULT_REDUCE_MAX_DURATION_MS = 60_000
/**
 * Partial results of arrays longer than this travel in segments of this size (8 bytes per
 * element), each combined and forwarded on its own, so that they are pipelined up the tree.
 */
export const DEFAULT_REDUCE_SEGMENT_BYTES = 65_536
/**
 * A segmented array is cut into at least 8 segments as long as they keep this size, so
 * that short ones are pipelined too (fig8, 16K elements: 1.48-1.66x MagPIe-like in two
 * 64 KiB segments, 1.07-1.14x in eight of 16 KiB; EXPERIMENTS.md).
 */
export const DEFAULT_REDUCE_MIN_SEGMENT_BYTES = 16_384
/**
 * Reductions of arrays of at least this many bytes combine among near siblings
 * (overlay/combine-plan.ts): a parent receiving k whole partials costs k transfers on one
 * downlink, a binomial tree among the siblings about log2(k) of them plus as many hops of
 * latency. Below one segment the extra hops are not pipelined and cost about what the
 * fan-in saves (fig8: 32 KB arrays 13.4 -> 15.4 ms, 128 KB 35.5 -> 28.4 ms, 1 MiB 202 -> 122 ms).
 */
export const DEFAULT_REDUCE_COMBINE_MIN_BYTES = 65_536
/** 003: every peer roots its own trees (overlay/tree-roots.ts). */
export const DEFAULT_TREE_ROOT_STRIDE = 1
/** A peer with unacknowledged data that stays silent this long (and misses a ping) is declared dead. */
export const DEFAULT_FAILURE_DETECTION_TIMEOUT_MS = 5000
/** Path locks taken by a parent-change check expire after this (if the unlock is lost). */
export const DEFAULT_LOCK_TIMEOUT_MS = 4000
/** A leaving peer waits at most this long for its hand-off and in-flight data to drain. */
export const DEFAULT_LEAVE_TIMEOUT_MS = 10_000
/** Largest broadcast payload accepted (local calls and remote chunk counts). */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024 * 1024
/** Streams whose delivered sets are remembered for de-duplication. */
export const DEFAULT_DEDUPE_CAPACITY = 8192
/** Collectives in flight at one peer; more are rejected (remote) or refused (local). */
export const DEFAULT_MAX_ACTIVE_TRANSFERS = 4096
/** An incomplete transfer with no progress for this long is dropped. */
export const DEFAULT_TRANSFER_IDLE_MS = 120_000
/**
 * Hop limit of a stream's path, against forwarding loops under stale views. A tree path is
 * at most a tree's depth, twice it from a peer that is no tree root (overlay/tree-roots.ts:
 * up, then down), and bandwidth trees were 35-37 deep at 500-2,000 peers (scale).
 */
export const DEFAULT_MAX_HOPS = 256
/** Owners a bandwidth-tree broadcast's leftover goes to at most, from one peer (rule III). */
export const DEFAULT_FALLBACK_FANOUT = 2
/** Elements of a reduced array. */
export const DEFAULT_MAX_REDUCE_LENGTH = 1 << 24
/** Re-routing period for data waiting for a hand-off that has not arrived yet. */
export const DEFAULT_PARK_RETRY_MS = 500
/**
 * Relative tolerance of the tie-breaks added to 003's parent rules (trees/parent-rules.ts);
 * 0 gives 003's rules exactly. Measured figures are never exactly equal on a real network,
 * but they are in a noise-free simulation, where ties would freeze poor trees. It also
 * bounds the latency trees' regrouping (a near candidate at most this much farther from
 * the root takes a peer off a far parent).
 */
export const DEFAULT_TIE_TOLERANCE = 0.05
/**
 * A peer whose connection closed is declared dead only after this grace period, so the
 * facts of a graceful leave still in flight (through a contact) arrive first.
 */
export const DEFAULT_SUSPECT_GRACE_MS = 100
/**
 * Reach and metric updates wait this long, so that the changes a tree sees in a burst (a
 * cold start, a mass leave) travel up and down as one update instead of one each.
 */
export const DEFAULT_TREE_UPDATE_DELAY_MS = 5

/** 0 = no steady-state probing (003); otherwise one probe this often when idle. */
export const DEFAULT_STEADY_PROBE_INTERVAL_MS = 0

/**
 * Three probes in four go to the nearest peers known (003 §VI: "preferentially select
 * nearby processors"); the fourth stays uniformly random so every cluster is still found.
 * Measured (BENCHMARKS.md): 160 peers stable in 1.8 s instead of 3.6 s, a quarter of the
 * wide-area edges; 0.5 gave 1.4-1.6 s at 100 peers against 1.1 s.
 */
export const DEFAULT_PROBE_NEAR_FRACTION = 0.75

/** How long a probe's bandwidth measurement is reused by light probes of the same peer (ms). */
export const DEFAULT_PROBE_BANDWIDTH_REUSE_MS = 10_000

/** The near lane starts at most one probe per this many ms. */
/**
 * The near lane starts at most one probe per this many ms. 10 since striped broadcasts
 * load every wide-area link: the burst's extra probes, drawn by both lanes, end sooner when
 * the near lane takes more of them (fig9's rejoin 0.85 s at seeds 1-3 instead of 0.95-1.14 s),
 * for about 30% more probes, most of them light (EXPERIMENTS.md).
 */
export const DEFAULT_PROBE_NEAR_LANE_GAP_MS = 10
export const DEFAULT_TREE_NEWS_GAP_MS = 50
/** Peers a starting peer pings to find its near peers (overlay/near-survey.ts). */
export const DEFAULT_NEAR_SURVEY_COUNT = 32
/** Probes download only when the bandwidth could change a tree (trees/download-wanted.ts). */
export const DEFAULT_PROBE_DOWNLOAD_ON_DEMAND = true

/**
 * Bandwidth-tree broadcasts are dealt into up to this many stripes, one per cluster their
 * tree enters (overlay/stripes.ts): fig7's 64 MB broadcasts reach about 3x the rate of one
 * tree, close to the minimum cut (EXPERIMENTS.md).
 */
export const DEFAULT_STRIPE_MAX_COUNT = 8
/** Striping starts at the switch point: every bandwidth-tree broadcast is striped. */
export const DEFAULT_STRIPE_MIN_BYTES = 256 * 1024
/**
 * A peer whose own virtual nodes wait for stripes of a broadcast that brought no chunk
 * for this long asks the origin for every chunk (overlay/stripes.ts, `resend`): after a
 * crash, stripes whose custody ended at the crashed peer reach the new owner only so.
 */
export const DEFAULT_STRIPE_RESEND_MS = 2000
/**
 * A peer that roots no trees holds a long broadcast this long at most for its tree root's
 * cluster entries (overlay/stripe-asks.ts): one round trip, inside its cluster as a rule.
 */
export const DEFAULT_STRIPE_ASK_TIMEOUT_MS = 100
/**
 * A bandwidth-tree parent takes at most this many children: striped broadcasts send every
 * stripe along the same tree inside a cluster, so each peer forwards k stripes' worth per
 * child (k wide-area links' rate), and a wider fan-out makes its uplink the bottleneck.
 */
export const DEFAULT_BW_MAX_CHILDREN = 2
/**
 * Off: the depth tie-break (trees/depth-tie.ts) shortens bandwidth trees and fig9 completes
 * 2-4% more broadcasts with 2, but its trees entered clusters through more wide-area edges
 * at two seeds of test/near-survey, and fig9's repairs after the mass leave took longer
 * (EXPERIMENTS.md, thirtieth round).
 */
export const DEFAULT_BW_TIE_DEPTH_HOPS = 0

/** One ping-pong per probe (the node driver uses 2: the first may pay the connection set-up). */
export const DEFAULT_PROBE_PING_COUNT = 1

/** Options of the core. */
export interface CoreInit {
  /** Bytes downloaded to measure bandwidth. @default 131072 */
  probeBytes?: number
  /** Probes after having a parent in every tree. @default 10 */
  probeExtraCount?: number
  /** @default 3000 */
  probeTimeoutMs?: number
  /**
   * 1-byte ping-pongs per probe; the RTT is the smallest. On a real network the first
   * message to a new peer also pays the connection set-up (dial, handshakes), so the node
   * driver uses 2. @default 1
   */
  probePingCount?: number
  /**
   * Share of probes sent to the nearest peers known (measured RTTs and the hints in probe
   * replies) instead of a uniformly random member; 0 = 003's purely random choice. @default 0.75
   */
  probeNearFraction?: number
  /**
   * A second probe lane runs beside the first, always to a near peer (once one is known):
   * near probes (a few ms) then go on while a wide-area probe (100 ms or more on a loaded
   * link) is under way, and ask the same neighbours again as their trees fill. It starts
   * at most one probe per `probeNearLaneGapMs`, and its repeat probes are light
   * (`probeBandwidthReuseMs`). fig9 (160 peers, seed 1): cold start stable at 1.44 s
   * instead of 1.86 s, the rejoin of 80 peers repaired in 0.89 s instead of 1.58 s, for
   * 104 probes per peer instead of 77 (BENCHMARKS.md; before tree news, `treeNewsGapMs`). false: one probe at a time, as in
   * 003. @default true
   */
  probeNearLane?: boolean
  /**
   * When a probe burst ends, and whenever a latency tree's parent changes or reports a
   * longer distance between bursts, the peer probes once (per burst) the root of each
   * latency tree it reaches through a detour: a far parent (RTT at least DETOUR_RTT_FACTOR
   * times its nearest peer's) that is itself at least that far from the root. 003's rules
   * with the tie-break then move it to the direct path. fig6 (201 peers, 003's schedule):
   * 1-byte broadcasts 0.93-0.97x MagPIe-like instead of up to 1.61x; but fig9's rejoin is
   * repaired in 2.00 s instead of 1.58 s and its broadcasts after the leave slow down
   * (EXPERIMENTS.md): off by default. @default false
   */
  probeDetour?: boolean
  /**
   * A probe of a peer whose bandwidth this peer measured at most this long ago is light:
   * it still times the RTT and fetches the tree state, but skips the `probeBytes` download
   * and judges with the bandwidth measured then (a measurement is reused, never refreshed,
   * so a peer is downloaded from again at least once per this interval when probed). 0:
   * every probe downloads, as in 003. @default 10000
   */
  probeBandwidthReuseMs?: number
  /**
   * The near lane (`probeNearLane`) starts a probe at most once per this many ms: light
   * probes of near peers take about one RTT, and unpaced the lane would ask its
   * neighbours every millisecond, mostly about trees that had not changed. @default 10
   */
  probeNearLaneGapMs?: number
  /**
   * Tree news (trees/tree-news.ts, with the near lane only): when some tree of this peer
   * first connects or gets better by a quarter over its best, it tells 8 near peers picked
   * at random (an `offer`), at most once per this many ms, and they probe it in their near
   * lane at once (not paced by `probeNearLaneGapMs`), between bursts too. fig7 (seed 1):
   * 64 MB broadcasts at 94% of List instead of 26%; fig9: 281 broadcasts of 4 MB instead of
   * 84 (eighth round). Since the fourteenth round offers are unpaced: fig9's rejoin
   * repaired in 0.58-0.72 s at seeds 1-3 instead of up to 1.12 s (EXPERIMENTS.md). 0: no news (003's schedule alone decides who is probed).
   * @default 50
   */
  treeNewsGapMs?: number
  /**
   * With the near lane: a peer that has measured nobody yet (it started or rejoined) pings
   * this many peers picked at random, 1 byte each way, so that it knows some near peers
   * (overlay/near-survey.ts). Without it, a peer whose first probes all went to other
   * clusters took those for near ones. 0: no survey. @default 32
   */
  nearSurveyCount?: number
  /**
   * A probe that needs a download first asks for the candidate's tree state alone (as a
   * light probe does) and times the `probeBytes` download only if that state shows the
   * bandwidth could change one of this peer's bandwidth trees (trees/download-wanted.ts: the
   * candidate is the parent there, or the rule would take it at est(c), the best est(p,c)
   * can be). Otherwise only the latency trees are judged. Costs one small round trip on
   * the probes that download; saves the download, which in a cold start crowds the
   * wide-area links, on the others: at 2,000 simulated peers a cold start sends half the
   * messages and a 4 MB broadcast runs at 1.35x its bound instead of 27x; issue 5's
   * simulated targets stay met at seeds 1-3 (docs/SCALE.md, EXPERIMENTS.md, twenty-first
   * round). false: every probe downloads (003). @default true
   */
  probeDownloadOnDemand?: boolean
  /** Payloads of this size or more use the bandwidth tree. @default 262144 */
  switchPointBytes?: number
  /** @default 65536 */
  chunkBytes?: number
  /**
   * Most stripes a bandwidth-tree broadcast is dealt into: one per wide-area edge of this
   * peer's bandwidth tree, each sent to that edge's cluster entry and relayed from there to
   * the other entries, so that every wide-area link carries a stripe (overlay/stripes.ts).
   * Fewer than 2 entries, or more than this: the tree alone carries it. 0 or 1: never
   * striped (003). @default 8
   */
  stripeMaxCount?: number
  /** Bandwidth-tree broadcasts of at least this many bytes are striped. @default 262144 */
  stripeMinBytes?: number
  /**
   * A peer whose own virtual nodes wait for the chunks of a striped broadcast and that got
   * none for this long asks its origin for all of them, once. A crashed peer may have
   * ended a stripe's custody after delivering its virtual nodes; their new owner then gets
   * only the stripes re-routed to it. @default 2000
   */
  stripeResendMs?: number
  /**
   * A peer that roots no trees (`treeRootStride`) asks its tree root for the cluster
   * entries of its bandwidth tree before a broadcast of at least `stripeMinBytes`, and
   * stripes it along that tree from here (overlay/stripe-asks.ts); with no answer within
   * this many ms it sends it unstriped. 0: never asks (such broadcasts go unstriped).
   * @default 100
   */
  stripeAskTimeoutMs?: number
  /**
   * A bandwidth-tree candidate with this many children is not taken as a parent, so a peer
   * forwarding every stripe of a striped broadcast keeps uplink to spare. 0: no limit (003's
   * rule alone, which lets a peer take up to about 10 children behind a wide-area link). @default 2
   */
  bwMaxChildren?: number
  /**
   * Depth tie-break (ours): a bandwidth-tree candidate whose estimate ties with the parent's
   * (no worse than current / (1 + tieTolerance)) takes a peer that would be at least this
   * many hops nearer the root under it, if no farther than the parent (trees/depth-tie.ts).
   * 0: never, as in 003 (probe replies and metric updates then carry no depth). 2 was
   * measured (EXPERIMENTS.md, thirtieth round). @default 0
   */
  bwTieDepthHops?: number
  /**
   * Only the peers whose id hashes to 0 modulo this root trees (overlay/tree-roots.ts,
   * docs/SCALE.md): about N/stride roots instead of N, for overlays of thousands of peers.
   * Others broadcast and start reductions through the nearest tree root's trees. Must be
   * the same on every peer. 1: every peer is a root, as in 003. @default 1
   */
  treeRootStride?: number
  /** @default 2 */
  reduceTimeoutFactor?: number
  /** @default 5 */
  reduceTimeoutMinMs?: number
  /** @default 250 */
  reduceRetryMs?: number
  /** @default 60000 */
  reduceMaxDurationMs?: number
  /**
   * Partial results of longer arrays travel in segments of this many bytes (rounded down
   * to whole 8-byte elements), pipelined up the tree; longer ones if that would make more
   * than 65,536 segments (MAX_REDUCE_SEGMENTS). @default 65536
   */
  reduceSegmentBytes?: number
  /**
   * Arrays that travel in segments are cut into at least 8 of them as long as each keeps
   * this many bytes (capped at `reduceSegmentBytes`), so that they are pipelined deeply
   * enough. @default 16384
   */
  reduceMinSegmentBytes?: number
  /**
   * A peer routing a reduction's start to 3 or more near children arranges them in a
   * binomial tree among themselves, so that it receives one partial instead of one per
   * child (overlay/combine-plan.ts). @default true
   */
  reduceCombine?: boolean
  /** Only for arrays of at least this many bytes (8 per element). @default 65536 */
  reduceCombineMinBytes?: number
  /** @default 5000 */
  failureDetectionTimeoutMs?: number
  /** @default 4000 */
  lockTimeoutMs?: number
  /** @default 10000 */
  leaveTimeoutMs?: number
  /** @default 1 GiB */
  maxPayloadBytes?: number
  /** @default 8192 */
  dedupeCapacity?: number
  /**
   * Collectives (broadcasts, messages, reductions) under way at this peer, its own and those
   * passing through: a remote one past it is rejected, a local call throws TooManyTransfersError.
   * @default 4096
   */
  maxActiveTransfers?: number
  /**
   * A collective under way here with no progress for this long is dropped (once the park
   * timer or the transfer cap looks at it): no chunk arrived here, and no receiver reported
   * progress downstream (`hold`, sent at most every quarter of it: overlay/stream-holds.ts).
   * A receiver that refused a stream or dropped its copy never acknowledges; this frees it.
   * @default 120000
   */
  transferIdleMs?: number
  /** Hops a stream may take (a path can be twice a tree's depth: overlay/tree-roots.ts). @default 256 */
  maxHops?: number
  /**
   * Rule III for broadcasts on the bandwidth tree: the virtual nodes the tree does not
   * reach from here (their subtree is being repaired, or left with a leaver) go to at most
   * this many of their owners, each forwarding its share on the same way, instead of one
   * copy per owner from here (overlay/fallback-groups.ts). Latency-tree broadcasts
   * and reductions always send one copy per owner. 0: one copy per owner (003). @default 2
   */
  fallbackFanout?: number
  /** Elements of a reduced array, at most 2^27 (1 GiB of doubles). @default 16777216 */
  maxReduceLength?: number
  /** @default 500 */
  parkRetryMs?: number
  /** @default 0 (off) */
  /**
   * 0 (003): peers probe only after a membership change. Otherwise an idle peer also probes
   * one random peer this often, so trees built from noisy measurements keep improving and
   * parents' RTTs and rates are refreshed. @default 0
   */
  steadyProbeIntervalMs?: number
  /**
   * Delay before reach and metric updates of the trees are sent (batched); 0 = with the
   * event that caused them. @default 5
   */
  treeUpdateDelayMs?: number
  /** Wait after a closed connection before declaring a crash; 0 = at once. @default 100 */
  suspectGraceMs?: number
  /** Tie-break tolerance of the parent rules; 0 = exactly 003. @default 0.05 */
  tieTolerance?: number
  /** Whom a joiner's default share comes from. @default 'contact' */
  joinPolicy?: 'contact' | 'most-loaded'
}

/** Resolved options. */
export type CoreConfig = Required<CoreInit>

/**
 * The longest time option, in ms (2^31 - 1, about 24.8 days): the longest delay a real
 * node's driver can arm (node/config.ts MAX_TIMER_MS), and far past any sensible value.
 */
export const MAX_TIME_OPTION_MS = 2 ** 31 - 1

/** Resolves defaults and validates; throws InvalidConfigError naming the bad field. */
export function resolveCoreConfig (init: CoreInit = {}): CoreConfig {
  const c: CoreConfig = {
    probeBytes: init.probeBytes ?? DEFAULT_PROBE_BYTES,
    probeExtraCount: init.probeExtraCount ?? DEFAULT_PROBE_EXTRA_COUNT,
    probeTimeoutMs: init.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS,
    probePingCount: init.probePingCount ?? DEFAULT_PROBE_PING_COUNT,
    probeNearFraction: init.probeNearFraction ?? DEFAULT_PROBE_NEAR_FRACTION,
    probeNearLane: init.probeNearLane ?? true,
    probeDetour: init.probeDetour ?? false,
    probeBandwidthReuseMs: init.probeBandwidthReuseMs ?? DEFAULT_PROBE_BANDWIDTH_REUSE_MS,
    probeNearLaneGapMs: init.probeNearLaneGapMs ?? DEFAULT_PROBE_NEAR_LANE_GAP_MS,
    treeNewsGapMs: init.treeNewsGapMs ?? DEFAULT_TREE_NEWS_GAP_MS,
    nearSurveyCount: init.nearSurveyCount ?? DEFAULT_NEAR_SURVEY_COUNT,
    probeDownloadOnDemand: init.probeDownloadOnDemand ?? DEFAULT_PROBE_DOWNLOAD_ON_DEMAND,
    switchPointBytes: init.switchPointBytes ?? DEFAULT_SWITCH_POINT_BYTES,
    chunkBytes: init.chunkBytes ?? DEFAULT_CHUNK_BYTES,
    stripeMaxCount: init.stripeMaxCount ?? DEFAULT_STRIPE_MAX_COUNT,
    stripeMinBytes: init.stripeMinBytes ?? DEFAULT_STRIPE_MIN_BYTES,
    stripeResendMs: init.stripeResendMs ?? DEFAULT_STRIPE_RESEND_MS,
    stripeAskTimeoutMs: init.stripeAskTimeoutMs ?? DEFAULT_STRIPE_ASK_TIMEOUT_MS,
    bwMaxChildren: init.bwMaxChildren ?? DEFAULT_BW_MAX_CHILDREN,
    bwTieDepthHops: init.bwTieDepthHops ?? DEFAULT_BW_TIE_DEPTH_HOPS,
    treeRootStride: init.treeRootStride ?? DEFAULT_TREE_ROOT_STRIDE,
    reduceTimeoutFactor: init.reduceTimeoutFactor ?? DEFAULT_REDUCE_TIMEOUT_FACTOR,
    reduceTimeoutMinMs: init.reduceTimeoutMinMs ?? DEFAULT_REDUCE_TIMEOUT_MIN_MS,
    reduceRetryMs: init.reduceRetryMs ?? DEFAULT_REDUCE_RETRY_MS,
    reduceMaxDurationMs: init.reduceMaxDurationMs ?? DEFAULT_REDUCE_MAX_DURATION_MS,
    reduceSegmentBytes: init.reduceSegmentBytes ?? DEFAULT_REDUCE_SEGMENT_BYTES,
    reduceMinSegmentBytes: init.reduceMinSegmentBytes ?? DEFAULT_REDUCE_MIN_SEGMENT_BYTES,
    reduceCombine: init.reduceCombine ?? true,
    reduceCombineMinBytes: init.reduceCombineMinBytes ?? DEFAULT_REDUCE_COMBINE_MIN_BYTES,
    failureDetectionTimeoutMs: init.failureDetectionTimeoutMs ?? DEFAULT_FAILURE_DETECTION_TIMEOUT_MS,
    lockTimeoutMs: init.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
    leaveTimeoutMs: init.leaveTimeoutMs ?? DEFAULT_LEAVE_TIMEOUT_MS,
    maxPayloadBytes: init.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
    dedupeCapacity: init.dedupeCapacity ?? DEFAULT_DEDUPE_CAPACITY,
    maxActiveTransfers: init.maxActiveTransfers ?? DEFAULT_MAX_ACTIVE_TRANSFERS,
    transferIdleMs: init.transferIdleMs ?? DEFAULT_TRANSFER_IDLE_MS,
    maxHops: init.maxHops ?? DEFAULT_MAX_HOPS,
    fallbackFanout: init.fallbackFanout ?? DEFAULT_FALLBACK_FANOUT,
    maxReduceLength: init.maxReduceLength ?? DEFAULT_MAX_REDUCE_LENGTH,
    parkRetryMs: init.parkRetryMs ?? DEFAULT_PARK_RETRY_MS,
    steadyProbeIntervalMs: init.steadyProbeIntervalMs ?? DEFAULT_STEADY_PROBE_INTERVAL_MS,
    treeUpdateDelayMs: init.treeUpdateDelayMs ?? DEFAULT_TREE_UPDATE_DELAY_MS,
    tieTolerance: init.tieTolerance ?? DEFAULT_TIE_TOLERANCE,
    suspectGraceMs: init.suspectGraceMs ?? DEFAULT_SUSPECT_GRACE_MS,
    joinPolicy: init.joinPolicy ?? 'contact'
  }
  const unknown = unknownKey(init, Object.keys(c))
  if (unknown !== undefined) throw new InvalidConfigError(`${unknown} is not a core option (CoreInit, overlay/config.ts)`)
  const positive: Array<keyof CoreConfig> = ['probeBytes', 'probeTimeoutMs', 'switchPointBytes', 'chunkBytes',
    'reduceTimeoutFactor', 'reduceRetryMs', 'reduceMaxDurationMs', 'reduceSegmentBytes', 'reduceMinSegmentBytes', 'failureDetectionTimeoutMs', 'lockTimeoutMs',
    'leaveTimeoutMs', 'maxPayloadBytes', 'dedupeCapacity', 'maxActiveTransfers', 'transferIdleMs', 'maxHops',
    'maxReduceLength', 'parkRetryMs', 'stripeResendMs']
  for (const key of positive) {
    const v = c[key]
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new InvalidConfigError(`${key} must be a finite number > 0, got ${String(v)}`)
  }
  for (const key of ['probeExtraCount', 'reduceTimeoutMinMs', 'steadyProbeIntervalMs', 'tieTolerance', 'suspectGraceMs', 'treeUpdateDelayMs', 'probeNearFraction', 'reduceCombineMinBytes', 'probeBandwidthReuseMs', 'probeNearLaneGapMs', 'treeNewsGapMs', 'stripeAskTimeoutMs'] as const) {
    const v = c[key]
    if (!Number.isFinite(v) || v < 0) throw new InvalidConfigError(`${key} must be a finite number >= 0, got ${String(v)}`)
  }
  if (typeof c.reduceCombine !== 'boolean') throw new InvalidConfigError(`reduceCombine must be a boolean, got ${String(c.reduceCombine)}`)
  if (typeof c.probeNearLane !== 'boolean') throw new InvalidConfigError(`probeNearLane must be a boolean, got ${String(c.probeNearLane)}`)
  if (typeof c.probeDetour !== 'boolean') throw new InvalidConfigError(`probeDetour must be a boolean, got ${String(c.probeDetour)}`)
  if (typeof c.probeDownloadOnDemand !== 'boolean') throw new InvalidConfigError(`probeDownloadOnDemand must be a boolean, got ${String(c.probeDownloadOnDemand)}`)
  if (c.probeNearFraction > 1) throw new InvalidConfigError(`probeNearFraction must be in [0, 1], got ${String(c.probeNearFraction)}`)
  if (c.tieTolerance >= 1) throw new InvalidConfigError(`tieTolerance must be < 1, got ${c.tieTolerance}`)
  if (!Number.isInteger(c.probeExtraCount)) throw new InvalidConfigError('probeExtraCount must be an integer')
  if (!Number.isInteger(c.nearSurveyCount) || c.nearSurveyCount < 0 || c.nearSurveyCount > 1024) throw new InvalidConfigError(`nearSurveyCount must be an integer in 0..1024, got ${String(c.nearSurveyCount)}`)
  if (!Number.isInteger(c.fallbackFanout) || c.fallbackFanout < 0 || c.fallbackFanout > 1024) throw new InvalidConfigError(`fallbackFanout must be an integer in 0..1024, got ${String(c.fallbackFanout)}`)
  if (!Number.isInteger(c.stripeMaxCount) || c.stripeMaxCount < 0 || c.stripeMaxCount > MAX_STRIPES) throw new InvalidConfigError(`stripeMaxCount must be an integer in 0..${MAX_STRIPES}, got ${String(c.stripeMaxCount)}`)
  if (!Number.isInteger(c.stripeMinBytes) || c.stripeMinBytes < 0) throw new InvalidConfigError(`stripeMinBytes must be an integer >= 0, got ${String(c.stripeMinBytes)}`)
  if (!Number.isInteger(c.bwMaxChildren) || c.bwMaxChildren < 0 || c.bwMaxChildren > 1024) throw new InvalidConfigError(`bwMaxChildren must be an integer in 0..1024, got ${String(c.bwMaxChildren)}`)
  if (!Number.isInteger(c.bwTieDepthHops) || c.bwTieDepthHops < 0 || c.bwTieDepthHops > 1024) throw new InvalidConfigError(`bwTieDepthHops must be an integer in 0..1024, got ${String(c.bwTieDepthHops)}`)
  if (!Number.isInteger(c.maxReduceLength) || c.maxReduceLength > 2 ** 27) throw new InvalidConfigError(`maxReduceLength must be an integer in 1..134217728, got ${String(c.maxReduceLength)}`)
  if (!Number.isInteger(c.treeRootStride) || c.treeRootStride < 1 || c.treeRootStride > 1_000_000) throw new InvalidConfigError(`treeRootStride must be an integer in 1..1000000, got ${String(c.treeRootStride)}`)
  if (!Number.isInteger(c.probePingCount) || c.probePingCount < 1 || c.probePingCount > 16) throw new InvalidConfigError(`probePingCount must be an integer in 1..16, got ${String(c.probePingCount)}`)
  if (!Number.isInteger(c.chunkBytes) || c.chunkBytes > 1024 * 1024) throw new InvalidConfigError('chunkBytes must be an integer <= 1048576')
  if (!Number.isInteger(c.reduceSegmentBytes) || c.reduceSegmentBytes < 8 || c.reduceSegmentBytes > 1024 * 1024) throw new InvalidConfigError(`reduceSegmentBytes must be an integer in 8..1048576, got ${String(c.reduceSegmentBytes)}`)
  if (!Number.isInteger(c.reduceMinSegmentBytes) || c.reduceMinSegmentBytes < 8 || c.reduceMinSegmentBytes > 1024 * 1024) throw new InvalidConfigError(`reduceMinSegmentBytes must be an integer in 8..1048576, got ${String(c.reduceMinSegmentBytes)}`)
  for (const [key, v] of Object.entries(c)) if (key.endsWith('Ms') && typeof v === 'number' && v > MAX_TIME_OPTION_MS) throw new InvalidConfigError(`${key} must be at most ${MAX_TIME_OPTION_MS} ms, got ${v}`)
  if (c.joinPolicy !== 'contact' && c.joinPolicy !== 'most-loaded') throw new InvalidConfigError(`joinPolicy must be 'contact' or 'most-loaded', got ${String(c.joinPolicy)}`)
  return c
}
