/**
 * When this peer probes (003 §IV-A): a burst after each membership change that may make
 * other parents better (the probe schedule), and, with steady probing on, one probe per
 * interval while the schedule is idle. Probes run in up to two lanes (a ProbeRunner each),
 * both taking their probes from the one schedule: the main lane (003's single probe at a
 * time), and with `probeNearLane` (the default) a near lane that only probes near peers,
 * at most one start per `probeNearLaneGapMs`, so that the 3 ms same-cluster probes do not
 * wait while the main lane's wide-area probe (100 ms or more when the wide-area link is
 * busy; nine tenths of the probing time after a mass join) is under way. The two lanes
 * never probe the same peer at once. A probe of a peer whose bandwidth was measured in the
 * last `probeBandwidthReuseMs` is light: no download (BandwidthMemory).
 *
 * Tree news (with the near lane): a peer whose tree got much better (trees/tree-news.ts)
 * sends an `offer` to up to OFFER_FANOUT near peers picked at random, at most once per
 * `treeNewsGapMs`; a peer offered to probes the offerer in its near lane next, unpaced,
 * between bursts too (these probes count as probing: the trees are still changing). 003's schedule
 * ends a burst ten probes after a peer has every parent, so a cluster-mate that later
 * found a far better parent (the cluster's first direct wide-area edge from the root) was
 * never seen again: the bandwidth trees kept one wide-area edge per few peers, all sharing
 * one link (fig7 at seed 1: 26% of List; with news 94%).
 *
 * Whom it probes: a uniformly random other member, or, with probability
 * `probeNearFraction`, one of the nearest peers it knows of (NearPeers: its own RTT
 * measurements and its candidates' hints) not yet probed in this burst: 003 §VI's
 * suggestion to "preferentially select nearby processors". The random share keeps finding
 * every other cluster; the near share finds the same-cluster parents that 003's random
 * choice reaches with probability 1/clusters per probe.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { ProbeSchedule } from '../trees/probe-schedule.ts'
import type { Message, NearHint, ProbeReplyMessage, ProbeTreeEntry } from './messages.ts'
import { BandwidthMemory } from './bandwidth-memory.ts'
import { NearPeers } from './near-peers.ts'
import { ProbeRunner, type ProbeOutcome } from './probe-runner.ts'
import { NearSurvey, SURVEY_NONCE } from './near-survey.ts'

/** Probers whose pong time is remembered at once; the oldest is forgotten past it. */
export const MAX_PONGS_TRACKED = 1024

/** What probing needs from the peer around it. */
export interface ProbingHost {
  readonly self: PeerId
  readonly random: () => number
  alive (): readonly PeerId[]
  isAlive (peer: PeerId): boolean
  send (to: PeerId, msg: Message): void
  /** Arms the timer of the probe in flight ('probe') or of the next steady probe ('steady'). */
  setTimer (at: number, kind: 'probe' | 'steady'): void
  /** `bwBytesPerSec` undefined: no download was made (it could not matter; `probeDownloadOnDemand`). */
  judged (now: number, cand: PeerId, rttMs: number, bwBytesPerSec: number | undefined, entries: readonly ProbeTreeEntry[]): void
  /** Whether a download from `cand` could change a bandwidth tree (trees/download-wanted.ts). */
  wantsDownload? (cand: PeerId, rttMs: number, entries: readonly ProbeTreeEntry[]): boolean
  /** Trees of this peer that have no parent (the schedule probes on while there are some). */
  parentlessCount (): number
  /** Whether this peer's latency tree of `root` runs through a far parent that is itself far from the root. */
  isDetour (root: PeerId, farRttMs: number): boolean
  /** Roots of all such trees, longest detour first, at most `max`. */
  detourRoots (farRttMs: number, max: number): PeerId[]
  /** Probes start only while the peer runs. */
  isRunning (): boolean
}

/** The settings probing uses. */
export interface ProbingConfig {
  probeExtraCount: number
  steadyProbeIntervalMs: number
  probeTimeoutMs: number
  probeBytes: number
  probePingCount: number
  probeNearFraction: number
  probeNearLane: boolean
  probeDetour: boolean
  probeBandwidthReuseMs: number
  probeNearLaneGapMs: number
  treeNewsGapMs: number
  nearSurveyCount: number
  probeDownloadOnDemand?: boolean
}

