/**
 * treecast's public API: the node, the libp2p service, their options, events and errors.
 */
import './polyfill.ts'
export { createTreecast, TreecastNode, type CreateTreecastInit } from './create-treecast.ts'
export { treecast, TreecastService, NODE_NEAR_SURVEY_COUNT, NODE_CHUNK_BYTES, type TreecastInit, type BroadcastOptions, type BroadcastHandle, type ReduceResult, type TreeView } from './treecast-service.ts'
export type { NodeNetInit } from './config.ts'
export type { TreecastEvents, DeliveryEvent, ReducedEvent, ReduceFailedEvent, OwnershipEvent, MemberEvent, TreeEvent } from './events.ts'
export type { LinkMeasurement } from './measurements.ts'
export * from './errors.ts'
export { installLibp2pGuard } from './libp2p-guard.ts'
export { corkedTcp } from './corked-tcp.ts'
export { halfWindowYamux } from './half-window-yamux.ts'
export { quietNoise } from './quiet-noise.ts'
export { DialFailure } from './dial-failure.ts'
export { WanEmulator } from './wan/wan-emulator.ts'
export { IntervalSet } from '../virtual-nodes/interval-set.ts'
export type { CoreInit } from '../overlay/config.ts'
export type { CollectiveInit } from '../overlay/collective.ts'
/** Whether a peer id roots trees under a `core.treeRootStride` (a collective reduction's root must). */
export { isTreeRoot } from '../overlay/tree-roots.ts'
