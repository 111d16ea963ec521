/**
 * When this peer probes (003 §IV-A): a burst after each membership change that may make
 * other parents better (the probe schedule), and, with steady probing on, one probe per
 * interval while the schedule is idle. One probe runs at a time (the ProbeRunner's).
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { ProbeSchedule } from '../trees/probe-schedule.ts'
import type { Message, ProbeReplyMessage, ProbeTreeEntry } from './messages.ts'
import { ProbeRunner } from './probe-runner.ts'

/** What probing needs from the peer around it. */
export interface ProbingHost {
  readonly self: PeerId
  readonly random: () => number
  alive (): readonly PeerId[]
  send (to: PeerId, msg: Message): void
  /** Arms the timer of the probe in flight ('probe') or of the next steady probe ('steady'). */
  setTimer (at: number, kind: 'probe' | 'steady'): void
  entries (): ProbeTreeEntry[]
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
}

/** The probing of one peer. */
export class Probing {
  private readonly schedule: ProbeSchedule
  private readonly runner: ProbeRunner
  private steadyArmed = false
  /** The probe in flight was started by steady probing, not by a membership change. */
  private steadyProbe = false

  constructor (private readonly host: ProbingHost, private readonly cfg: ProbingConfig) {
    this.schedule = new ProbeSchedule(cfg.probeExtraCount)
    this.runner = new ProbeRunner({
      self: host.self,
      random: host.random,
      alive: () => host.alive(),
      send: (to, m) => host.send(to, m),
      setTimer: (at) => host.setTimer(at, 'probe'),
      entries: () => host.entries(),
      judged: (now, cand, rtt, bw, entries) => { host.judged(now, cand, rtt, bw, entries) },
      finished: (now) => this.next(now)
    }, cfg)
  }

  /** True while this peer probes because of a recent membership change (steady probes do not count). */
  get isProbing (): boolean { return this.schedule.isActive || (this.runner.inFlight && !this.steadyProbe) }

  /** Probes started so far. */
  get started (): number { return this.runner.started }

  /** A membership change: (re)starts the schedule, and a probe unless one is in flight. */
  trigger (now: number): void {
    this.schedule.trigger()
    if (!this.runner.inFlight) this.next(now)
  }

  /** Stops the schedule (the peer is leaving). */
  stop (): void { this.schedule.stop() }

  onPong (now: number, from: PeerId, nonce: number): void { this.runner.onPong(now, from, nonce) }

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
