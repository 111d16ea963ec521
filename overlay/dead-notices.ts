/**
 * When each dead peer that spoke was last told it is dead (OwnershipEngine.noticeDead): at
 * most once per second each, and at most `max` peers remembered (the oldest forgotten).
 * Sans-IO.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'

export class DeadNotices {
  private readonly last = new Map<PeerId, number>()

  constructor (private readonly max: number) {}

  /** Whether `peer` is to be told at `now` (not told within the last second); remembered if so. */
  due (now: number, peer: PeerId): boolean {
    const last = this.last.get(peer)
    if (last !== undefined && now - last < 1000) return false
    this.last.delete(peer)
    this.last.set(peer, now)
    if (this.last.size > this.max) this.last.delete(this.last.keys().next().value as PeerId)
    return true
  }
}
