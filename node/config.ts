/**
 * Options of the real-network node's transport layer (the protocol's own options are the
 * core's `CoreInit`). Every field has a default and a reason.
 */
import { InvalidConfigError } from '../overlay/errors.ts'
import { MAX_TIME_OPTION_MS } from '../overlay/config.ts'

/** Transport-level options of a treecast node. */
export interface NodeNetInit {
  /**
   * Peers kept connected at most; the least recently used idle peers that are not tree
   * neighbours are disconnected past it. Hundreds of peers must not mean a full mesh.
   * @default 48
   */
  maxPeers?: number
  /**
   * A peer past `maxPeers` is disconnected only after this long without traffic, so a probe
   * or a tree change in progress with it is not cut.
   * @default 10000
   */
  pruneIdleMs?: number
  /**
   * Interval between heartbeats on every open control stream.
   * @default 1000
   */
  heartbeatIntervalMs?: number
  /**
   * A peer whose control streams stay silent (no message, no heartbeat) this long has them
   * dropped and is redialled, and reported down if that fails (`dialAttempts`); also the
   * core's failure-detection timeout unless the core sets its own.
   * @default 5000
   */
  failureDetectionTimeoutMs?: number
  /**
   * Dial plus stream negotiation timeout of one attempt. Generous because a loaded machine
   * handshakes slowly. createTreecast gives libp2p's own dial, per-address and inbound
   * upgrade timeouts this value too; with `treecast()` in a libp2p node of your own, set
   * its `connectionManager.addressDialTimeout` (6 s by default) and
   * `inboundUpgradeTimeout` (10 s) to at least this value, or they cut attempts short.
   * @default 10000
   */
  dialTimeoutMs?: number
  /**
   * Attempts to open a control stream to a peer before it is reported down, when the
   * attempts time out. A refused or otherwise failed dial (the process is gone) is
   * reported at once; a timeout may be an overloaded peer or machine (24 peers in one
   * process take 6 s to finish a handshake during their cold start), and reporting it
   * gets a live peer declared dead. A hung peer is reported after this many timeouts.
   * @default 2
   */
  dialAttempts?: number
  /**
   * Largest frame accepted from a peer (a chunk of `chunkBytes` or a probe download plus
   * headers); larger frames reset the stream.
   * @default 1179648 (1 MiB + 128 KiB)
   */
  maxFrameBytes?: number
  /**
   * Bytes queued on one control stream before the peer is considered stuck and the stream
   * is reset. Bounds memory per neighbour. A reduction's partials wait outside this queue
   * and are fed to it as it drains (node/held-partials.ts): one partial may be longer.
   * @default 33554432 (32 MiB)
   */
  maxQueuedBytes?: number
  /**
   * Bytes queued on one bulk stream past which the streams its chunks came in on are
   * paused (end-to-end backpressure). Small enough to bound memory, large enough to
   * keep a fast link busy for a few milliseconds. Also the most bytes a control stream
   * queues at once of a reduction's partials (node/held-partials.ts).
   * @default 1048576 (1 MiB)
   */
  bulkHighWaterBytes?: number
  /**
   * Hard limit on one bulk stream's queue. The root of a broadcast queues references to its
   * own payload, so this must be at least the largest payload sent.
   * @default 1073741824 + 1048576 (1 GiB + 1 MiB, the core's maxPayloadBytes plus slack)
   */
  maxBulkQueuedBytes?: number
  /**
   * Payloads shorter than this travel on the control stream even when they take several
   * chunks; longer ones take a bulk stream per hop and transfer. A bulk stream costs a
   * stream set-up (2-3 ms of CPU per hop here) and keeps a long transfer from holding up
   * control messages; below the switch point (the latency tree) the set-up costs more
   * than the hold-up. While the control stream to a peer holds `bulkHighWaterBytes` or
   * more, short payloads to it take bulk streams too (backpressure). At most
   * `maxQueuedBytes / 8`.
   * @default 262144 (256 KiB, the core's default switch point)
   */
  bulkMinBytes?: number
  /**
   * Outgoing bulk streams open at once; further long transfers fall back to the control stream.
   * @default 256
   */
  maxBulkStreams?: number
  /**
   * A bulk stream with nothing queued for this long is closed: an idle one (its transfer
   * acknowledged, kept for the next transfer to that peer), or a stalled transfer's (whose
   * later chunks then take the control stream).
   * @default 5000
   */
  bulkIdleMs?: number
  /**
   * Streams per protocol and connection, inbound and outbound (libp2p defaults to 32/64,
   * too few for many concurrent long transfers between two neighbours).
   * @default 512
   */
  maxStreamsPerConnection?: number
}

export type ResolvedNodeConfig = Readonly<Required<NodeNetInit>>

export const DEFAULT_NODE_NET: ResolvedNodeConfig = Object.freeze({
  maxPeers: 48,
  pruneIdleMs: 10_000,
  heartbeatIntervalMs: 1000,
  failureDetectionTimeoutMs: 5000,
  dialTimeoutMs: 10_000,
  dialAttempts: 2,
  maxFrameBytes: 1024 * 1024 + 128 * 1024,
  maxQueuedBytes: 32 * 1024 * 1024,
  bulkHighWaterBytes: 1024 * 1024,
  bulkMinBytes: 256 * 1024,
  maxBulkQueuedBytes: 1024 * 1024 * 1024 + 1024 * 1024,
  maxBulkStreams: 256,
  bulkIdleMs: 5000,
  maxStreamsPerConnection: 512
})

/**
 * The longest delay Node's setTimeout takes (2^31 - 1 ms, about 24.8 days): a longer one
 * fires after 1 ms. Times in ms past it are refused, and the node's core timer is armed
 * for at most this long (then again for the rest).
 */
export const MAX_TIMER_MS = MAX_TIME_OPTION_MS

/** Fills defaults and validates; throws InvalidConfigError on a bad value. */
export function resolveNodeConfig (init: NodeNetInit = {}): ResolvedNodeConfig {
  const r: Required<NodeNetInit> = { ...DEFAULT_NODE_NET }
  for (const key of Object.keys(DEFAULT_NODE_NET) as Array<keyof NodeNetInit>) {
    const v = init[key]
    if (v === undefined) continue
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new InvalidConfigError(`${key} must be a positive number, got ${String(v)}`)
    if (!Number.isInteger(v) && key !== 'heartbeatIntervalMs' && key !== 'failureDetectionTimeoutMs' && key !== 'dialTimeoutMs' && key !== 'bulkIdleMs' && key !== 'pruneIdleMs') {
      throw new InvalidConfigError(`${key} must be an integer, got ${v}`)
    }
    if (key.endsWith('Ms') && v > MAX_TIMER_MS) throw new InvalidConfigError(`${key} must be at most ${MAX_TIMER_MS} ms (setTimeout's limit), got ${v}`)
    r[key] = v
  }
  if (r.heartbeatIntervalMs * 2 > r.failureDetectionTimeoutMs) {
    throw new InvalidConfigError(`failureDetectionTimeoutMs (${r.failureDetectionTimeoutMs}) must be at least twice heartbeatIntervalMs (${r.heartbeatIntervalMs})`)
  }
  if (r.bulkMinBytes > r.maxQueuedBytes / 8) throw new InvalidConfigError(`bulkMinBytes (${r.bulkMinBytes}) must be at most maxQueuedBytes / 8 (${r.maxQueuedBytes / 8})`)
  if (r.maxFrameBytes < 1024) throw new InvalidConfigError(`maxFrameBytes must be at least 1024, got ${r.maxFrameBytes}`)
  return Object.freeze(r)
}
