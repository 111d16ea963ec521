/**
 * Merging the partitions' shares of a run on threads into one report's input
 * (experiments/sim/parallel/parallel-simulation.ts).
 */
import type { DeliveryRecord } from '../checker.ts'
import type { BcastTrack, RedTrack } from '../report.ts'
import type { DeliveryPart, PartitionResult } from './partition-sim.ts'

/**
 * One delivery record per stream from each partition's: a virtual node counts as delivered
 * if some partition delivered it; delivered by two partitions in one lineage is a duplicate
 * (and a violation) that neither could see alone.
 */
export function mergeDeliveries (parts: ReadonlyArray<ReadonlyArray<[string, DeliveryPart]>>, vnodes: number): { deliveries: Map<string, DeliveryRecord>, violations: string[] } {
  const deliveries = new Map<string, DeliveryRecord>()
  const violations: string[] = []
  for (const part of parts) {
    for (const [id, d] of part) {
      const rec = deliveries.get(id)
      if (rec === undefined) {
        deliveries.set(id, { at: d.at.slice(), firstMs: d.firstMs.slice(), delivered: d.delivered, duplicates: d.duplicates, lastDeliveryMs: d.lastDeliveryMs })
        continue
      }
      rec.duplicates += d.duplicates
      rec.lastDeliveryMs = Math.max(rec.lastDeliveryMs, d.lastDeliveryMs)
      for (let v = 0; v < vnodes; v++) {
        const e = d.at[v] as number
        if (e === -1) continue
        const mine = rec.at[v] as number
        if (mine === -1) {
          rec.delivered++
          rec.at[v] = e
          rec.firstMs[v] = d.firstMs[v] as number
          continue
        }
        if (mine === e) {
          rec.duplicates++
          violations.push(`duplicate delivery of ${id} for virtual node ${v} in two partitions`)
        }
        rec.firstMs[v] = Math.min(rec.firstMs[v] as number, d.firstMs[v] as number)
        rec.at[v] = Math.max(mine, e)
      }
    }
  }
  return { deliveries, violations }
}

/**
 * The tracks of broadcasts and reductions, each from the partition of its root, in start
 * order (ties: lower partition first). Traffic that other partitions counted on their shadow
 * of a broadcast is added to it; a collective reduction's callers are summed over all.
 */
export function mergeTracks (results: readonly PartitionResult[], partitionOfRoot: (root: string) => number): { broadcasts: BcastTrack[], reductions: RedTrack[] } {
  const byStart = <T extends { startMs: number }>(xs: T[]): T[] => xs.map((x, i) => [x, i] as const).sort((a, b) => a[0].startMs - b[0].startMs || a[1] - b[1]).map(([x]) => x)
  const broadcasts = byStart(results.flatMap((r) => r.broadcasts.map((b) => ({ ...b }))))
  const byId = new Map(broadcasts.map((b) => [b.id, b]))
  for (const r of results) {
    for (const s of r.shadows) {
      const b = byId.get(s.id)
      if (b === undefined) continue
      b.messages += s.messages
      b.bytesSent += s.bytesSent
      b.streams += s.streams
      b.fallback += s.fallback
      b.stripes = Math.max(b.stripes, s.stripes)
    }
  }
  const reductions: RedTrack[] = []
  const seen = new Map<string, RedTrack>()
  results.forEach((r, p) => {
    for (const t of r.reductions) {
      const callers = t.collective?.callers
      const have = seen.get(t.id)
      if (have === undefined) {
        const copy = { ...t }
        seen.set(t.id, copy)
        reductions.push(copy)
        if (partitionOfRoot(t.root) !== p) { copy.endMs = null; copy.correct = false; copy.complete = false }
        continue
      }
      if (callers !== undefined) have.collective = { callers: (have.collective?.callers ?? 0) + callers }
      if (partitionOfRoot(t.root) === p) { have.endMs = t.endMs; have.correct = t.correct; have.complete = t.complete }
    }
  })
  return { broadcasts, reductions: byStart(reductions) }
}
