/**
 * Membership and ownership changes of one peer: joins through this peer, graceful leaves
 * and the hand-offs they make, crash take-overs by the successor rule, re-homing of
 * orphaned records, dead notices, and the set of virtual nodes this peer owns. Facts
 * (member facts and ownership records) merge into the member list and the view; every
 * change is turned into outputs, tree and stream updates through the host.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import { joinShare, successorOf } from '../virtual-nodes/assignment.ts'
import { deliveredWithin } from '../virtual-nodes/handoff.ts'
import { disownsFor } from '../trees/tree-ops.ts'
import type { MemberChange } from './membership.ts'
import type { FactsMessage, GiveMessage, HandoffMessage, MemberFact, Message } from './messages.ts'
import type { OwnershipReason } from './outputs.ts'
import { PendingClaims, type PendingClaim } from './pending-claims.ts'
import { Guesses } from './guesses.ts'
import { Orphans } from './orphans.ts'
import { JOINER_FORWARD_MS, JoinAnnouncer } from './join-announce.ts'
import { JoinDonors } from './join-donors.ts'
import { joinElsewhereTarget } from './join-attempt.ts'
import { UnackedHandoffs } from './unacked-handoffs.ts'
import { DeadNotices } from './dead-notices.ts'
import { numberedBy } from './incarnation-numbers.ts'
import type { OwnershipHost } from './ownership-host.ts'
import { spreadRecords, tellGuessed, tellOthers, tellOwner, type RecordNewsHost } from './record-news.ts'
export { MAX_ORPHAN_RECORDS } from './orphans.ts'
export { JOINER_FORWARD_MS } from './join-announce.ts'
export type { OwnershipHost } from './ownership-host.ts'

/**
 * Version steps of ownership records. A hand-off or a crash take-over is a claim and
 * advances the version by CLAIM_VERSION_STEP; re-homing a record that names a peer already
 * gone (a leaver's successor that left too) advances it by ORPHAN_VERSION_STEP only. Peers
 * whose views differed re-home such records locally, each adding a little; the next real
 * claim by the actual owner still beats all of them.
 */
export const CLAIM_VERSION_STEP = 1000
export const ORPHAN_VERSION_STEP = 1

/** Joiners a contact passes new facts on to at most (the most recent ones). */
export const MAX_RECENT_JOINERS = 256

/** The membership and ownership engine of one peer. */
export class OwnershipEngine {
  private ownedValue = IntervalSet.EMPTY
  private leaveTarget: PeerId | undefined
  /** Hand-offs sent and not yet acknowledged (overlay/unacked-handoffs.ts; a leaver waits for them). */
  private readonly handoffsUnacked = new UnackedHandoffs()
  /** Peers that joined through this one recently: facts learnt later are passed on to them. */
  private readonly recentJoiners = new Map<PeerId, number>()
  private readonly deadNotices = new DeadNotices(MAX_RECENT_JOINERS) // overlay/dead-notices.ts
  /** Orphan records this view assigned to other peers, by assignee (overlay/orphans.ts). */
  private readonly orphans = new Orphans()
  /** Peers that left gracefully and whose connection has closed since (they forward nothing any more). */
  private readonly departed = new Set<PeerId>()
  /** Successors this view guessed for others and told nobody (overlay/guesses.ts). */
  private readonly guesses = new Guesses()
  /** This peer's take-overs waiting for the members' answers before it owns them. */
  private readonly claims = new PendingClaims()
  private readonly donors = new JoinDonors() // shares asked of donors for joiners (most-loaded)

  readonly announce: JoinAnnouncer // a joiner's own announcements (overlay/join-announce.ts)
  /** Records told to peers whose views may lack them (overlay/record-news.ts). */
  private readonly news: RecordNewsHost
  constructor (private readonly host: OwnershipHost) {
    this.announce = new JoinAnnouncer(host)
    this.news = { self: host.self, get view () { return host.view }, alive: () => host.members.alive(), vnodeCount: () => host.vnodeCount(), send: (to, m) => host.send(to, m) }
  }

