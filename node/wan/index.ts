/**
 * In-process wide-area link emulation for libp2p over TCP: see wan-emulator.ts.
 */
export { WanEmulator, type WanPipeStats } from './wan-emulator.ts'
export {
  resolveWanConfig,
  defaultBacklogBytes,
  DEFAULT_BACKLOG_MS,
  MIN_DEFAULT_BACKLOG_BYTES,
  MAX_DEFAULT_BACKLOG_BYTES,
  DEFAULT_MAX_IN_FLIGHT_BYTES,
  DEFAULT_ROUND_ROBIN_QUANTUM_BYTES,
  DEFAULT_POLL_BUDGET_SHARE,
  type ClusterPairValue,
  type ResolvedWanConfig,
  type WanEmulatorInit
} from './config.ts'
export { InvalidWanConfigError } from './errors.ts'
export { wanInitFromTopology, clusterNameOfPeer, DEFAULT_MIN_INTRA_RTT_MS, type WanTopologyOptions } from './topology.ts'
export { shapedTcp, remotePeerOf, type RouteLookup, type ShapedRoute, type ShapedTcpComponents } from './shaped-transport.ts'
export { ShapedConnection, type ShapedLink } from './shaped-connection.ts'
export { Alarm, Poller, ALARM_TOLERANCE_MS } from './alarm.ts'
export { Pipe, PipeFlow, type PipeInit, type PipeStats, type FlowHandlers, type Chunk } from './pipe.ts'
