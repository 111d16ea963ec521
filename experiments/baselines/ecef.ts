/**
 * Inter-cluster scheduling with the ECEF family (paper 002 §5, after Bhat et al.):
 * Earliest Completion Edge First with the "LAt" lookahead of 002 §5.5, which accounts for
 * the intra-cluster broadcast time T_k of the clusters a receiver could reach next.
 *
 * Set A holds the clusters whose coordinator has the message, B the others. Each round
 * picks the pair (i in A, j in B) minimizing
 *   start_i + e_ij + F_j,   F_j = min over k in B \ {j} of (e_jk + T_k)   (T_j when j is last),
 * where start_i = max(RT_i, the time i's uplink is free) and e_ij is the time for the whole
 * payload to reach j's coordinator from i's: the one-way delay plus the payload through
 * the narrower of i's uplink and the i→j WAN link, plus one segment's store-and-forward.
 * Then j moves to A with RT_j = start_i + e_ij, and i's uplink stays busy for the
 * payload's time on it (the WAN link is the pair's own, so i can start its next send
 * when its uplink has drained: unlike pLogP's single gap, the simulator's sender is only
 * held by its NIC).
 */
import type { Topology } from '../sim/network.ts'

/** One inter-cluster send of the schedule. */
export interface WideAreaSend {
  from: number
  to: number
  /** Predicted time the receiving coordinator holds the payload, ms. */
  readyMs: number
}

/** Inputs of the scheduler, per cluster. */
export interface EcefInput {
  topology: Topology
  rootCluster: number
  /** Payload bytes. */
  bytes: number
  /** Wide-area message size and header (the payload goes as ceil(bytes/segment) messages). */
  segmentBytes: number
  headerBytes: number
  /** Predicted intra-cluster broadcast time per cluster, ms. */
  intraMs: readonly number[]
}

/** The ECEF-LAt schedule: sends in the order chosen (per sender, its send order). */
export function ecefSchedule(input: EcefInput): WideAreaSend[] {
  const { topology: t, rootCluster, bytes, segmentBytes, headerBytes, intraMs } = input
  const k = t.clusters.length
  const messages = Math.max(1, Math.ceil(bytes / segmentBytes))
  const wire = bytes + messages * headerBytes
  const seg = Math.min(segmentBytes, bytes) + headerBytes
  const small = seg <= t.smallMessageBytes
  const B = t.peerLinkBytesPerSec / 1000
  const edge = (i: number, j: number): number => {
    const rate = Math.min(B, (t.wanLinkBytesPerSec[i]?.[j] as number) / 1000)
    return (t.interRttMs[i]?.[j] as number) / 2 + wire / rate + 2 * seg / B + t.perMessageCostMs
  }
  const uplinkMs = small ? 0 : wire / B
  const ready = new Float64Array(k).fill(Infinity)
  const free = new Float64Array(k)
  ready[rootCluster] = 0
  const inA = [rootCluster]
  const inB = new Set(Array.from({ length: k }, (_, i) => i).filter(i => i !== rootCluster))
  const out: WideAreaSend[] = []
  while (inB.size > 0) {
    let best: { i: number, j: number, cost: number, start: number } | undefined
    for (const j of inB) {
      let F = intraMs[j] as number
      if (inB.size > 1) {
        F = Infinity
        for (const m of inB) if (m !== j) F = Math.min(F, edge(j, m) + (intraMs[m] as number))
      }
      for (const i of inA) {
        const start = Math.max(ready[i] as number, free[i] as number)
        const cost = start + edge(i, j) + F
        if (best === undefined || cost < best.cost) best = { i, j, cost, start }
      }
    }
    const { i, j, start } = best as { i: number, j: number, start: number }
    const readyMs = start + edge(i, j)
    out.push({ from: i, to: j, readyMs })
    ready[j] = readyMs
    free[j] = readyMs
    free[i] = start + uplinkMs
    inA.push(j)
    inB.delete(j)
  }
  return out
}