  /** The virtual nodes this peer owns. */
  get owned (): IntervalSet { return this.ownedValue }
  /** Hand-offs sent and not yet acknowledged. */
  get handoffsPending (): number { return this.handoffsUnacked.size }
  /** Take-over claims still waiting for answers (a leaver waits for them). */
  get claimsPending (): number { return this.claims.size }

  /** Virtual nodes claimed by take-overs that have not settled yet. */
  claimed (): IntervalSet { return this.claims.ranges() }

  /** Whether `peer` left gracefully and its connection has closed since. */
  isDeparted (peer: PeerId): boolean { return this.departed.has(peer) }

  /** Leaving: hands everything this peer owns to its successor among the alive members. */
  startLeave (): void {
    this.leaveTarget = successorOf(this.host.self, this.host.members.alive())
    if (this.leaveTarget !== undefined) this.handoffTo(this.leaveTarget, this.ownedValue)
  }

  /** A peer asks to join through this one (this peer is its contact). */
  onJoin (now: number, joiner: PeerId, incarnation: number, asked: IntervalSet | undefined, of?: number): void {
    const { members } = this.host
    const elsewhere = this.host.isLeaving() ? joinElsewhereTarget(this.host.self, joiner, this.leaveTarget, members) : undefined
    if (elsewhere !== undefined) { this.host.send(joiner, { t: 'join-elsewhere', to: elsewhere }); return } // overlay/join-attempt.ts
    if (!this.host.isRunning()) { this.host.reject('join-while-not-running'); return }
    // Ranges of an overlay of another size (a saved state reused elsewhere) name nothing here: a plain join.
    const otherOverlay = of !== undefined && of !== this.host.vnodeCount()
    if (otherOverlay) this.host.reject('join-want-of-other-overlay')
    const want = otherOverlay ? undefined : asked
    const fact: MemberFact = { peer: joiner, incarnation, status: 'alive' }
    // A restart before the crash was noticed: the welcome says so (the earlier incarnation dead, ahead of the rest), as its tree children may still point to it (core.onWelcome).
    const restarted: MemberFact[] = members.isAlive(joiner) && members.incarnationOf(joiner) < incarnation ? [{ peer: joiner, incarnation: members.incarnationOf(joiner), status: 'dead' }] : []
    const change = members.apply(fact)
    if (change === undefined && !members.isAlive(joiner)) { this.host.reject('stale-join'); return }
    const joined: FactsMessage = { t: 'facts', vnodeCount: this.host.vnodeCount(), members: [fact], records: [], welcome: false }
    this.host.fanout(joined, joiner); this.toDrainingLeavers(now, joined, joiner) // else they took a rejoin's messages (a `resend`) for its dead incarnation's
    this.recentJoiners.set(joiner, now + JOINER_FORWARD_MS)
    if (this.recentJoiners.size > MAX_RECENT_JOINERS) this.recentJoiners.delete(this.recentJoiners.keys().next().value as PeerId)
    // Before the snapshot: a restarted peer's old ranges must show as taken over in it.
    if (change !== undefined) this.memberChanged(now, change)
    const vnodes = this.host.vnodeCount()
    this.host.send(joiner, { t: 'facts', vnodeCount: vnodes, members: [...restarted, ...members.facts()], records: this.host.view.records(), welcome: true })
    if (want !== undefined && !want.isEmpty) {
      for (const [owner, part] of this.host.view.partition(want.intersection(IntervalSet.range(0, vnodes)))) {
        if (owner === this.host.self) this.handoffTo(joiner, this.claims.deferGive(joiner, part))
        else if (members.isAlive(owner) && owner !== joiner) this.host.send(owner, { t: 'give', to: joiner, ranges: part })
      }
      return
    }
    if (this.host.joinPolicy === 'most-loaded') {
      const pick = this.donors.pick(this.host.view, this.host.self, new Set(members.alive().filter((p) => p !== joiner)))
      if (pick !== undefined && pick.donor !== this.host.self) {
        this.host.send(pick.donor, { t: 'give', to: joiner, ranges: pick.share, share: true })
        return
      }
    }
    this.handoffTo(joiner, joinShare(this.ownedValue))
  }