/** A parent is far when its RTT is at least this many times the nearest peer's. */
export const DETOUR_RTT_FACTOR = 4
/** Near peers told of this peer's tree news (an `offer`), at most. */
export const OFFER_FANOUT = 8
/** Offers waiting for their probe, at most (the oldest is dropped past it). */
export const MAX_OFFERS = 16
/** Detour roots waiting for their probe, at most (the oldest is dropped past it). */
export const MAX_DETOURS = 64

/** The probing of one peer. */
export class Probing {
  private readonly schedule: ProbeSchedule
  private readonly runner: ProbeRunner
  /** The near lane's runner (null without `probeNearLane`). */
  private readonly nearRunner: ProbeRunner | null
  private readonly near: NearPeers
  /** Bandwidths measured recently: a probe of the same peer then skips the download. */
  private readonly bandwidths: BandwidthMemory
  /** When we answered each prober's last probe ping, and its nonce (bounded): its probe-req, naming that nonce, then times its RTT to us. */
  private readonly pongAt = new Map<PeerId, { at: number, nonce: number }>()
  private steadyArmed = false
  /** Roots of detours seen (probeDetour), to be probed next; bounded by MAX_DETOURS. */
  private readonly detours: PeerId[] = []
  /** Roots already queued as detours since the last burst began (one probe each). */
  private readonly detoursAsked = new Set<PeerId>()
  /** The probe in flight was started by steady probing, not by a membership change. */
  private steadyProbe = false
  /** The near lane starts its next probe no sooner than this (`probeNearLaneGapMs` after its last start). */
  private nearNextAt = -Infinity
  /** A 'probe' timer is set for `nearNextAt`. */
  private nearTimerArmed = false
  /** Peers that offered (tree news), to be probed by the near lane; bounded by MAX_OFFERS. */
  private readonly offers: PeerId[] = []
  /** When each recent offerer's last offer was taken, oldest first; bounded by MAX_OFFERS (older than half treeNewsGapMs: forgotten). */
  private readonly offeredAt = new Map<PeerId, number>()
  /** Tree news waits to be sent at `newsAt` (at most one round per `treeNewsGapMs`). */
  private newsPending = false
  private newsAt = -Infinity
  private lastNewsAt = -Infinity
  private readonly survey: NearSurvey

  constructor (private readonly host: ProbingHost, private readonly cfg: ProbingConfig) {
    this.schedule = new ProbeSchedule(cfg.probeExtraCount)
    this.near = new NearPeers(host.self)
    this.bandwidths = new BandwidthMemory(cfg.probeBandwidthReuseMs)
    this.survey = new NearSurvey(cfg.nearSurveyCount, cfg.probeTimeoutMs)
    const judged = (now: number, cand: PeerId, rtt: number, bw: number | undefined, entries: readonly ProbeTreeEntry[], near: readonly NearHint[]): void => {
      this.near.measuredRtt(cand, rtt)
      this.near.addHints(cand, rtt, near)
      // Hints may name peers that are gone or never were (a reply is remote input). The main
      // lane prunes before each pick, but the near lane probes offerers between bursts and
      // goes on while a main-lane probe waits for seconds: pruned here too, the table stays
      // within its bound whoever is probed.
      this.near.prune((p) => this.host.isAlive(p), this.host.alive().length)
      host.judged(now, cand, rtt, bw, entries)
    }
    const runnerHost = (candidate: () => PeerId | undefined): ConstructorParameters<typeof ProbeRunner>[0] => ({
      candidate,
      baseRttMs: (peer) => this.near.rttOf(peer) ?? Infinity,
      knownBwBytesPerSec: (peer, now) => this.bandwidths.known(peer, now),
      measuredBw: (peer, bw, now) => this.bandwidths.measured(peer, bw, now),
      send: (to, m) => host.send(to, m),
      setTimer: (at) => host.setTimer(at, 'probe'),
      judged,
      finished: (now) => this.next(now),
      wantsDownload: (peer, rtt, entries) => host.wantsDownload?.(peer, rtt, entries) ?? true
    })
    this.runner = new ProbeRunner(runnerHost(() => this.candidate()), cfg, 0)
    this.nearRunner = cfg.probeNearLane ? new ProbeRunner(runnerHost(() => this.nearCandidate()), cfg, 1) : null
  }

