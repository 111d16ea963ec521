/**
 * The RTT survey (ours, not 003's): a peer that starts with no measurements pings a
 * random sample of peers (1 byte each way) so that its near lane knows some near peers.
 *
 * Why: "near" is relative (overlay/near-peers.ts: within NEAR_RTT_FACTOR of the nearest
 * peer measured). A peer whose first random probes all went to other clusters took those
 * far peers for near ones: its near lane probed them over and over, its offers went to
 * them, and no peer of its own cluster ever measured it. In fig7 (137 peers, 4 clusters,
 * seed 2) one such peer probed 25 peers of other clusters and none of its own, and kept a
 * wide-area parent of its own in the bandwidth tree at 3.35 MB/s while its cluster ran at
 * 5.06 MB/s: two wide-area flows into one cluster halve a 64 MB broadcast's bandwidth.
 * With `count` random peers, the chance that none is in a cluster holding a fraction f of
 * the peers is (1 - f)^count: 0.01% for f = 1/4 and 32 peers.
 *
 * Survey pings carry SURVEY_NONCE, which neither the probe runners (2 and up) nor liveness
 * pings (0) use; the pong is matched by its sender. All pings go at once: sending them 4 or
 * 16 at a time (the next on each pong) left more wide-area edges, at some seeds more than
 * no survey (64 peers, seeds 1-6, bandwidth-tree edges over all roots: 192-220 with 4,
 * 238-383 with 16, 192 with all 32 at once; not explained). On real peers every ping to a
 * peer not yet connected is a dial, so node/ surveys 6 peers, not 32 (NODE_NEAR_SURVEY_COUNT;
 * README "Probing", node/README.md). Sans-IO: randomness comes from the caller.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'

/** The nonce of survey pings (probe runners use 2 and up, liveness pings 0). */
export const SURVEY_NONCE = -1

/** One peer's survey: whom it pinged, and when. */
export class NearSurvey {
  private readonly sent = new Map<PeerId, number>()

  /**
   * @param count - peers pinged per survey (0: no survey)
   * @param expireMs - a ping unanswered this long is given up (the core's `probeTimeoutMs`)
   */
  constructor (private readonly count: number, private readonly expireMs = Infinity) {}

  /**
   * Starts a survey of up to `count` peers picked uniformly from `candidates` (a partial
   * shuffle of a copy) and returns whom to ping; nobody while an earlier survey still
   * waits for a pong younger than `expireMs`. Peers whose ping expired are given up and
   * not pinged again by this survey, so a very late pong never meets a newer ping. Restarting used to forget the earlier send times, and a pong that
   * answered an earlier ping was timed from the later one: fig9's mass rejoin (80 peers
   * rejoining at once, each triggered again by the others' joins before any pong came)
   * measured 0.06-0.22 ms across 0.3 ms links, which made a peer take its 0.31 ms parent
   * for a cluster crossing, a fourth stripe, and the broadcasts after the rejoin 0.71x as
   * fast at seed 3 (EXPERIMENTS.md, fifteenth round).
   */
  start (now: number, candidates: readonly PeerId[], random: () => number): PeerId[] {
    const late = new Set<PeerId>()
    for (const [peer, at] of this.sent) if (now - at >= this.expireMs) { this.sent.delete(peer); late.add(peer) }
    if (this.sent.size > 0) return []
    const pool = late.size === 0 ? candidates.slice() : candidates.filter((p) => !late.has(p))
    const n = Math.min(this.count, pool.length)
    for (let i = 0; i < n; i++) {
      const j = i + Math.floor(random() * (pool.length - i))
      const pick = pool[j] as PeerId
      pool[j] = pool[i] as PeerId
      pool[i] = pick
      this.sent.set(pick, now)
    }
    return pool.slice(0, n)
  }

  /** A pong carrying SURVEY_NONCE from `from`: the RTT if `from` was pinged by this survey and had not answered yet. */
  onPong (now: number, from: PeerId): number | undefined {
    const at = this.sent.get(from)
    if (at === undefined) return undefined
    this.sent.delete(from)
    return now - at
  }
}
