/**
 * Which peers are near this one, for picking probe candidates. 003 ends (§VI) with:
 * "instead of selecting parent candidates randomly, a processor can use hints given by other
 * processors to preferentially select nearby processors". This keeps, per peer, the smallest
 * RTT this peer measured to it (a minimum filters out queueing), and for peers it has not
 * probed an estimate from hints: a probed candidate c reports its nearest peers x with
 * RTT(c,x), and RTT(self,c) + RTT(c,x) bounds RTT(self,x) by the triangle inequality.
 *
 * `pick` chooses uniformly among the few lowest estimates not probed since the last
 * membership change, so a burst walks through the near peers instead of asking the same
 * one again; once all were asked, it asks again the one asked longest ago. Sans-IO: randomness and liveness come from the caller.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { RttOrder, type RttEntry } from './rtt-order.ts'
import { clusterTag } from './cluster-tag.ts'

/** Nearest peers a probe reply reports (bounded on the wire by MAX_NEAR_HINTS). */
export const NEAR_HINTS_PER_REPLY = 8
/** Most hints a remote reply may carry; more are rejected by the codec. */
export const MAX_NEAR_HINTS = 32
/** A near pick chooses uniformly among this many lowest estimates. */
export const NEAR_POOL_SIZE = 8
/**
 * Near means an estimate at most this many times the smallest RTT measured: a hint through
 * a same-cluster peer (two local hops) stays in, a peer behind a wide-area link does not.
 */
export const NEAR_RTT_FACTOR = 3

/** One hint in a probe reply: a peer near the sender, and the sender's RTT to it. */
export interface NearHint {
  readonly peer: PeerId
  readonly rttMs: number
}

/** What this peer knows about distances to others. */
export class NearPeers {
  /** Smallest RTT measured by this peer's own probes, ms. */
  private readonly measured = new RttOrder((p) => this.probed.has(p))
  /** Triangle-bound estimates for peers not measured yet, ms. */
  private readonly hinted = new RttOrder((p) => this.probed.has(p))
  /** Peers probed since the last `newBurst()`, with the order they were probed in. */
  private readonly probed = new Map<PeerId, number>()
  private probeSeq = 0
  /** Smallest RTT in `measured`, dead peers included (kept as measurements come, redone on prune). */
  private minMeasuredMs = Infinity

  constructor (private readonly self: PeerId) {}

  /** A probe of `peer` measured `rttMs`. */
  measuredRtt (peer: PeerId, rttMs: number): void {
    if (peer === this.self || !(rttMs >= 0)) return
    const cur = this.measured.get(peer)
    if (cur === undefined || rttMs < cur) this.measured.set(peer, rttMs)
    if (rttMs < this.minMeasuredMs) this.minMeasuredMs = rttMs
    this.hinted.delete(peer)
  }

  /** Smallest RTT measured to any peer, gone ones included (Infinity when none); O(1). */
  get nearestMeasuredMs (): number {
    return this.minMeasuredMs
  }

  /** A probe of `via` (at `viaRttMs`) reported its nearest peers. */
  addHints (via: PeerId, viaRttMs: number, hints: readonly NearHint[]): void {
    if (!(viaRttMs >= 0)) return
    for (const h of hints) {
      if (h.peer === this.self || h.peer === via || this.measured.has(h.peer) || !(h.rttMs >= 0)) continue
      const est = viaRttMs + h.rttMs
      const cur = this.hinted.get(h.peer)
      if (cur === undefined || est < cur) this.hinted.set(h.peer, est)
    }
  }

  /** This peer's nearest measured peers that are still alive, nearest first, for a probe reply. */
  nearest (isAlive: (p: PeerId) => boolean, count = NEAR_HINTS_PER_REPLY): NearHint[] {
    const best: NearHint[] = []
    for (const e of this.measured.sorted) {
      if (best.length >= count) break
      if (isAlive(e.peer)) best.push({ peer: e.peer, rttMs: e.rttMs })
    }
    return best
  }

  /**
   * Up to `count` near peers (measured RTT within NEAR_RTT_FACTOR of the nearest live one),
   * chosen uniformly (reservoir sampling over the measurements, in their stored order), for
   * telling them of tree news: the nearest few alone would be the same few every time.
   */
  sampleNear (random: () => number, isAlive: (p: PeerId) => boolean, count: number): PeerId[] {
    const limitMs = NEAR_RTT_FACTOR * this.nearestRtt(isAlive)
    const out: PeerId[] = []
    let seen = 0
    for (const [peer, rttMs] of this.measured) {
      if (rttMs > limitMs || !isAlive(peer)) continue
      seen++
      if (out.length < count) out.push(peer)
      else {
        const j = Math.floor(random() * seen)
        if (j < count) out[j] = peer
      }
    }
    return out
  }