  /** Numbers probes from `first` on (the core's incarnation's block; ProbeRunner.numberFrom). */
  numberFrom (first: number): void {
    this.runner.numberFrom(first)
    this.nearRunner?.numberFrom(first)
  }

  /**
   * A ping arrived and is answered now: if it is a probe's (the prober's runner numbers
   * them 1 and up), the probe-req that names its nonce will time the round trip. Liveness
   * pings (0) and survey pings (SURVEY_NONCE) are followed by no probe-req: recorded, one
   * that arrived between a probe's pong and its probe-req was taken for the probe's and
   * timed a fraction of the RTT (0 behind a queued link), which the near table keeps for
   * good as its smallest.
   */
  pinged (now: number, from: PeerId, nonce: number): void {
    if (!(nonce > 0)) return
    if (this.pongAt.size >= MAX_PONGS_TRACKED && !this.pongAt.has(from)) this.pongAt.delete(this.pongAt.keys().next().value as PeerId)
    this.pongAt.set(from, { at: now, nonce })
  }

  /**
   * A prober asks for its download (`nonce`: that of the probe's last ping, overlay/probe-runner.ts).
   * The time since our pong to that ping is the prober's RTT to us, so a probe teaches
   * locality to both ends. Returns the hints for the reply.
   */
  requested (now: number, from: PeerId, nonce: number): NearHint[] {
    const pong = this.pongAt.get(from)
    if (pong !== undefined && pong.nonce === nonce) {
      this.pongAt.delete(from)
      // Only a live member's: a stranger's would stay in the near table for good (overlay/strangers.ts).
      if (this.host.isAlive(from)) this.near.measuredRtt(from, now - pong.at)
    }
    return this.near.nearest((p) => p !== from && this.host.isAlive(p))
  }

  /** The smallest RTT this peer measured to `peer`, if it probed it. */
  rttOf (peer: PeerId): number | undefined {
    return this.near.rttOf(peer)
  }

  /** This peer's cluster tag (overlay/cluster-tag.ts), for the cluster entries it reports. */
  clusterTag (): readonly PeerId[] {
    return this.near.clusterTag((p) => this.host.isAlive(p))
  }

  /** Which peers are near this one (overlay/near-peers.ts `nearTest`). */
  nearTest (): (peer: PeerId) => boolean {
    return this.near.nearTest((p) => this.host.isAlive(p))
  }

  /** True while this peer probes because of a recent membership change (steady probes do not count). */
  get isProbing (): boolean { return this.schedule.isActive || (this.runner.inFlight && !this.steadyProbe) || this.nearRunner?.inFlight === true }

  /** Probes started so far. */
  get started (): number { return this.runner.started + (this.nearRunner?.started ?? 0) }

  /** A membership change: (re)starts the schedule, and a probe in each idle lane. */
  trigger (now: number): void {
    this.schedule.trigger()
    this.near.newBurst()
    if (this.nearRunner !== null && this.cfg.nearSurveyCount > 0 && this.near.size.measured === 0) {
      // A peer that measured nobody yet (it started or rejoined): overlay/near-survey.ts.
      const others = this.host.alive().filter((p) => p !== this.host.self)
      for (const peer of this.survey.start(now, others, this.host.random)) this.host.send(peer, { t: 'ping', nonce: SURVEY_NONCE })
    }
    // A new burst probes anyway, and its end scans every tree again.
    this.detours.length = 0
    this.detoursAsked.clear()
    this.next(now)
  }