  /** Facts other than a joiner's snapshot: ownership records and member facts. */
  onFacts (now: number, from: PeerId, msg: FactsMessage): void {
    let changed = false
    for (const rec of msg.records) if (this.applyRecord(now, rec, from)) changed = true
    for (const f of msg.members) {
      if (f.peer === this.host.self && f.status !== 'alive' && f.incarnation === this.host.incarnation() && this.host.isRunning()) {
        this.host.evicted()
        return
      }
      const change = this.host.members.apply(f)
      if (change !== undefined) { changed = true; this.memberChanged(now, change) }
    }
    if (changed && !this.host.isLeaving()) this.forwardToJoiners(now, from, msg)
    // To the claimer itself: a contact passes claims on to its recent joiners.
    if (msg.claim === true) for (const rec of msg.records) if (rec.owner !== this.host.self) this.answerClaim(rec.owner, rec)
  }

  /** Answers `claimer`'s take-over claim `rec` (applied already): first any record here naming another owner there, then the acknowledgement (pending-claims.ts). */
  private answerClaim (claimer: PeerId, rec: OwnershipRecord): void {
    tellOthers(this.news, claimer, rec.ranges, rec.owner)
    this.host.send(claimer, { t: 'claim-ack', version: rec.version, ranges: rec.ranges })
  }

  /** A member answered this peer's claim. */
  onClaimAck (from: PeerId, version: number, ranges: IntervalSet): void {
    this.settle(this.claims.answered(from, version, ranges))
  }

  /** Claims that waited too long are settled without the missing answers. */
  onClaimTimer (now: number): void {
    this.settle(this.claims.expire(now, this.host.claimTimeoutMs()))
  }

  /**
   * Settled claims: own what the view still gives this peer there, and hand the rest to
   * whom the view names now, as if this peer had owned it and yielded (applyRecord): a
   * record that beat the claim may be a successor some view only guessed, who would not
   * know. Then do what waited (a leave, gives).
   */
  private settle (done: PendingClaim[]): void {
    if (done.length === 0) return
    const { view, self, members } = this.host
    for (const c of done) {
      this.toOwners(c.record.ranges, true)
      // The members applied the claim (its fan-out), maybe not what the view ended with there: what beat it (a guess
      // sent to its owner alone), or a newer record naming this peer that beat a guess some member holds (seed 7726).
      spreadRecords(this.news, view.recordsIn(c.record.ranges).filter((r) => r.owner === self ? r.version !== c.record.version : members.isAlive(r.owner)))
      const mine = view.partition(c.record.ranges).get(self) ?? IntervalSet.EMPTY
      const gained = mine.difference(this.ownedValue).difference(this.claims.ranges())
      if (!gained.isEmpty) this.setOwned(this.ownedValue.union(gained), 'takeover')
      if (this.host.isLeaving()) {
        if (this.leaveTarget === undefined || !members.isAlive(this.leaveTarget)) this.leaveTarget = successorOf(self, members.alive())
        if (this.leaveTarget !== undefined) this.handoffTo(this.leaveTarget, gained)
      }
      // Gives that waited: what is owned now goes, what another pending claim covers waits for it, what the view names another peer for is asked of that peer.
      for (const g of c.gives) {
        if (!members.isAlive(g.to)) continue
        for (const [owner, part] of view.partition(g.ranges)) {
          if (owner === self) this.handoffTo(g.to, this.claims.deferGive(g.to, part))
          else if (owner !== g.to && members.isAlive(owner)) this.host.send(owner, { t: 'give', to: g.to, ranges: part })
        }
      }
    }
    this.host.checkLeft()
  }

  /** A peer asks this one to hand `msg.ranges` (what of them it owns) to `msg.to`. */
  onGive (msg: GiveMessage): void {
    if (!this.host.members.isAlive(msg.to)) { this.host.reject('give-to-non-member'); return }
    // A joiner's share whose ranges went to another contact's joiner meanwhile (same donor, same view): half of what is owned now.
    const ranges = msg.share === true && !msg.ranges.intersects(this.ownedValue) ? joinShare(this.ownedValue) : msg.ranges
    this.handoffTo(msg.to, this.claims.deferGive(msg.to, ranges))
  }

