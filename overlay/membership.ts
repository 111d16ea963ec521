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
import { InvalidArgumentError } from './errors.ts'

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

/** What the member list holds of one member: a fact without its peer id. */
interface Fact { readonly incarnation: number, readonly status: MemberStatus }

/**
 * The founders of one overlay, all alive at incarnation 0: every founder's member list
 * starts from the same one (see {@link Membership.startFrom}) and copies only what it
 * changes. Built once per bootstrap by whoever starts several founders in one process (the
 * simulator): 2,000 founders' lists of 2,000 members each were 4 million entries, 380 MB of a
 * 2,000-peer simulation's heap (docs/SCALE.md).
 */
export class FounderMembers {
  /** @internal */ readonly facts: ReadonlyMap<PeerId, Fact>
  /** @internal */ readonly alive: readonly PeerId[]

  constructor (readonly founders: readonly PeerId[]) {
    const fact: Fact = { incarnation: 0, status: 'alive' }
    this.facts = new Map(founders.map((p) => [p, fact]))
    this.alive = [...this.facts.keys()].sort(comparePeerIds)
  }
}

const NO_FACTS: ReadonlyMap<PeerId, Fact> = new Map()

/**
 * The member list. Facts live in `own`, over a `base` shared with other founders (empty
 * unless {@link startFrom}): a fact here hides the base's, `null` marks a base member
 * forgotten. When anything last arrived from a member (overlay/liveness.ts reads it) is
 * kept apart, only for members heard from, in a mutable box so that noting it allocates
 * nothing.
 */
export class Membership {
  private base: ReadonlyMap<PeerId, Fact> = NO_FACTS
  private readonly own = new Map<PeerId, Fact | null>()
  /** Founders forgotten and met again: listed in `own`'s order, not the base's (at most the founders). */
  private readonly returned = new Set<PeerId>()
  private readonly heard = new Map<PeerId, { atMs: number }>()
  private count = 0
  private aliveCache: readonly PeerId[] | undefined
  /** Members that left or died, the longest gone first. */
  private readonly gone = new Set<PeerId>()

  /** Starts this (empty) list as `founders`' list: shared, not copied. */
  startFrom (founders: FounderMembers): void {
    if (this.count > 0) throw new InvalidArgumentError('startFrom: the member list is not empty')
    this.base = founders.facts
    this.count = founders.facts.size
    this.aliveCache = founders.alive
  }

  private get (peer: PeerId): Fact | undefined {
    const o = this.own.get(peer)
    return o === undefined ? this.base.get(peer) : (o ?? undefined)
  }

  /** Merges a fact; returns the change, or undefined when it changed nothing. */
  apply (fact: MemberFact): MemberChange | undefined {
    const cur = this.get(fact.peer)
    if (cur !== undefined) {
      if (fact.incarnation < cur.incarnation) return undefined
      if (fact.incarnation === cur.incarnation && RANK[fact.status] <= RANK[cur.status]) return undefined
    } else {
      this.count++
      // A forgotten founder comes back after the others, as a list of its own would have it
      // (facts() order is a joiner's apply order, so its order of the departed to forget).
      if (this.own.get(fact.peer) === null) { this.own.delete(fact.peer); this.returned.add(fact.peer) }
    }
    this.own.set(fact.peer, { incarnation: fact.incarnation, status: fact.status })
    this.aliveCache = undefined
    this.gone.delete(fact.peer)
    if (fact.status !== 'alive') {
      this.gone.add(fact.peer)
      if (this.gone.size > MAX_GONE_MEMBERS) {
        const oldest = this.gone.values().next().value as PeerId
        this.gone.delete(oldest)
        this.forget(oldest)
      }
    }
    const before = cur?.status
    if (before === fact.status && cur?.incarnation === fact.incarnation) return undefined
    return { peer: fact.peer, before, after: fact.status, incarnation: fact.incarnation }
  }

  private forget (peer: PeerId): void {
    if (this.base.has(peer)) this.own.set(peer, null)
    else this.own.delete(peer)
    this.heard.delete(peer)
    this.count--
  }

  /** Status of `peer`, undefined if never heard of. */
  statusOf (peer: PeerId): MemberStatus | undefined {
    return this.get(peer)?.status
  }

  /** Something arrived from member `peer` at `now` (nothing is kept for non-members). */
  noteHeard (peer: PeerId, now: number): void {
    this.setHeardAt(peer, now)
  }

  /** When anything last arrived from `peer`, if it is a member and was heard from. */
  heardAt (peer: PeerId): number | undefined {
    return this.heard.get(peer)?.atMs
  }

  /** Records `now` as when `peer` was last heard from; false if it is no member (nothing kept). */
  setHeardAt (peer: PeerId, now: number): boolean {
    const h = this.heard.get(peer)
    if (h !== undefined) { h.atMs = now; return true }
    if (this.get(peer) === undefined) return false
    this.heard.set(peer, { atMs: now })
    return true
  }

  /** Incarnation of `peer` as known here (-1 if unknown). */
  incarnationOf (peer: PeerId): number {
    return this.get(peer)?.incarnation ?? -1
  }

  isAlive (peer: PeerId): boolean {
    return this.get(peer)?.status === 'alive'
  }

  /** Alive members in the global peer-id order (cached until the next change). */
  alive (): readonly PeerId[] {
    if (this.aliveCache === undefined) {
      const out: PeerId[] = []
      for (const [peer, m] of this.entries()) if (m.status === 'alive') out.push(peer)
      this.aliveCache = out.sort(comparePeerIds)
    }
    return this.aliveCache
  }

  /** Every member and its fact: the base's first (as this list sees them), then the others in the order they came (or came back). */
  private * entries (): IterableIterator<[PeerId, Fact]> {
    for (const [peer, m] of this.base) {
      const o = this.own.get(peer)
      if (o === null || this.returned.has(peer)) continue
      yield [peer, o ?? m]
    }
    for (const [peer, m] of this.own) if (m !== null && (!this.base.has(peer) || this.returned.has(peer))) yield [peer, m]
  }

  /** Members with status `status` heard from at `sinceMs` or later, in peer-id order (a scan: for rare events). */
  heardSince (status: MemberStatus, sinceMs: number): PeerId[] {
    const out: PeerId[] = []
    // Members never heard from count as heard at -Infinity.
    if (sinceMs === -Infinity) for (const [peer, m] of this.entries()) { if (m.status === status) out.push(peer) }
    else for (const [peer, h] of this.heard) if (h.atMs >= sinceMs && this.get(peer)?.status === status) out.push(peer)
    return out.sort(comparePeerIds)
  }

  /** Every fact, for a joiner's snapshot. */
  facts (): MemberFact[] {
    const out: MemberFact[] = []
    for (const [peer, m] of this.entries()) out.push({ peer, incarnation: m.incarnation, status: m.status })
    return out
  }

  get size (): number { return this.count }
}
