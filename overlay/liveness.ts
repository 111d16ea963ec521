/**
 * Crash detection for the peers this one waits for (unacknowledged stream data, partial
 * results under way): one that stays silent past the failure-detection timeout is pinged,
 * and declared dead if it stays silent another timeout. Anything heard from a peer counts.
 * Sans-IO: the core calls `heard` on every message and `check` when its 'liveness' timer
 * fires, and sends what `check` asks for.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'

/** What liveness needs from the peer around it. */
export interface LivenessHost {
  /** Peers this one waits for now. */
  awaited (): Iterable<PeerId>
  ping (peer: PeerId): void
  declareDead (now: number, peer: PeerId): void
  /** Arms the core's 'liveness' timer. */
  setTimer (at: number): void
  /**
   * When `peer` was last heard from, kept by the host; with {@link setHeardAt} (both or
   * neither). Absent: liveness keeps the times itself.
   */
  heardAt? (peer: PeerId): number | undefined
  /** Records that time; false when the host keeps none for `peer` (liveness then does). */
  setHeardAt? (peer: PeerId, now: number): boolean
}

/** Silence tracking of the awaited peers. */
export class Liveness {
  private readonly lastHeard = new Map<PeerId, number>()
  private readonly pingSent = new Map<PeerId, number>()
  private armed = false

  constructor (private readonly host: LivenessHost, private readonly timeoutMs: number) {}

  /**
   * Something arrived from `peer`. `recorded`: the host already noted the time (its
   * `setHeardAt`, or the core's member-list entry); otherwise it is noted here.
   */
  heard (now: number, peer: PeerId, recorded = false): void {
    if (!recorded) this.setHeardAt(peer, now)
    if (this.pingSent.size > 0) this.pingSent.delete(peer)
  }

  /** Peers whose last message is remembered here, not by the host (for tests of the bound). */
  get tracked (): number { return this.lastHeard.size }

  private heardAt (peer: PeerId): number | undefined {
    return this.host.heardAt?.(peer) ?? this.lastHeard.get(peer)
  }

  private setHeardAt (peer: PeerId, now: number): void {
    if (this.host.setHeardAt?.(peer, now) !== true) this.lastHeard.set(peer, now)
  }

  /** At the end of an event: keeps the timer armed (every half timeout) while anyone is awaited. */
  arm (now: number, waiting: boolean): void {
    if (this.armed || !waiting) return
    this.armed = true
    this.host.setTimer(now + this.timeoutMs / 2)
  }

  /** The liveness timer fired: ping the silent, declare dead the silent that were pinged. */
  check (now: number): void {
    this.armed = false
    for (const peer of this.host.awaited()) {
      const heard = this.heardAt(peer)
      if (heard === undefined) { this.setHeardAt(peer, now); continue }
      if (now - heard <= this.timeoutMs) continue
      const pinged = this.pingSent.get(peer)
      if (pinged === undefined) {
        this.pingSent.set(peer, now)
        this.host.ping(peer)
      } else if (now - pinged > this.timeoutMs) {
        this.host.declareDead(now, peer)
      }
    }
  }
}