  /**
   * This peer took a new parent in its latency tree of `root`, or the parent reports a
   * larger distance. If that parent is far (RTT at least DETOUR_RTT_FACTOR times the
   * nearest peer's) and itself at least as far from the root, the way to the root runs
   * through another far hop (a third cluster) where one could do. With `probeDetour`, and
   * between bursts (a burst's end scans every tree instead), the root is probed once per
   * burst: the parent rules, with the tie-break, then move this peer to it. Such detours
   * appear after a burst's last probe (an ancestor moves; a slow check commits under a
   * parent whose distance grew meanwhile), when 003's schedule would leave them until the
   * next membership change.
   */
  detourSeen (now: number, root: PeerId, parentRttMs: number, parentDistMs: number): void {
    if (!this.cfg.probeDetour || !this.host.isRunning() || this.schedule.isActive || this.detoursAsked.has(root)) return
    const farMs = this.farRttMs()
    if (!(parentRttMs >= farMs) || !(parentDistMs >= farMs)) return
    if (this.detours.length >= MAX_DETOURS) this.detoursAsked.delete(this.detours.shift() as PeerId)
    this.detoursAsked.add(root)
    this.detours.push(root)
    if (!this.runner.inFlight && !this.schedule.isActive) this.runner.start(now)
  }

  /**
   * Some tree of this peer got much better (trees/tree-news.ts): OFFER_FANOUT near peers
   * picked at random are told, at most once per `treeNewsGapMs` (news in between joins the
   * next round).
   */
  news (now: number): void {
    if (this.nearRunner === null || this.cfg.treeNewsGapMs <= 0 || this.newsPending || !this.host.isRunning()) return
    this.newsPending = true
    this.newsAt = Math.max(now, this.lastNewsAt + this.cfg.treeNewsGapMs)
    if (this.newsAt <= now) this.sendNews(now)
    else this.host.setTimer(this.newsAt, 'probe')
  }

  /**
   * A peer offered (its trees got much better): if it is near, the near lane probes it
   * next, between bursts too. Offers from peers not near, or not alive, are ignored; all
   * are with news off (`treeNewsGapMs` 0: 003's schedule alone decides who is probed, whatever
   * another peer's config or a forged offer says).
   */
  offered (now: number, from: PeerId): void {
    if (this.nearRunner === null || this.cfg.treeNewsGapMs <= 0 || !this.host.isRunning() || from === this.host.self || !this.host.isAlive(from)) return
    if (this.offers.includes(from) || this.nearRunner.target === from || !this.nearTest()(from)) return
    // A sender offers at most once per treeNewsGapMs: one that offers again sooner than half
    // that (links may bunch two rounds up) is not probed again; an offer flood made this peer
    // probe it back to back, each offer a probe (one per RTT), for as long as it lasted.
    const last = this.offeredAt.get(from)
    if (last !== undefined && now - last < this.cfg.treeNewsGapMs / 2) return
    this.offeredAt.delete(from)
    this.offeredAt.set(from, now)
    for (const [peer, at] of this.offeredAt) {
      if (this.offeredAt.size <= MAX_OFFERS && now - at < this.cfg.treeNewsGapMs / 2) break
      this.offeredAt.delete(peer)
    }
    if (this.offers.length >= MAX_OFFERS) this.offers.shift()
    this.offers.push(from)
    this.startNearLane(now)
  }

  private sendNews (now: number): void {
    this.newsPending = false
    this.lastNewsAt = now
    if (!this.host.isRunning()) return
    for (const peer of this.near.sampleNear(this.host.random, (p) => this.host.isAlive(p), OFFER_FANOUT)) this.host.send(peer, { t: 'offer' })
  }

  /** Stops the schedule (the peer is leaving). */
  stop (): void { this.schedule.stop() }

  onPong (now: number, from: PeerId, nonce: number): void {
    if (nonce === SURVEY_NONCE) {
      const rttMs = this.survey.onPong(now, from)
      if (rttMs !== undefined) { this.near.measuredRtt(from, rttMs); this.startNearLane(now) }
      return
    }
    this.runner.onPong(now, from, nonce)
    this.nearRunner?.onPong(now, from, nonce)
  }

  /** `peer` left or died: a probe waiting for it will not be answered; the next one starts. */
  targetGone (now: number, peer: PeerId): void {
    this.bandwidths.forget(peer)
    this.runner.abandon(now, peer)
    this.nearRunner?.abandon(now, peer)
  }

