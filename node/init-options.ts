/**
 * The option names of `treecast(init)` and `createTreecast(init)`, so that a misspelt one
 * is an InvalidConfigError instead of a default used without a word (JavaScript callers
 * have no type checker). The type checker keeps both lists complete.
 */
import type { CreateTreecastInit } from './create-treecast.ts'
import type { TreecastInit } from './service-types.ts'

/** Every field of TreecastInit: the service's own and the network's (NodeNetInit). */
export const SERVICE_OPTIONS: ReadonlySet<string> = new Set(Object.keys({
  core: true, contribute: true, ops: true, random: true, joinTimeoutMs: true, rejoinAttempts: true,
  bulkHighWaterBytes: true, bulkIdleMs: true, bulkMinBytes: true, dialAttempts: true, dialTimeoutMs: true, failureDetectionTimeoutMs: true, heartbeatIntervalMs: true, maxBulkQueuedBytes: true, maxBulkStreams: true, maxFrameBytes: true, maxPeers: true, maxQueuedBytes: true, maxStreamsPerConnection: true, pruneIdleMs: true
} satisfies Record<keyof TreecastInit, true>))

/** Every field of CreateTreecastInit: the service's and the libp2p host's. */
export const CREATE_OPTIONS: ReadonlySet<string> = new Set([...SERVICE_OPTIONS, ...Object.keys({
  listen: true, announce: true, psk: true, privateKey: true, transport: true, maxConnections: true, inboundConnectionThreshold: true, maxIncomingPendingConnections: true, maxStreamWindowBytes: true, stopTimeoutMs: true
} satisfies Record<Exclude<keyof CreateTreecastInit, keyof TreecastInit>, true>)])