  /** A hand-off this peer sent to `from` was acknowledged. */
  onHandoffAck (from: PeerId): void { this.handoffsUnacked.acked(from); this.host.checkLeft() }

  /**
   * A joiner's snapshot may miss facts its contact learns just after (a concurrent join, a crash): the contact passes them on for a while,
   * not while it leaves (onFacts): members fan it no records then, and a take-over that a leaver's stale view told it alone as successor
   * (a leaver claims nothing) its joiners re-homed to a peer that never knew, for good (migration-fuzz 146785, 162383). They sync at its close (join-announce `gone`).
   */
  private forwardToJoiners (now: number, from: PeerId, msg: FactsMessage): void {
    for (const [joiner, until] of this.recentJoiners) {
      if (until < now || !this.host.members.isAlive(joiner)) { this.recentJoiners.delete(joiner); continue }
      if (joiner !== from) this.host.send(joiner, msg)
    }
  }

  private applyRecord (now: number, rec: OwnershipRecord, from: PeerId): boolean {
    const { members, view, self } = this.host
    if (rec.ownerIncarnation !== undefined && rec.ownerIncarnation > members.incarnationOf(rec.owner) && rec.owner !== self) {
      // A claim by an incarnation newer than we know: that incarnation is alive.
      const change = members.apply({ peer: rec.owner, incarnation: rec.ownerIncarnation, status: 'alive' })
      if (change !== undefined) this.memberChanged(now, change)
    }
    const won = view.apply(rec)
    this.guesses.heard(this.host.view, rec)
    // Naming this peer, it lost here (a take-over guessed by a view that missed a crashed sender's hand-off): the sender learns what beat it (seed 9170).
    if (rec.owner === self && from !== self) tellOthers(this.news, from, rec.ranges.difference(won), self)
    else tellGuessed(this.news, rec, won, this.guesses.below(rec.version)) // seed 64537: it lost to a successor guessed here (record-news.ts)
    if (won.isEmpty) return false
    const status = members.statusOf(rec.owner)
    if ((status === 'left' || status === 'dead') && (rec.ownerIncarnation === undefined || rec.ownerIncarnation <= members.incarnationOf(rec.owner))) {
      // Handed to a peer already gone (a leaver's successor that left or crashed unnoticed): nobody would own it; the successor rule takes it.
      // What it took from this peer goes to whom the view names now, as below: kept, it had two owners once that successor's claim settled
      // (seed 50695: a take-over of a restarted peer's old incarnation, whose successor had left, beat what the new incarnation was handed).
      const lost = won.intersection(this.ownedValue)
      this.takeOver(now, rec.owner, ORPHAN_VERSION_STEP, members.incarnationOf(rec.owner))
      for (const r of view.recordsIn(lost)) if (r.owner !== self && members.isAlive(r.owner)) this.yieldTo(r)
      return true
    }
    // Named for an incarnation older than the alive one known: its hand-off (or a take-over's notice) went to that incarnation, lost. Unknown to the
    // owner, it could win here for good over a claim answered already. Told, the owner claims it or answers what beat it (what this peer owns goes by hand-off).
    if (rec.owner !== self && rec.ownerIncarnation !== undefined && rec.ownerIncarnation < members.incarnationOf(rec.owner)) {
      const untold = won.difference(this.ownedValue)
      if (!untold.isEmpty) tellOwner(this.news, { ...rec, ranges: untold })
    }
    if (rec.owner === self) {
      // Another view made this peer a successor (takeOver): claimed here unless owned or claimed already.
      const part = won.difference(this.ownedValue).difference(this.claims.ranges())
      if (!part.isEmpty && this.host.isRunning()) this.claim(now, { ...rec, ranges: part, ownerIncarnation: this.host.incarnation() })
      return true
    }
    const lost = won.intersection(this.ownedValue)
    if (!lost.isEmpty) this.yieldTo({ ranges: lost, owner: rec.owner, version: rec.version, ...(rec.ownerIncarnation !== undefined ? { ownerIncarnation: rec.ownerIncarnation } : {}) })
    return true
  }

