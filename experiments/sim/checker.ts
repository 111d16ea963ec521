/**
 * Whole-system invariants, checked while a simulation runs (not only at the end):
 * one owner per virtual node, acyclic trees, exactly-once delivery per virtual node and
 * stream (broadcast or point-to-point), at the peer that owns the virtual node then (per
 * ownership lineage: a crash starts a new lineage for the lost virtual nodes, whose
 * application state went with the crashed peer).
 */
import type { IntervalSet } from '../../virtual-nodes/interval-set.ts'

/** Delivery bookkeeping of one stream. */
export interface DeliveryRecord {
  /** Per virtual node: the lineage epoch of its last delivery, -1 if never. */
  readonly at: Int32Array
  /** Per virtual node: virtual time of its first delivery, NaN if never. */
  readonly firstMs: Float64Array
  delivered: number
  duplicates: number
  lastDeliveryMs: number
}

/** The invariant checker of one run. */
export class Checker {
  readonly violations: string[] = []
  private readonly owner: Int32Array
  private readonly epoch: Int32Array
  private readonly parents = new Map<string, Map<number, number>>()
  readonly deliveries = new Map<string, DeliveryRecord>()
  private readonly maxViolations = 100

  private pending: Array<[number, number, number]> = []

  constructor (readonly vnodeCount: number, private readonly isAlive: (peer: number) => boolean, private readonly now: () => number,
    private readonly peersOwning: (vnode: number) => number[] = () => []) {
    this.owner = new Int32Array(vnodeCount).fill(-1)
    this.epoch = new Int32Array(vnodeCount)
  }

  /**
   * Peer `peer` reported its owned set changed. "One owner at any instant" is judged
   * between events: a peer that takes and passes on a range while handling one input never
   * held it at an instant, so conflicts are confirmed in `settle()` after each event.
   */
  ownership (peer: number, added: IntervalSet, removed: IntervalSet, takeover: boolean): void {
    for (const v of removed.values()) {
      if (this.owner[v] !== peer) continue
      this.owner[v] = -1
      for (const q of this.peersOwning(v)) if (q !== peer) { this.owner[v] = q; break }
    }
    for (const v of added.values()) {
      const cur = this.owner[v] as number
      if (cur !== -1 && cur !== peer && this.isAlive(cur)) this.pending.push([v, cur, peer])
      this.owner[v] = peer
      if (takeover) this.epoch[v] = (this.epoch[v] as number) + 1
    }
  }

  /** After each event: ownership conflicts that still stand are violations. */
  settle (): void {
    if (this.pending.length === 0) return
    const pending = this.pending
    this.pending = []
    for (const [v, a, b] of pending) {
      const owners = this.peersOwning(v)
      if (owners.includes(a) && owners.includes(b)) this.violate(`two owners of virtual node ${v}: p${a} and p${b}`)
    }
  }

  /** Every virtual node owned by a live peer (checked at quiescence). */
  unowned (): number {
    let n = 0
    for (let v = 0; v < this.vnodeCount; v++) {
      const o = this.owner[v] as number
      if (o === -1 || !this.isAlive(o)) n++
    }
    return n
  }

  /** Per virtual node, 1 if a live peer owns it (a run on threads ORs its partitions' masks). */
  ownedMask (): Uint8Array {
    const mask = new Uint8Array(this.vnodeCount)
    for (let v = 0; v < this.vnodeCount; v++) {
      const o = this.owner[v] as number
      if (o !== -1 && this.isAlive(o)) mask[v] = 1
    }
    return mask
  }

  /** A peer crashed: its lineages end; its tree entries go. */
  crashed (peer: number): void {
    for (let v = 0; v < this.vnodeCount; v++) if (this.owner[v] === peer) this.owner[v] = -1
    for (const m of this.parents.values()) m.delete(peer)
    this.parents.delete(`lat:${peer}`)
    this.parents.delete(`bw:${peer}`)
  }

  /** Peer `peer` changed its parent in the tree (`kind`, `root`). */
  parent (kind: string, root: number, peer: number, parent: number | null): void {
    const key = `${kind}:${root}`
    let m = this.parents.get(key)
    if (m === undefined) { m = new Map(); this.parents.set(key, m) }
    if (parent === null) { m.delete(peer); return }
    m.set(peer, parent)
    let cur: number | undefined = parent
    for (let steps = 0; cur !== undefined && steps <= m.size + 1; steps++) {
      if (cur === peer) { this.violate(`cycle in ${key} through p${peer}`); return }
      cur = m.get(cur)
    }
  }

  /** Stream `id` was delivered at `peer` for `vnodes`. */
  delivered (id: string, peer: number, vnodes: IntervalSet): void {
    let rec = this.deliveries.get(id)
    if (rec === undefined) {
      rec = { at: new Int32Array(this.vnodeCount).fill(-1), firstMs: new Float64Array(this.vnodeCount).fill(NaN), delivered: 0, duplicates: 0, lastDeliveryMs: 0 }
      this.deliveries.set(id, rec)
    }
    // A delivery is mostly one range (one virtual node per peer, or a peer's contiguous
    // share): walked without the generator `values()` makes per call.
    if (vnodes.rangeCount === 1) {
      for (let v = vnodes.min as number, last = vnodes.max as number; v <= last; v++) this.deliveredAt(id, rec, peer, v)
    } else {
      for (const v of vnodes.values()) this.deliveredAt(id, rec, peer, v)
    }
  }

  private deliveredAt (id: string, rec: DeliveryRecord, peer: number, v: number): void {
    if (v >= this.vnodeCount) { this.violate(`delivery of ${id} for virtual node ${v} out of range at p${peer}`); return }
    const e = this.epoch[v] as number
    const last = rec.at[v] as number
    if (last === e) {
      rec.duplicates++
      this.violate(`duplicate delivery of ${id} for virtual node ${v} at p${peer}`)
      return
    }
    if (this.owner[v] !== peer) this.violate(`delivery of ${id} for virtual node ${v} at p${peer}, which does not own it`)
    if (last === -1) { rec.delivered++; rec.lastDeliveryMs = this.now(); rec.firstMs[v] = this.now() }
    rec.at[v] = e
  }

  violate (what: string): void {
    if (this.violations.length < this.maxViolations) this.violations.push(`t=${this.now().toFixed(3)}ms ${what}`)
  }
}
