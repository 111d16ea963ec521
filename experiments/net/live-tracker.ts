/**
 * Counts the deliveries of every broadcast and point-to-point message at real peers, per
 * virtual node: delivered, duplicated, and whether the payload arrived intact. A virtual
 * node delivered again after the peer that first delivered it crashed is not a duplicate: the crash lost that
 * delivery with the rest of the peer's state, and the new owner delivering it is what the
 * semantics ask for (the simulator's checker counts the same way, with lineage epochs).
 */
import type { DeliveryRecord } from '../sim/checker.ts'
import type { TreecastNode } from '../../node/create-treecast.ts'

interface Record extends DeliveryRecord {
  /** Per virtual node: index+1 of the peer that delivered it, 0 if none. */
  readonly by: Int32Array
  checksums: Set<string>
}

/** A payload fingerprint: its length and every 4096th byte. */
export function fingerprint (p: Uint8Array): string {
  let h = 0
  for (let i = 0; i < p.length; i += 4096) h = (h * 31 + (p[i] as number)) >>> 0
  return `${p.length}:${h}`
}

export class LiveTracker {
  private readonly recs = new Map<string, Record>()
  private readonly names: string[] = []
  private readonly crashed: Array<() => boolean> = []
  private readonly expected = new Map<string, string>()

  constructor (private readonly vnodes: number, private readonly clock: () => number) {}

  /** Records the deliveries of `node`, known as `name`; `isCrashed` tells when it crashed. */
  watch (name: string, node: TreecastNode, isCrashed: () => boolean): void {
    this.names.push(name)
    this.crashed.push(isCrashed)
    const who = this.names.length
    node.addEventListener('deliver', (e) => {
      const d = e.detail
      const r = this.record(d.id)
      r.checksums.add(fingerprint(d.payload))
      for (const v of d.vnodes.values()) {
        if (v >= this.vnodes) continue
        const prev = r.by[v] as number
        if (prev === 0) { r.delivered++; (r.at as Int32Array)[v] = 0; (r.firstMs as Float64Array)[v] = this.clock() } else if (!(this.crashed[prev - 1]?.() ?? false)) r.duplicates++
        r.by[v] = who
      }
      r.lastDeliveryMs = this.clock()
    })
  }

  /** The payload broadcast `id` carries, to check deliveries against. */
  expect (id: string, payload: Uint8Array): void {
    this.expected.set(id, fingerprint(payload))
  }

  records (): ReadonlyMap<string, DeliveryRecord> { return this.recs }

  /** Broadcasts delivered with a payload other than the one sent. */
  corrupt (): string[] {
    const bad: string[] = []
    for (const [id, r] of this.recs) {
      const want = this.expected.get(id)
      if (want !== undefined && [...r.checksums].some((c) => c !== want)) bad.push(id)
    }
    return bad
  }

  private record (id: string): Record {
    let r = this.recs.get(id)
    if (r === undefined) {
      r = { at: new Int32Array(this.vnodes).fill(-1), firstMs: new Float64Array(this.vnodes).fill(NaN), by: new Int32Array(this.vnodes), delivered: 0, duplicates: 0, lastDeliveryMs: 0, checksums: new Set() }
      this.recs.set(id, r)
    }
    return r
  }
}
