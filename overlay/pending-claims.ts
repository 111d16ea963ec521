/**
 * Crash take-overs that wait for agreement before the successor owns anything.
 *
 * Survivors compute a dead peer's successor from their own views; views that differ (a
 * joiner's snapshot a little stale, restarts learnt in different orders) can make a peer
 * name itself successor of ranges that others have already moved on. Owning at once gave
 * two owners for a moment (about a round trip), and a broadcast in that window could be
 * delivered twice. So a take-over is a *claim*: the successor applies its record to its
 * view and sends it to every member it knows alive (facts with `claim`), but owns nothing
 * yet. Each member applies the claim, sends back any record of its own there that names
 * another owner (a newer hand-off, a competing claim it had first), then `claim-ack`: on
 * the one ordered control lane per pair, so the records (and any hand-off of ranges the
 * claim took from it) arrive first. Once every member has answered or is gone, the
 * successor owns what its view still names it for there, and hands the rest to whoever
 * its view names now (a hand-off marked `lost`: the crashed peer's state is gone, so the
 * receiver starts a new lineage), as if it had owned the ranges and yielded.
 *
 * Why that is enough: a member answers only after applying the claim, so from then on it
 * owns nothing the claim beats there (it yielded and handed it over). Any record that
 * beats the claim was known to some member, whose answer brings it. Two claims of equal
 * version resolve by owner id at every peer, and each claimer waits for the other's
 * answer, which carries the winning record to the loser. Data for virtual nodes claimed
 * and not owned yet waits at the claimer (streams park what the view names as the
 * peer's own but the peer does not own).
 *
 * A member learnt of while a claim waits (a joiner, perhaps given some of those ranges
 * already) is sent the claim and waited for too. Members answer the claimer named in the
 * record, whoever passed the claim on (a contact forwards facts to its recent joiners).
 *
 * Bounded: at most MAX_PENDING_CLAIMS wait at once, each at most the failure-detection
 * timeout; past either the claim is settled without the missing answers (the old
 * behaviour: own at once), so a member that never answers (hung, or a joiner whose
 * buffer overflowed) delays a take-over by that timeout, data for those virtual nodes
 * waiting meanwhile. At most MAX_GIVES_PER_CLAIM gives wait per claim (later ones are
 * dropped: that rejoiner gets less than it asked for).
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'

/** Claims waiting for answers at once, at most (the oldest is settled early past it). */
export const MAX_PENDING_CLAIMS = 256

/** Hand-offs asked for (a `give` to a rejoiner) of claimed ranges, kept per claim at most. */
export const MAX_GIVES_PER_CLAIM = 64

/** One claim waiting for the members' answers. */
export interface PendingClaim {
  readonly record: OwnershipRecord
  /** When it was made. */
  readonly since: number
  /** Members that have not answered yet (and are not known gone). */
  readonly waiting: Set<PeerId>
  /** `give` requests for claimed ranges that arrived meanwhile: handed on once owned. */
  readonly gives: Array<{ to: PeerId, ranges: IntervalSet }>
}

/** The claims of one peer still waiting for agreement, oldest first. */
export class PendingClaims {
  private readonly claims: PendingClaim[] = []

  /** Claims waiting. */
  get size (): number { return this.claims.length }

  /**
   * `peer` became a member (alive) while claims wait: every waiting claim waits for its
   * answer too. Returns those claims' records, to send it.
   */
  awaitAlso (peer: PeerId): OwnershipRecord[] {
    const out: OwnershipRecord[] = []
    for (const c of this.claims) {
      if (c.waiting.has(peer)) continue
      c.waiting.add(peer)
      out.push(c.record)
    }
    return out
  }

  /** The virtual nodes claimed and not settled yet. */
  ranges (): IntervalSet {
    let out = IntervalSet.EMPTY
    for (const c of this.claims) out = out.union(c.record.ranges)
    return out
  }

  /**
   * Adds a claim awaiting `members`; returns the claims settled by it: itself when nobody
   * is to answer, or the oldest one when the bound is passed.
   */
  add (now: number, record: OwnershipRecord, members: Iterable<PeerId>): PendingClaim[] {
    const claim: PendingClaim = { record, since: now, waiting: new Set(members), gives: [] }
    if (claim.waiting.size === 0) return [claim]
    this.claims.push(claim)
    return this.claims.length > MAX_PENDING_CLAIMS ? this.claims.splice(0, 1) : []
  }

  /** `from` answered the claim of `version` over `ranges`: the claims that have all their answers now. */
  answered (from: PeerId, version: number, ranges: IntervalSet): PendingClaim[] {
    return this.settle((c) => c.record.version === version && c.record.ranges.equals(ranges) && c.waiting.delete(from))
  }

  /** `peer` is gone (dead or left): it will not answer. The claims settled by that. */
  gone (peer: PeerId): PendingClaim[] {
    return this.settle((c) => c.waiting.delete(peer))
  }

  /**
   * The claims made `timeoutMs` or more before `now`, settled without the answers still
   * missing: a member that is alive and never answers (it lost the claim: a joiner's full
   * buffer) must not leave the ranges unowned for ever. The deadline is computed as the
   * claim's timer was (`since + timeoutMs`): `now - timeoutMs` can round below `since`, and
   * the claim would then wait for a timer that was already spent.
   */
  expire (now: number, timeoutMs: number): PendingClaim[] {
    return this.settle((c) => {
      if (c.since + timeoutMs > now) return false
      c.waiting.clear()
      return true
    })
  }

  /**
   * Remembers a `give` of claimed ranges to `to`, to do once the claim settles; returns
   * what of `ranges` no pending claim covers (to give now, if owned).
   */
  deferGive (to: PeerId, ranges: IntervalSet): IntervalSet {
    let rest = ranges
    for (const c of this.claims) {
      const part = rest.intersection(c.record.ranges)
      if (part.isEmpty) continue
      if (c.gives.length < MAX_GIVES_PER_CLAIM) c.gives.push({ to, ranges: part })
      rest = rest.difference(part)
    }
    return rest
  }

  private settle (touched: (c: PendingClaim) => boolean): PendingClaim[] {
    const done: PendingClaim[] = []
    for (let i = 0; i < this.claims.length; i++) {
      const c = this.claims[i] as PendingClaim
      if (touched(c) && c.waiting.size === 0) {
        done.push(c)
        this.claims.splice(i--, 1)
      }
    }
    return done
  }
}
