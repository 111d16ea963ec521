/**
 * When this peer probes (003 §IV-A): a burst after each membership change that may make
 * other parents better (the probe schedule), and, with steady probing on, one probe per
 * interval while the schedule is idle. One probe runs at a time (the ProbeRunner's).
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
import { NearPeers } from './near-peers.ts'
import { ProbeRunner } from './probe-runner.ts'

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
  judged (now: number, cand: PeerId, rttMs: number, bwBytesPerSec: number, entries: readonly ProbeTreeEntry[]): void
  /** Trees of this peer that have no parent (the schedule probes on while there are some). */
  parentlessCount (): number
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
}

/** The probing of one peer. */
export class Probing {
  private readonly schedule: ProbeSchedule
  private readonly runner: ProbeRunner
  private readonly near: NearPeers
  /** When we answered each prober's ping (bounded): its probe-req then times its RTT to us. */
  private readonly pongAt = new Map<PeerId, number>()
  private steadyArmed = false
  /** The probe in flight was started by steady probing, not by a membership change. */
  private steadyProbe = false

  constructor (private readonly host: ProbingHost, private readonly cfg: ProbingConfig) {
    this.schedule = new ProbeSchedule(cfg.probeExtraCount)
    this.near = new NearPeers(host.self)
    this.runner = new ProbeRunner({
      candidate: () => this.candidate(),
      baseRttMs: (peer) => this.near.rttOf(peer) ?? Infinity,
      send: (to, m) => host.send(to, m),
      setTimer: (at) => host.setTimer(at, 'probe'),
      judged: (now, cand, rtt, bw, entries, near) => {
        this.near.measuredRtt(cand, rtt)
        this.near.addHints(cand, rtt, near)
        host.judged(now, cand, rtt, bw, entries)
      },
      finished: (now) => this.next(now)
    }, cfg)
  }

  /** A ping arrived and is answered now: a probe-req from the same peer will time the round trip. */
  pinged (now: number, from: PeerId): void {
    if (this.pongAt.size >= MAX_PONGS_TRACKED && !this.pongAt.has(from)) this.pongAt.delete(this.pongAt.keys().next().value as PeerId)
    this.pongAt.set(from, now)
  }

  /**
   * A prober asks for its download. The time since our pong is the prober's RTT to us, so
   * a probe teaches locality to both ends. Returns the hints for the reply.
   */
  requested (now: number, from: PeerId): NearHint[] {
    const pongAt = this.pongAt.get(from)
    if (pongAt !== undefined) {
      this.pongAt.delete(from)
      this.near.measuredRtt(from, now - pongAt)
    }
    return this.near.nearest((p) => p !== from && this.host.isAlive(p))
  }

  /** The smallest RTT this peer measured to `peer`, if it probed it. */
  rttOf (peer: PeerId): number | undefined {
    return this.near.rttOf(peer)
  }

  /** True while this peer probes because of a recent membership change (steady probes do not count). */
  get isProbing (): boolean { return this.schedule.isActive || (this.runner.inFlight && !this.steadyProbe) }

  /** Probes started so far. */
  get started (): number { return this.runner.started }

  /** A membership change: (re)starts the schedule, and a probe unless one is in flight. */
  trigger (now: number): void {
    this.schedule.trigger()
    this.near.newBurst()
    if (!this.runner.inFlight) this.next(now)
  }

  /** Stops the schedule (the peer is leaving). */
  stop (): void { this.schedule.stop() }

  onPong (now: number, from: PeerId, nonce: number): void { this.runner.onPong(now, from, nonce) }

  /** `peer` left or died: a probe waiting for it will not be answered; the next one starts. */
  targetGone (now: number, peer: PeerId): void { this.runner.abandon(now, peer) }

  onReply (now: number, from: PeerId, msg: ProbeReplyMessage): void { this.runner.onReply(now, from, msg) }

  /** The 'probe' timer fired. */
  onTimer (now: number): void { this.runner.onTimer(now) }

  /** The 'steady' timer fired: a steady probe, unless one is in flight or the schedule runs. */
  onSteadyTimer (now: number): void {
    this.steadyArmed = false
    if (this.host.isRunning() && !this.runner.inFlight && !this.schedule.isActive) {
      this.steadyProbe = true
      this.runner.start(now)
    }
  }

  /** Whom to probe next: a near peer not probed in this burst, or a random other member. */
  private candidate (): PeerId | undefined {
    const alive = this.host.alive()
    this.near.prune((p) => this.host.isAlive(p), alive.length)
    let target: PeerId | undefined
    if (this.cfg.probeNearFraction > 0 && this.host.random() < this.cfg.probeNearFraction) {
      target = this.near.pick(this.host.random, (p) => p !== this.host.self && this.host.isAlive(p))
    }
    if (target === undefined) {
      const others = alive.filter((p) => p !== this.host.self)
      if (others.length === 0) return undefined
      target = others[Math.floor(this.host.random() * others.length)] as PeerId
    }
    this.near.markProbed(target)
    return target
  }

  /** The probe in flight finished (or none was): the next one, or wait for the steady timer. */
  private next (now: number): void {
    this.steadyProbe = false
    if (!this.host.isRunning()) return
    if (this.schedule.next(this.host.parentlessCount()) === 'probe') this.runner.start(now)
    else this.armSteady(now)
  }

  /** With steady probing on, one probe per interval while the schedule is idle. */
  private armSteady (now: number): void {
    if (this.cfg.steadyProbeIntervalMs <= 0 || this.steadyArmed) return
    this.steadyArmed = true
    this.host.setTimer(now + this.cfg.steadyProbeIntervalMs, 'steady')
  }
}