  /** A newer (or tie-winning) `record` took ranges this peer holds: pass their state on to its owner. */
  private yieldTo (record: OwnershipRecord): void {
    this.setOwned(this.ownedValue.difference(record.ranges), 'conflict')
    this.host.send(record.owner, { t: 'handoff', record, delivered: deliveredWithin(new Map(this.host.streams.delivered.entries()), record.ranges) })
    // The members applied the record by which this peer held it; the one that beat it may have reached few (test/migration-fuzz 3181).
    spreadRecords(this.news, [record])
  }

  /** `restartedAs`: the change is the death of an incarnation that a newer one, `restartedAs`, replaced unnoticed. */
  private memberChanged (now: number, c: MemberChange, restartedAs?: number): void {
    if (c.before === 'alive' && c.after === 'alive') {
      // A newer incarnation of a peer we still held alive: its previous one is gone (crashed and restarted unnoticed): that death first.
      this.memberChanged(now, { peer: c.peer, before: 'alive', after: 'dead', incarnation: c.incarnation - 1 }, c.incarnation)
      this.memberChanged(now, { peer: c.peer, before: 'dead', after: 'alive', incarnation: c.incarnation })
      return
    }
    this.host.emit({ type: 'member', peer: c.peer, status: c.after })
    if (c.after === 'alive') {
      // A member learnt of while a claim waits may hold its ranges already (a joiner given them): it is asked too, and waited for.
      for (const rec of this.claims.awaitAlso(c.peer)) this.host.send(c.peer, { t: 'facts', vnodeCount: this.host.vnodeCount(), members: [], records: [rec], welcome: false, claim: true })
      // The leaver's close unseen (test/migration-fuzz 3846): the close of that incarnation, if it comes, is stale now and dropped,
      // so what it never acknowledged is sent again, and what is still recorded as that incarnation's is re-homed (seed 32953).
      if (!this.departed.delete(c.peer) && c.before === 'left') this.leaverGone(now, c.peer, c.incarnation - 1)
      this.orphans.forget(c.peer)
      this.announce.learnt(now, c.peer, () => this.host.view.recordsIn(this.ownedValue))
      // 003: peers probe to join a joiner's trees; one that roots none (treeRootStride) affects no peer here.
      if (this.host.trees.ensureRoot(c.peer) && this.host.isRunning()) this.host.triggerProbing(now)
      return
    }
    this.host.trees.removeRoot(c.peer)
    this.host.memberGone(now, c.peer)
    if (c.after === 'dead') this.announce.gone(now, c.peer)
    this.settle(this.claims.gone(c.peer))
    if (c.after === 'left') this.rehomeOrphansOf(now, c.peer)
    else this.orphans.forget(c.peer)
    // One that left may still acknowledge a hand-off: waited for until its close (connectionLost). What a dead one was handed is taken over
    // (below); its delivered marks go to the new owners, as for a leaver's (a leaver may see a peer that left as dead: cascaded leaves).
    const unacked = c.after === 'dead' ? this.handoffsUnacked.take(c.peer) : []
    const wasParent = this.host.trees.peerGone(c.peer, restartedAs !== undefined ? { keepsCheck: (id) => numberedBy(id, restartedAs) } : c.after === 'dead' ? 'dead' : 'left')
    if (c.after === 'dead') {
      this.takeOver(now, c.peer, CLAIM_VERSION_STEP, c.incarnation)
      for (const ranges of unacked) this.toOwners(ranges, false)
      this.host.streams.peerGone(c.peer)
      if (unacked.length > 0) this.host.checkLeft()
    }
    if (wasParent && this.host.isRunning()) this.host.triggerProbing(now)
    // Its connection closed before this fact came (waited on as a suspect): the close is handled now, as after the fact. Waiting for the
    // grace to end instead, a rejoin of the leaver meanwhile made that close stale, and what was still recorded as its own stayed so (seed 32953).
    if (c.after === 'left' && this.host.closedEarly(c.peer) === c.incarnation) this.connectionLost(now, c.peer, c.incarnation)
  }

