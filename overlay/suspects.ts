/**
 * Connections that closed while their peer was alive. A closed connection may be a graceful
 * leave whose facts are still on their way (through a contact), so the peer is waited on
 * for a grace period (`suspectGraceMs`) before its crash is declared. Sans-IO: the timer is
 * the core's.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'

/** Peers in their grace period, with the incarnation whose connection closed. */
export class Suspects {
  private readonly byPeer = new Map<PeerId, number>()

  /** @param graceMs - `suspectGraceMs`; 0 declares at once */
  constructor (private readonly graceMs: number, private readonly setTimer: (at: number, peer: PeerId) => void) {}

  /** `peer`'s connection (incarnation `inc`) closed: true when it is waited on, false to declare it lost now. */
  wait (now: number, peer: PeerId, inc: number): boolean {
    if (this.graceMs <= 0) return false
    if (!this.byPeer.has(peer)) { this.byPeer.set(peer, inc); this.setTimer(now + this.graceMs, peer) }
    return true
  }

  /** The grace period of `peer` ended: the incarnation suspected, if any. */
  expire (peer: PeerId): number | undefined {
    const inc = this.byPeer.get(peer)
    this.byPeer.delete(peer)
    return inc
  }
}
