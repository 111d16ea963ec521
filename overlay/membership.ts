/**
 * The member list one peer knows: every peer heard of, with its incarnation and status.
 * Facts merge like a CRDT: a higher incarnation wins; within one incarnation alive < left
 * < dead, so a departure is final for that incarnation.
 *
 * Peers that left or died are kept to refuse their incarnation's late word, but not for
 * ever: past {@link MAX_GONE_MEMBERS} of them the one gone longest is forgotten. Kept for
 * good, a long-lived overlay whose peers come and go under fresh ids grew the list without
 * bound, and its welcome snapshots past the frame limit (about 11,000 members), so nobody
 * could join any more. A forgotten peer is a stranger again (overlay/strangers.ts); a stale
 * fact naming it alive makes it a member until it is found dead again.
 */
import { comparePeerIds, type PeerId } from '../virtual-nodes/peer-id.ts'
import type { MemberFact, MemberStatus } from './messages.ts'

const RANK: Record<MemberStatus, number> = { alive: 0, left: 1, dead: 2 }

/** Members that left or died kept at most (the longest gone are forgotten first). */
export const MAX_GONE_MEMBERS = 4096

/** A change a fact caused. */
export interface MemberChange {
  readonly peer: PeerId
  readonly before: MemberStatus | undefined
  readonly after: MemberStatus
  readonly incarnation: number
}

/**
 * One member's entry. `heardAtMs` is when anything last arrived from it, -Infinity if
 * nothing did (overlay/liveness.ts reads it): kept here so that a message costs one lookup
 * in the member list, not two, and stored as a plain number, so noting it allocates nothing.
 */
export interface MemberEntry {
  readonly incarnation: number
  readonly status: MemberStatus
  readonly heardAtMs: number
}

/** The member list. */
export class Membership {
  private readonly members = new Map<PeerId, { incarnation: number, status: MemberStatus, heardAtMs: number }>()
  private aliveCache: PeerId[] | undefined
  /** Members that left or died, the longest gone first. */
  private readonly gone = new Set<PeerId>()

  /** Merges a fact; returns the change, or undefined when it changed nothing. */
  apply (fact: MemberFact): MemberChange | undefined {
    const cur = this.members.get(fact.peer)
    if (cur !== undefined) {
      if (fact.incarnation < cur.incarnation) return undefined
      if (fact.incarnation === cur.incarnation && RANK[fact.status] <= RANK[cur.status]) return undefined
    }
    this.members.set(fact.peer, { incarnation: fact.incarnation, status: fact.status, heardAtMs: cur?.heardAtMs ?? -Infinity })
    this.aliveCache = undefined
    this.gone.delete(fact.peer)
    if (fact.status !== 'alive') {
      this.gone.add(fact.peer)
      if (this.gone.size > MAX_GONE_MEMBERS) {
        const oldest = this.gone.values().next().value as PeerId
        this.gone.delete(oldest)
        this.members.delete(oldest)
      }
    }
    const before = cur?.status
    if (before === fact.status && cur?.incarnation === fact.incarnation) return undefined
    return { peer: fact.peer, before, after: fact.status, incarnation: fact.incarnation }
  }

  /** Status of `peer`, undefined if never heard of. */
  statusOf (peer: PeerId): MemberStatus | undefined {
    return this.members.get(peer)?.status
  }

  /** The entry of `peer`, undefined if never heard of (see {@link heard}). */
  entry (peer: PeerId): MemberEntry | undefined {
    return this.members.get(peer)
  }

  /** Something arrived from the member of `entry` (from {@link entry}) at `now`. */
  heard (entry: MemberEntry, now: number): void {
    (entry as { heardAtMs: number }).heardAtMs = now
  }

  /** When anything last arrived from `peer`, if it is a member and was heard from. */
  heardAt (peer: PeerId): number | undefined {
    const at = this.members.get(peer)?.heardAtMs
    return at === -Infinity ? undefined : at
  }

  /** Records `now` as when `peer` was last heard from; false if it is no member (nothing kept). */
  setHeardAt (peer: PeerId, now: number): boolean {
    const m = this.members.get(peer)
    if (m === undefined) return false
    m.heardAtMs = now
    return true
  }

  /** Incarnation of `peer` as known here (-1 if unknown). */
  incarnationOf (peer: PeerId): number {
    return this.members.get(peer)?.incarnation ?? -1
  }

  isAlive (peer: PeerId): boolean {
    return this.members.get(peer)?.status === 'alive'
  }

  /** Alive members in the global peer-id order (cached until the next change). */
  alive (): readonly PeerId[] {
    if (this.aliveCache === undefined) {
      this.aliveCache = [...this.members].filter(([, m]) => m.status === 'alive').map(([p]) => p).sort(comparePeerIds)
    }
    return this.aliveCache
  }

  /** Members with status `status` heard from at `sinceMs` or later, in peer-id order (a scan: for rare events). */
  heardSince (status: MemberStatus, sinceMs: number): PeerId[] {
    const out: PeerId[] = []
    for (const [peer, m] of this.members) if (m.status === status && m.heardAtMs >= sinceMs) out.push(peer)
    return out.sort(comparePeerIds)
  }

  /** Every fact, for a joiner's snapshot. */
  facts (): MemberFact[] {
    return [...this.members].map(([peer, m]) => ({ peer, incarnation: m.incarnation, status: m.status }))
  }

  get size (): number { return this.members.size }
}