  /**
   * Deterministic take-over of what `dead` owned: every survivor computes the same record
   * when views agree. `step` is CLAIM_VERSION_STEP after a crash, ORPHAN_VERSION_STEP when
   * a record names a peer already gone (see the constants). Only what was claimed for
   * `incarnation` of `dead` or an older one is taken: a restarted incarnation keeps what it
   * was given since.
   */
  private takeOver (now: number, dead: PeerId, step: number, incarnation: number, only?: IntervalSet): void {
    const { members, view, self } = this.host
    const ranges = only ?? view.rangesOf(dead, incarnation)
    if (ranges.isEmpty) return
    const succ = successorOf(dead, members.alive())
    if (succ === undefined) return
    const record: OwnershipRecord = { ranges, owner: succ, version: view.maxVersionIn(ranges) + step, ownerIncarnation: members.incarnationOf(succ) }
    const won = view.apply(record)
    if (succ === self) this.guesses.forget(won)
    else this.guesses.add(won, record.version - step)
    if (succ !== self && step === ORPHAN_VERSION_STEP) this.orphans.remember(succ, record)
    if (succ === self) this.claim(now, record)
    // A crash take-over's successor is told what this view made it: had its own view named another (views that
    // differ on who is alive, snapshots carrying such guesses), nobody would claim (swarm-striped-10380).
    else if (step === CLAIM_VERSION_STEP && !won.isEmpty) this.host.send(succ, { t: 'facts', vnodeCount: this.host.vnodeCount(), members: [], records: [{ ...record, ranges: won }], welcome: false })
  }

  /** Claims `record` (this peer its owner): stated to all, owned once they answered (or the claim timer). */
  private claim (now: number, record: OwnershipRecord): void {
    // Every survivor computes the same record unless views differ (concurrent restarts, a stale snapshot): stated to all, owned once answered.
    this.host.fanout({ t: 'facts', vnodeCount: this.host.vnodeCount(), members: [], records: [record], welcome: false, claim: true })
    this.host.setClaimTimer(now + this.host.claimTimeoutMs())
    this.settle(this.claims.add(now, record, this.host.members.alive().filter((p) => p !== this.host.self)))
  }

  /**
   * `peer` left: orphans this view re-homed to it and that nothing has claimed since
   * (the record is still exactly ours) would never be claimed. A leaving peer never takes
   * an orphan over (its own view has it gone already) and forwards what it is sent for it
   * back along its view, so without this, data for these virtual nodes would bounce
   * between it and the peers whose view names it until it disconnects (the leave timeout,
   * when it waits for that very data). Re-homed by the successor rule among the members
   * alive now; claims by the actual owners (hand-offs, crash take-overs) beat it.
   */
  private rehomeOrphansOf (now: number, peer: PeerId): void {
    // Successors guessed for it: a leaver claims nothing (its claims came before its leave, FIFO), so it would never own them (swarm-striped-9063).
    const guessed = this.guesses.of(this.host.view, peer)
    if (!guessed.isEmpty) this.takeOver(now, peer, ORPHAN_VERSION_STEP, this.host.members.incarnationOf(peer), guessed)
    for (const rec of this.orphans.take(peer)) {
      const still = this.host.view.partition(rec.ranges).get(peer)
      if (still === undefined || still.isEmpty || this.host.view.maxVersionIn(still) !== rec.version) continue
      this.takeOver(now, peer, ORPHAN_VERSION_STEP, this.host.members.incarnationOf(peer), still)
    }
  }

  /**
   * The connection to `peer` (of `incarnation`) is gone for good: an alive peer crashed; a
   * peer that left is departed, and what is still recorded as its own is re-homed.
   */
  connectionLost (now: number, peer: PeerId, incarnation: number): void {
    const { members } = this.host
    if (incarnation < members.incarnationOf(peer)) return
    const status = members.statusOf(peer)
    if (status === 'alive') this.declareDead(now, peer)
    else if (status === 'left') {
      this.departed.add(peer)
      this.leaverGone(now, peer, incarnation)
      this.host.trees.peerGone(peer)
    }
  }