  /** A membership change started a new burst of probes: every peer may be probed again. */
  newBurst (): void {
    this.probed.clear()
    this.measured.restoreAll()
    this.hinted.restoreAll()
  }

  /** `peer` is being probed now. */
  markProbed (peer: PeerId): void {
    this.probed.set(peer, ++this.probeSeq)
    this.measured.setAside(peer)
    this.hinted.setAside(peer)
  }

  /**
   * A near candidate (an estimate within NEAR_RTT_FACTOR of the nearest live peer measured):
   * uniform among the `pool` lowest estimates of live peers not probed in this burst, or,
   * when every near peer was probed, the one probed longest ago (its state has changed
   * since); undefined when no near peer is known.
   */
  pick (random: () => number, isAlive: (p: PeerId) => boolean, pool = NEAR_POOL_SIZE): PeerId | undefined {
    const limitMs = NEAR_RTT_FACTOR * this.nearestRtt(isAlive)
    const best: NearHint[] = []
    // Measured then hinted estimates of peers not probed in this burst, merged by RTT
    // (measured first on ties, each in its insertion order): the order a stable scan of
    // both would keep. Past the limit, or with the pool full, nothing further can change it.
    const a = this.measured.sortedFresh
    const b = this.hinted.sortedFresh
    let i = 0
    let j = 0
    while (best.length < pool) {
      const x = a[i]
      const y = b[j]
      let e: RttEntry
      if (x !== undefined && (y === undefined || x.rttMs <= y.rttMs)) { e = x; i++ } else if (y !== undefined) { e = y; j++ } else break
      if (e.rttMs > limitMs) break
      if (isAlive(e.peer)) best.push({ peer: e.peer, rttMs: e.rttMs })
    }
    if (best.length > 0) return (best[Math.min(best.length - 1, Math.floor(random() * best.length))] as NearHint).peer
    // Every near peer was probed: the one probed longest ago.
    let oldest: PeerId | undefined
    let oldestSeq = Infinity
    for (const [peer, seq] of this.probed) {
      if (seq >= oldestSeq) continue
      const est = this.measured.get(peer) ?? this.hinted.get(peer)
      if (est === undefined || est > limitMs || !isAlive(peer)) continue
      oldestSeq = seq
      oldest = peer
    }
    return oldest
  }

  /** Drops what is known of peers that are no longer alive, once they outnumber the live ones. */
  prune (isAlive: (p: PeerId) => boolean, aliveCount: number): void {
    if (this.measured.size + this.hinted.size <= 2 * aliveCount + 16) return
    this.measured.retain(isAlive)
    this.hinted.retain(isAlive)
    this.minMeasuredMs = Infinity
    for (const rttMs of this.measured.values()) if (rttMs < this.minMeasuredMs) this.minMeasuredMs = rttMs
    for (const peer of [...this.probed.keys()]) if (!isAlive(peer)) this.probed.delete(peer)
  }

  /**
   * A test of nearness with the same bound as `pick`: measured or hinted RTT at most
   * NEAR_RTT_FACTOR times the smallest RTT measured to a live peer. Peers with neither a
   * measurement nor a hint are not near.
   */
  nearTest (isAlive: (p: PeerId) => boolean): (peer: PeerId) => boolean {
    const limitMs = NEAR_RTT_FACTOR * this.nearestRtt(isAlive)
    return (peer) => {
      const est = this.measured.get(peer) ?? this.hinted.get(peer)
      return est !== undefined && est <= limitMs
    }
  }

  /** Smallest RTT measured to a live peer (Infinity when none). */
  nearestRtt (isAlive: (p: PeerId) => boolean): number {
    for (const e of this.measured.sorted) if (isAlive(e.peer)) return e.rttMs
    return Infinity
  }

  /** This peer's cluster tag (overlay/cluster-tag.ts): measured peers within the near bound only. */
  clusterTag (isAlive: (p: PeerId) => boolean): PeerId[] {
    return clusterTag(this.self, this.measured.sorted, NEAR_RTT_FACTOR * this.nearestRtt(isAlive), isAlive)
  }

  /** Whether `peer` was probed in this burst. */
  wasProbed (peer: PeerId): boolean {
    return this.probed.has(peer)
  }

  /** Smallest RTT measured to `peer`, if probed. */
  rttOf (peer: PeerId): number | undefined {
    return this.measured.get(peer)
  }

  /** Peers measured and hinted (for tests and views). */
  get size (): { measured: number, hinted: number } {
    return { measured: this.measured.size, hinted: this.hinted.size }
  }
}
