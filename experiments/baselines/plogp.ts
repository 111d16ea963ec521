/**
 * pLogP-style cost models of intra-cluster broadcast and reduction algorithms (paper
 * 002 §4.2, Table 1; Kielmann et al.'s pLogP), with parameters read off the simulator's
 * topology instead of measured:
 *
 * - L = half the cluster's RTT + the receiver's per-message CPU cost (+ per-byte cost),
 *   plus the store-and-forward of one message through the sender's uplink and the
 *   receiver's downlink: `hop(s) = 2 (s + h) / B + rtt/2 + perMessageCostMs + s * perByteCostMs`.
 * - g_send(s) = (s + h) / B, the sender's uplink per message; 0 for a message of at most
 *   `smallMessageBytes`, which the network interleaves without taking capacity.
 * - g_recv(s) = max((s + h) / B, perMessageCostMs + s * perByteCostMs), a receiver's
 *   downlink or CPU per message (the CPU also pays for combining in a reduction).
 *
 * With k = ceil(m / s) segments, Table 1's formulas become
 * flat: hop + (P-1) k g_send + (k-1) g_recv;
 * binomial (whole message to each child in turn): ceil(log2 P) hop + floor(log2 P) (k-1) max(g_send, g_recv);
 * segmented chain: (P-1) hop + (k-1) max(g_send, g_recv);
 * scatter + ring allgather: (log2 P + P - 1) hop + 2 (P-1)/P k max(g_send, g_recv).
 * Reductions use the same shapes run backwards (scatter/allgather has no reduction here).
 * The segment size is searched as in 002 §4.2: s = m / 2^i, i = 0, 1, ... while s stays
 * at least {@link MODEL_MIN_SEGMENT_BYTES} and the payload at most
 * {@link MODEL_MAX_SEGMENTS} segments.
 */
import type { Topology } from '../sim/network.ts'

export type IntraAlgorithm = 'flat' | 'binomial' | 'chain' | 'scatter-ring'

/** Smallest segment the search tries (smaller ones only add per-message cost here). */
export const MODEL_MIN_SEGMENT_BYTES = 16_384
/** Most segments the search allows (keeps message counts, and run times, bounded). */
export const MODEL_MAX_SEGMENTS = 2048

/** The pLogP parameters of one cluster. */
export interface ClusterParams {
  peers: number
  oneWayMs: number
  bytesPerMs: number
  perMessageCostMs: number
  perByteCostMs: number
  smallMessageBytes: number
  headerBytes: number
}

export function clusterParams(topology: Topology, cluster: number, headerBytes: number): ClusterParams {
  return {
    peers: topology.clusters[cluster]?.peers as number,
    oneWayMs: (topology.intraRttMs[cluster] as number) / 2,
    bytesPerMs: topology.peerLinkBytesPerSec / 1000,
    perMessageCostMs: topology.perMessageCostMs,
    perByteCostMs: topology.perByteCostMs,
    smallMessageBytes: topology.smallMessageBytes,
    headerBytes
  }
}

/** Predicted time of `algorithm` for `m` bytes in segments of `s` over a cluster, ms. */
export function predictMs(algorithm: IntraAlgorithm, c: ClusterParams, m: number, s: number): number {
  const P = c.peers
  if (P <= 1) return 0
  const size = Math.min(s, Math.max(m, 0)) + c.headerBytes
  const k = Math.max(1, Math.ceil(m / s))
  const link = size / c.bytesPerMs
  const cpu = c.perMessageCostMs + (size - c.headerBytes) * c.perByteCostMs
  const hop = 2 * link + c.oneWayMs + cpu
  const gSend = size <= c.smallMessageBytes ? 0 : link
  const gRecv = Math.max(link, cpu)
  const g = Math.max(gSend, gRecv)
  const log2 = Math.log2(P)
  switch (algorithm) {
    case 'flat': return hop + (P - 1) * k * gSend + (k - 1) * gRecv
    case 'binomial': return Math.ceil(log2) * hop + Math.floor(log2) * (k - 1) * g
    case 'chain': return (P - 1) * hop + (k - 1) * g
    case 'scatter-ring': return (log2 + P - 1) * hop + 2 * (P - 1) / P * k * g
  }
}

/** The candidate segment sizes for `m` bytes (element-aligned when `align` > 1). */
export function segmentCandidates(m: number, align = 1): number[] {
  const out: number[] = []
  for (let i = 0; ; i++) {
    const s = Math.max(align, Math.ceil(m / 2 ** i / align) * align)
    if (i > 0 && (s < MODEL_MIN_SEGMENT_BYTES || m / s > MODEL_MAX_SEGMENTS)) break
    if (out[out.length - 1] !== s) out.push(s)
    if (s <= align) break
  }
  return out
}

/** The model's choice for a cluster. */
export interface IntraChoice {
  algorithm: IntraAlgorithm
  segmentBytes: number
  predictedMs: number
}

/** The algorithm and segment size with the smallest predicted time among `algorithms`. */
export function chooseIntra(c: ClusterParams, m: number, algorithms: readonly IntraAlgorithm[], align = 1): IntraChoice {
  let best: IntraChoice = { algorithm: algorithms[0] as IntraAlgorithm, segmentBytes: Math.max(m, align), predictedMs: Infinity }
  for (const algorithm of algorithms) {
    for (const s of segmentCandidates(m, align)) {
      const t = predictMs(algorithm, c, m, s)
      if (t < best.predictedMs) best = { algorithm, segmentBytes: s, predictedMs: t }
    }
  }
  return best
}