  /**
   * `incarnation` of `peer` (or an older one), which left, is gone for good (its close, or a
   * newer incarnation of it): it forwards nothing any more.
   */
  private leaverGone (now: number, peer: PeerId, incarnation: number): void {
    this.announce.gone(now, peer) // a contact that left forwards nothing from now on
    // Anything still recorded as the leaver's (a hand-off that reached it after it left, a take-over some view guessed for it)
    // would have no owner: the successor rule takes it, as after a crash. Before the streams re-route what the leaver had not acknowledged.
    const lost = this.handoffsUnacked.take(peer) // hand-offs sent to it after it left: lost with it
    this.takeOver(now, peer, ORPHAN_VERSION_STEP, incarnation)
    for (const ranges of lost) this.toOwners(ranges, false) // their delivered marks, to the new owners (test/leave-to-leaver)
    this.host.streams.peerGone(peer)
    if (lost.length > 0) this.host.checkLeft()
  }

  /** Declares `peer` dead: tells everyone, and the peer itself (if it is alive after all). */
  declareDead (now: number, peer: PeerId): void {
    const fact: MemberFact = { peer, incarnation: this.host.members.incarnationOf(peer), status: 'dead' }
    const change = this.host.members.apply(fact)
    if (change === undefined) return
    const facts: FactsMessage = { t: 'facts', vnodeCount: this.host.vnodeCount(), members: [fact], records: [], welcome: false }
    this.host.fanout(facts)
    this.toDrainingLeavers(now, facts, peer) // they may wait for the dead peer too (a hand-off, a stream): swarm-striped-6339
    // If the suspect is alive after all, it learns it was declared dead and stops (evicted).
    this.host.send(peer, facts)
    this.memberChanged(now, change)
  }

  /** Tells a peer declared dead that it was, at most once per second, and (trees/tree-ops.ts disownsFor) that it is no child here. */
  noticeDead (now: number, peer: PeerId, msg?: Message): void {
    const disowns = msg?.t === 'tree' ? disownsFor(msg.ops) : []
    if (disowns.length > 0) this.host.send(peer, { t: 'tree', ops: disowns })
    if (!this.deadNotices.due(now, peer)) return
    const fact: MemberFact = { peer, incarnation: this.host.members.incarnationOf(peer), status: 'dead' }
    this.host.send(peer, { t: 'facts', vnodeCount: this.host.vnodeCount(), members: [fact], records: [], welcome: false })
  }

  /** `facts` about `peer` to the leavers still draining (heard within a leave timeout; its own announcement counts): the fan-out reaches alive members only. */
  private toDrainingLeavers (now: number, facts: FactsMessage, peer: PeerId): void { for (const p of this.host.members.heardSince('left', now - this.host.leaveTimeoutMs())) if (p !== this.host.self && p !== peer && !this.departed.has(p)) this.host.send(p, facts) }

  /** Sends the delivered marks of `ranges` to the owners the view names there, in hand-offs of their records (`lost`: a yielded claim's). */
  private toOwners (ranges: IntervalSet, lost: boolean): void {
    for (const rec of this.host.view.recordsIn(ranges)) {
      if (rec.owner === this.host.self || !this.host.members.isAlive(rec.owner)) continue
      this.host.send(rec.owner, { t: 'handoff', record: rec, delivered: deliveredWithin(new Map(this.host.streams.delivered.entries()), rec.ranges), ...(lost ? { lost } : {}) })
      this.handoffsUnacked.sent(rec.owner, rec.ranges)
    }
  }

  private handoffTo (to: PeerId, ranges: IntervalSet): void {
    const give = ranges.intersection(this.ownedValue)
    if (give.isEmpty || to === this.host.self) return
    const record: OwnershipRecord = { ranges: give, owner: to, version: this.host.view.maxVersionIn(give) + CLAIM_VERSION_STEP, ownerIncarnation: this.host.members.incarnationOf(to) }
    this.host.view.apply(record)
    this.guesses.heard(this.host.view, record)
    const msg: HandoffMessage = { t: 'handoff', record, delivered: deliveredWithin(new Map(this.host.streams.delivered.entries()), give) }
    this.host.send(to, msg)
    this.handoffsUnacked.sent(to, give)
    this.host.fanout({ t: 'facts', vnodeCount: this.host.vnodeCount(), members: [], records: [record], welcome: false }, to)
    this.setOwned(this.ownedValue.difference(give), 'handoff-out')
  }

