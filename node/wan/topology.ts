/**
 * Builds a {@link WanEmulatorInit} from the simulator's topology description, so a real
 * run can reproduce a simulated network: one-way delays are half the RTTs and the shared
 * wide-area link rates are carried over. Peers are numbered 0..N-1 cluster by cluster, as in
 * the simulator. Per-peer NIC rates and receiver CPU costs are not emulated.
 */
import { resolveTopology, type Topology, type TopologyInit } from '../../experiments/sim/topology.ts'
import type { WanEmulatorInit } from './config.ts'
import { InvalidWanConfigError } from './errors.ts'

/** Intra-cluster RTTs below this are left unshaped by default: loopback adds about as much. */
export const DEFAULT_MIN_INTRA_RTT_MS = 1

/** Options of {@link wanInitFromTopology}, beside the topology itself. */
export interface WanTopologyOptions extends Pick<WanEmulatorInit,
  'connectDelay' | 'backlogHighWaterBytes' | 'maxInFlightBytes' | 'roundRobinQuantumBytes' | 'pollBudgetShare'> {
  /**
   * Intra-cluster RTTs below this many ms are emulated as 0 (unshaped): loopback and the
   * event loop already take 0.3 to 1 ms per round trip, so adding the simulator's default
   * 0.3 ms would more than double it. 0 keeps them all.
   * @default 1
   */
  minIntraRttMs?: number
}

function resolve(topology: TopologyInit | Topology): Topology {
  return 'peerCount' in topology ? topology : resolveTopology(topology)
}

/**
 * The emulator options equivalent to `topology` (a `TopologyInit` or a resolved `Topology`).
 * Throws the simulator's `InvalidTopologyError` when the topology is invalid, and
 * {@link InvalidWanConfigError} for bad options.
 */
export function wanInitFromTopology(topology: TopologyInit | Topology, options: WanTopologyOptions = {}): WanEmulatorInit {
  const t = resolve(topology)
  const { minIntraRttMs = DEFAULT_MIN_INTRA_RTT_MS, ...rest } = options
  if (typeof minIntraRttMs !== 'number' || !(minIntraRttMs >= 0)) {
    throw new InvalidWanConfigError(`minIntraRttMs must be a number >= 0, got ${String(minIntraRttMs)}`)
  }
  const names = t.clusters.map(c => c.name)
  const byName = (m: readonly (readonly number[])[], scale: number): Record<string, Record<string, number>> =>
    Object.fromEntries(names.map((from, i) => [from, Object.fromEntries(names.flatMap((to, j) =>
      i === j ? [] : [[to, (m[i]?.[j] as number) * scale]]))]))
  return {
    ...rest,
    clusters: names,
    intraDelayMs: Object.fromEntries(names.map((name, i) => {
      const rtt = t.intraRttMs[i] as number
      return [name, rtt < minIntraRttMs ? 0 : rtt / 2]
    })),
    interDelayMs: byName(t.interRttMs, 0.5),
    wanRateBytesPerSec: byName(t.wanLinkBytesPerSec, 1)
  }
}

/** The name of the cluster of peer number `peer` (0..N-1, cluster by cluster). */
export function clusterNameOfPeer(topology: TopologyInit | Topology, peer: number): string {
  const t = resolve(topology)
  return (t.clusters[t.clusterOf(peer)] as { name: string }).name
}
