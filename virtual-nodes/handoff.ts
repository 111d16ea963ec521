/**
 * Hand-off records: what moves with a set of ranges from one peer to another. Besides the
 * ownership claim itself, the per-range collective state travels along, so the new owner
 * neither delivers a broadcast again nor contributes twice to a reduction.
 */
import type { IntervalSet } from './interval-set.ts'
import type { OwnershipRecord } from './ownership-map.ts'
import type { PeerId } from './peer-id.ts'

/** Which virtual nodes of the moved ranges already had a given stream delivered. */
export interface DeliveredState {
  /** The stream (broadcast, point-to-point message or reduction start) id. */
  readonly streamId: string
  /** The virtual nodes, within the moved ranges, that already had it delivered. */
  readonly vnodes: IntervalSet
}

/** A whole hand-off. */
export interface HandoffRecord {
  readonly from: PeerId
  readonly record: OwnershipRecord
  readonly delivered: readonly DeliveredState[]
}

/** Restricts per-stream delivered sets to `ranges`, dropping empty ones. */
export function deliveredWithin (all: ReadonlyMap<string, IntervalSet>, ranges: IntervalSet): DeliveredState[] {
  const out: DeliveredState[] = []
  for (const [streamId, set] of all) {
    const part = set.intersection(ranges)
    if (!part.isEmpty) out.push({ streamId, vnodes: part })
  }
  return out
}