  /** A hand-off from `from`: take what it gives (and its delivery record), acknowledge it. */
  onHandoff (from: PeerId, msg: HandoffMessage): void {
    const { members, view, self, streams } = this.host
    view.apply(msg.record)
    this.guesses.heard(this.host.view, msg.record)
    // Where the sender still owns what it just gave, its record lost a tie here: survivors that saw two crashes in different
    // orders gave the same range different versions (one +1000 per take-over), and the sender's +1000 can equal a version
    // another view already gave the sender itself. Left so, the range would be owned by nobody (the sender gave it away in
    // its own view). The sender's word is final: claim it above every version known here, and tell everyone.
    // Likewise where the record lost to a successor this view guessed itself (see `guesses`): a snapshot that was stale,
    // then restarts learnt one after the other, can stack guesses above the versions of the real claims. The sender held it;
    // a guess named a peer that may not even know. Not where the hand-off is no newer than the record the guess replaced:
    // then it is a late one, about a range that moved since.
    // Not where this peer's own hand-off to the sender is still unacknowledged: the hand-offs crossed (two settled claims, each
    // view naming the other), the sender owns nothing there yet, and owns it once this peer's arrives (seed 39412).
    const guessedBefore = this.guesses.below(msg.record.version)
    const crossing = this.handoffsUnacked.to(from)
    let reclaim = IntervalSet.EMPTY
    for (const [owner, part] of view.partition(msg.record.ranges)) {
      if (owner === self || from === self) continue
      reclaim = reclaim.union(owner === from ? part.difference(crossing) : part.intersection(guessedBefore))
    }
    if (!reclaim.isEmpty) {
      const claim: OwnershipRecord = { ranges: reclaim, owner: self, version: view.maxVersionIn(reclaim) + CLAIM_VERSION_STEP, ownerIncarnation: this.host.incarnation() }
      view.apply(claim)
      this.guesses.heard(this.host.view, claim)
      this.host.fanout({ t: 'facts', vnodeCount: this.host.vnodeCount(), members: [], records: [claim], welcome: false })
    }
    const mine = view.partition(msg.record.ranges).get(self) ?? IntervalSet.EMPTY
    // What a claim of this peer's still waits for is owned when the claim settles (a yielding peer hands it
    // over first). Delivery marks are facts (the sender's lineage delivered there): taken for all of `mine`,
    // also what is owned already, so a hand-off that comes after a yielded claim's still counts.
    const gained = mine.difference(this.ownedValue).difference(this.claims.ranges())
    const reason = msg.lost === true ? 'takeover' : 'handoff-in'
    streams.delivered.merge(msg.delivered.map((d) => ({ streamId: d.streamId, vnodes: d.vnodes.intersection(mine) })).filter((d) => !d.vnodes.isEmpty))
    this.host.send(from, { t: 'handoff-ack', version: msg.record.version, ranges: msg.record.ranges })
    if (!gained.isEmpty) this.announce.handedOff(from, msg.record)
    if (this.host.isLeaving() && !gained.isEmpty) {
      // Passed on at once, to a successor alive now: the first one may have left since.
      if (this.leaveTarget === undefined || !members.isAlive(this.leaveTarget)) this.leaveTarget = successorOf(self, members.alive())
      if (this.leaveTarget !== undefined) {
        this.setOwned(this.ownedValue.union(gained), reason)
        this.handoffTo(this.leaveTarget, gained)
        return
      }
    }
    if (!gained.isEmpty) this.setOwned(this.ownedValue.union(gained), reason)
  }

  /** Sets the owned virtual nodes and outputs the change (always for 'initial'). */
  setOwned (next: IntervalSet, reason: OwnershipReason): void {
    const added = next.difference(this.ownedValue)
    const removed = this.ownedValue.difference(next)
    if (added.isEmpty && removed.isEmpty && reason !== 'initial') return
    this.ownedValue = next
    this.host.emit({ type: 'ownership', owned: next, added, removed, reason })
    this.host.trees.ownedChanged()
    this.host.streams.ownershipChanged()
  }
}
