/**
 * Connections that closed while their peer was alive. A closed connection may be a graceful
 * leave whose facts are still on their way (through a contact), so the peer is waited on
 * for a grace period (`suspectGraceMs`) before its crash is declared. Sans-IO: the timer is
 * the core's.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'

/** Peers in their grace period: the incarnation whose connection closed, and when its grace ends. */
export class Suspects {
  private readonly byPeer = new Map<PeerId, { inc: number, untilMs: number }>()

  /** @param graceMs - `suspectGraceMs`; 0 declares at once */
  constructor (private readonly graceMs: number, private readonly setTimer: (at: number, peer: PeerId) => void) {}

  /**
   * `peer`'s connection (incarnation `inc`) closed: true when it is waited on, false to
   * declare it lost now. The close of a newer incarnation than the one waited on replaces
   * it, with a grace of its own: the older one kept, the newer one's "left" fact matched
   * no close, and what was recorded as its own stayed so (test/leaver-close-order).
   */
  wait (now: number, peer: PeerId, inc: number): boolean {
    if (this.graceMs <= 0) return false
    const cur = this.byPeer.get(peer)
    if (cur === undefined || inc > cur.inc) { this.byPeer.set(peer, { inc, untilMs: now + this.graceMs }); this.setTimer(now + this.graceMs, peer) }
    return true
  }

  /**
   * A grace timer of `peer` fired: the incarnation suspected once its grace has ended, if
   * any. A timer of a wait that ended early ({@link end}) is no longer `peer`'s: the grace of
   * its next close runs on (cut short, a graceful leave was declared a crash).
   */
  due (now: number, peer: PeerId): number | undefined {
    const cur = this.byPeer.get(peer)
    if (cur === undefined || now < cur.untilMs) return undefined
    this.byPeer.delete(peer)
    return cur.inc
  }

  /** `peer`'s wait ends early (its "left" fact came): the incarnation whose connection closed, if it was waited on. */
  end (peer: PeerId): number | undefined {
    const cur = this.byPeer.get(peer)
    this.byPeer.delete(peer)
    return cur?.inc
  }
}
