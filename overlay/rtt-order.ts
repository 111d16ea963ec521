/**
 * RTTs to peers, kept both in insertion order (like a Map: updating a peer keeps its
 * place) and sorted by RTT with ties in insertion order. overlay/near-peers.ts asks for the
 * few nearest live peers on every probe it answers and every near probe it starts; with
 * thousands of known peers a scan of all of them per question was most of a 2,000-peer
 * simulation. Walking the sorted order gives the same answers as a stable scan and stops
 * after the first few.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'

/** One peer's entry; `seq` orders equal RTTs as the insertion order does. */
export interface RttEntry {
  readonly peer: PeerId
  readonly rttMs: number
  readonly seq: number
}

/**
 * A map from peer to RTT with two sorted views: every entry, and the entries not set aside
 * (`setAside`: peers already probed in this burst, which a near pick skips).
 */
export class RttOrder {
  private readonly byPeer = new Map<PeerId, RttEntry>()
  private readonly order: RttEntry[] = []
  /** `order` without the entries of peers set aside. */
  private fresh: RttEntry[] = []
  private nextSeq = 0

  /** @param isAside - whether a peer is set aside now (consulted when its entry is added) */
  constructor (private readonly isAside: (peer: PeerId) => boolean = () => false) {}

  get size (): number { return this.byPeer.size }

  has (peer: PeerId): boolean { return this.byPeer.has(peer) }

  get (peer: PeerId): number | undefined { return this.byPeer.get(peer)?.rttMs }

  /** Sets `peer`'s RTT; a known peer keeps its place in the insertion order. */
  set (peer: PeerId, rttMs: number): void {
    const cur = this.byPeer.get(peer)
    if (cur !== undefined) {
      if (cur.rttMs === rttMs) return
      remove(this.order, cur)
      removeIfThere(this.fresh, cur)
    }
    const e: RttEntry = { peer, rttMs, seq: cur?.seq ?? this.nextSeq++ }
    this.byPeer.set(peer, e)
    this.order.splice(insertionPoint(this.order, e), 0, e)
    if (!this.isAside(peer)) this.fresh.splice(insertionPoint(this.fresh, e), 0, e)
  }

  /** `peer` is set aside: it leaves the fresh view until `restoreAll`. */
  setAside (peer: PeerId): void {
    const cur = this.byPeer.get(peer)
    if (cur !== undefined) removeIfThere(this.fresh, cur)
  }

  /** Nobody is set aside any more. */
  restoreAll (): void {
    this.fresh = this.order.slice()
  }

  delete (peer: PeerId): boolean {
    const cur = this.byPeer.get(peer)
    if (cur === undefined) return false
    remove(this.order, cur)
    removeIfThere(this.fresh, cur)
    this.byPeer.delete(peer)
    return true
  }

  /** Keeps only the peers `keep` accepts (one pass, for pruning many at once). */
  retain (keep: (peer: PeerId) => boolean): void {
    for (const peer of [...this.byPeer.keys()]) if (!keep(peer)) this.byPeer.delete(peer)
    for (const list of [this.order, this.fresh]) {
      let n = 0
      for (const e of list) if (this.byPeer.get(e.peer) === e) list[n++] = e
      list.length = n
    }
  }

  /** Entries in insertion order, as [peer, rttMs]. */
  * [Symbol.iterator] (): IterableIterator<[PeerId, number]> {
    for (const [peer, e] of this.byPeer) yield [peer, e.rttMs]
  }

  /** RTTs in insertion order. */
  * values (): IterableIterator<number> {
    for (const e of this.byPeer.values()) yield e.rttMs
  }

  /** Peers in insertion order. */
  keys (): IterableIterator<PeerId> {
    return this.byPeer.keys()
  }

  /** Entries by RTT, ties in insertion order (shared: do not modify). */
  get sorted (): readonly RttEntry[] { return this.order }

  /** The entries not set aside, in the same order (shared: do not modify). */
  get sortedFresh (): readonly RttEntry[] { return this.fresh }
}

/** First position in `list` whose entry sorts after `e` (by RTT, then seq). */
function insertionPoint (list: readonly RttEntry[], e: RttEntry): number {
  let lo = 0
  let hi = list.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    const m = list[mid] as RttEntry
    if (m.rttMs < e.rttMs || (m.rttMs === e.rttMs && m.seq <= e.seq)) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** Removes `e` from `list` if it is there; returns whether it was. */
function removeIfThere (list: RttEntry[], e: RttEntry): boolean {
  const i = insertionPoint(list, e) - 1
  if (list[i] !== e) return false
  list.splice(i, 1)
  return true
}

/** Removes `e`, which must be in `list`. */
function remove (list: RttEntry[], e: RttEntry): void {
  if (!removeIfThere(list, e)) throw new Error('RttOrder: entry not found (internal)')
}
