/**
 * The bandwidths this peer's probes measured, so that probing the same peer again soon
 * (near peers are asked again and again while their trees fill) can skip the 128 KB
 * download: a light probe asks only for the tree state and judges it with the bandwidth
 * measured at most `reuseMs` ago. The RTT is measured afresh by every probe.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'

/** Peers whose bandwidth is remembered at once; the least recently measured is forgotten past it. */
export const MAX_BANDWIDTHS_REMEMBERED = 4096

interface Measured { readonly bwBytesPerSec: number, readonly atMs: number }

/** Recent probe downloads of one peer, by target. */
export class BandwidthMemory {
  private readonly byPeer = new Map<PeerId, Measured>()

  /** `reuseMs` 0 disables reuse: every probe downloads. */
  constructor (private readonly reuseMs: number) {}

  /** A probe download to `peer` measured `bwBytesPerSec` at `now`. */
  measured (peer: PeerId, bwBytesPerSec: number, now: number): void {
    if (this.reuseMs <= 0) return
    this.byPeer.delete(peer)
    this.byPeer.set(peer, { bwBytesPerSec, atMs: now })
    if (this.byPeer.size > MAX_BANDWIDTHS_REMEMBERED) this.byPeer.delete(this.byPeer.keys().next().value as PeerId)
  }

  /** The bandwidth to `peer` if measured within `reuseMs` of `now`. */
  known (peer: PeerId, now: number): number | undefined {
    const m = this.byPeer.get(peer)
    if (m === undefined) return undefined
    if (now - m.atMs > this.reuseMs) {
      this.byPeer.delete(peer)
      return undefined
    }
    return m.bwBytesPerSec
  }

  /** `peer` left or died: a peer of the same name later is measured anew. */
  forget (peer: PeerId): void { this.byPeer.delete(peer) }

  /** Peers remembered now (for tests and bounds). */
  get size (): number { return this.byPeer.size }
}