  /** A probe reply; returns how it ended a probe of either lane, if it did. */
  onReply (now: number, from: PeerId, msg: ProbeReplyMessage): ProbeOutcome | undefined {
    return this.runner.onReply(now, from, msg) ?? this.nearRunner?.onReply(now, from, msg)
  }

  /** The 'probe' timer fired (for either lane: each checks its own deadline). */
  onTimer (now: number): void {
    this.runner.onTimer(now)
    this.nearRunner?.onTimer(now)
    if (this.newsPending && now >= this.newsAt) this.sendNews(now)
    if (this.nearTimerArmed && now >= this.nearNextAt) {
      this.nearTimerArmed = false
      this.startNearLane(now)
    }
  }

  /** The 'steady' timer fired: a steady probe, unless one is in flight or the schedule runs. */
  onSteadyTimer (now: number): void {
    this.steadyArmed = false
    if (this.host.isRunning() && !this.runner.inFlight && !this.schedule.isActive) {
      this.steadyProbe = true
      this.runner.start(now)
    }
  }

  /** The main lane's next target: a near peer not probed in this burst, or a random other member. */
  private candidate (): PeerId | undefined {
    const alive = this.host.alive()
    this.near.prune((p) => this.host.isAlive(p), alive.length)
    const busy = this.nearRunner?.target
    // Between bursts the main lane probes only detour roots (and the steady probe).
    if (!this.schedule.isActive && !this.steadyProbe) {
      const root = this.takeDetour(busy)
      if (root !== undefined) this.near.markProbed(root)
      return root
    }
    let target: PeerId | undefined
    if (this.cfg.probeNearFraction > 0 && this.host.random() < this.cfg.probeNearFraction) {
      target = this.pickNear(busy)
    }
    if (target === undefined) {
      const others = alive.filter((p) => p !== this.host.self && p !== busy)
      if (others.length === 0) return undefined
      target = others[Math.floor(this.host.random() * others.length)] as PeerId
    }
    this.near.markProbed(target)
    return target
  }

  /**
   * The near lane's next target: a waiting offerer, else (in a burst only) a near peer not
   * probed in this burst, else the one probed longest ago (none known: undefined, the lane waits). It may thus ask the same few near
   * peers again and again; the trees do not retry a candidate whose check just failed
   * (trees/tree-table.ts `refused`), or a parentless peer whose near peers are all its
   * descendants would hold its tree locked with doomed checks every few ms.
   */
  private nearCandidate (): PeerId | undefined {
    while (this.offers.length > 0) {
      const offer = this.offers.shift() as PeerId
      if (offer !== this.runner.target && this.host.isAlive(offer)) { this.near.markProbed(offer); return offer }
    }
    // Between bursts the lane runs for offers only: one whose peer died (or is the main
    // lane's target) while it waited made it probe some near peer, outside any burst.
    if (!this.schedule.isActive) return undefined
    const target = this.pickNear(this.runner.target)
    if (target !== undefined) this.near.markProbed(target)
    return target
  }

  /** False only when the one other member is being probed by the near lane: the main lane waits for it. */
  private mainLaneHasTarget (): boolean {
    const busy = this.nearRunner?.target
    if (busy === undefined) return true
    const others = this.host.alive().filter((p) => p !== this.host.self)
    return others.length === 0 || others.some((p) => p !== busy)
  }

  /**
   * RTT from which a tree link counts as far, a cluster crossing (trees/tree-entries.ts):
   * DETOUR_RTT_FACTOR times the smallest RTT measured (Infinity when none). Cheap: called
   * on every parent change of a bandwidth tree.
   */
  linkFarRttMs (): number {
    return DETOUR_RTT_FACTOR * this.near.nearestMeasuredMs
  }

  /** RTT from which a parent counts as far: DETOUR_RTT_FACTOR times the nearest live peer's (Infinity when none is known). */
  private farRttMs (): number {
    return DETOUR_RTT_FACTOR * this.near.nearestRtt((p) => this.host.isAlive(p))
  }

  /**
   * The schedule's next decision, for either lane; the burst's end is seen here, whichever
   * lane meets it (when the near lane took the last probe, the main lane found the schedule
   * idle already, and the detours the burst left were never queued).
   */
  private nextOfSchedule (): 'probe' | 'idle' {
    const wasActive = this.schedule.isActive
    const d = this.schedule.next(this.host.parentlessCount())
    if (wasActive && d !== 'probe') this.burstEnded()
    return d
  }

  /** A burst ended: every detour its trees were left with is queued for one probe (probeDetour). */
  private burstEnded (): void {
    if (!this.cfg.probeDetour) return
    const farMs = this.farRttMs()
    if (!Number.isFinite(farMs)) return
    for (const root of this.host.detourRoots(farMs, MAX_DETOURS)) {
      if (this.detours.length >= MAX_DETOURS) break
      if (this.detoursAsked.has(root)) continue
      this.detoursAsked.add(root)
      this.detours.push(root)
    }
  }

  /** The next detour root to probe (see `detourSeen`), or undefined. */
  private takeDetour (busy: PeerId | undefined): PeerId | undefined {
    const farMs = this.farRttMs()
    while (this.detours.length > 0) {
      const root = this.detours.shift() as PeerId
      if (root !== busy && this.host.isAlive(root) && this.host.isDetour(root, farMs)) return root
      // Gone by itself (the tree changed since): a later detour to this root counts anew.
      this.detoursAsked.delete(root)
    }
    return undefined
  }

  private pickNear (busy: PeerId | undefined): PeerId | undefined {
    return this.near.pick(this.host.random, (p) => p !== this.host.self && p !== busy && this.host.isAlive(p))
  }

  /**
   * A probe finished (or none was under way): each idle lane takes the schedule's next
   * probe, the near lane only when it has a near peer to probe; with nothing left to do,
   * wait for the steady timer.
   */
  private next (now: number): void {
    if (!this.runner.inFlight) this.steadyProbe = false
    if (!this.host.isRunning()) return
    if (!this.runner.inFlight && this.mainLaneHasTarget()) {
      if (this.nextOfSchedule() !== 'probe') {
        if (this.detours.length > 0) { this.runner.start(now); if (this.runner.inFlight) return }
        this.armSteady(now)
        this.startNearLane(now)
        return
      }
      this.runner.start(now)
    }
    this.startNearLane(now)
  }

  /**
   * The near lane takes the schedule's next probe when it is idle, has a near peer to
   * probe, and its last probe started at least `probeNearLaneGapMs` ago (light probes of
   * near peers take about one RTT: unpaced, the lane would ask its neighbours every
   * millisecond, mostly for trees that have not changed). Offers are not paced, and do not
   * delay the lane's own next probe: their trees did change, and at most OFFER_FANOUT per
   * neighbour per `treeNewsGapMs` arrive. Paced, they queued behind each other after a mass
   * rejoin and held fig9's repair to the end of the news (1.12 and 1.08 s at seeds 1
   * and 3; unpaced 0.58-0.72 s at seeds 1-3, EXPERIMENTS.md fourteenth round).
   */
  private startNearLane (now: number): void {
    const lane = this.nearRunner
    const offer = this.offers.length > 0
    if (lane === null || lane.inFlight || !this.host.isRunning()) return
    if (!offer && (!this.schedule.isActive || this.pickNear(this.runner.target) === undefined)) return
    if (!offer && now < this.nearNextAt) {
      if (!this.nearTimerArmed) {
        this.nearTimerArmed = true
        this.host.setTimer(this.nearNextAt, 'probe')
      }
      return
    }
    if (!offer && this.nextOfSchedule() !== 'probe') return
    if (!offer) this.nearNextAt = now + this.cfg.probeNearLaneGapMs
    lane.start(now)
  }

  /** With steady probing on, one probe per interval while the schedule is idle. */
  private armSteady (now: number): void {
    if (this.cfg.steadyProbeIntervalMs <= 0 || this.steadyArmed) return
    this.steadyArmed = true
    this.host.setTimer(now + this.cfg.steadyProbeIntervalMs, 'steady')
  }
}
