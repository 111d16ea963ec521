/**
 * Precise one-shot alarms. Node timers have a 1 ms grain and fire up to about 1 ms late
 * (or slightly early), which would add 1 to 2 ms to every emulated round trip. An alarm
 * never rings more than 0.02 ms before its time: a timer aimed a little early brings it
 * close, then a `setImmediate` loop (which lets I/O run between turns) polls the clock for
 * the rest. Polling burns CPU, so it is rationed: the alarms of one {@link Poller} share
 * one loop and a budget (a share of wall-clock time, each turn charged in full, I/O
 * included); past it, or with a zero budget, alarms use plain timers and ring up to
 * ~1.5 ms late. Measured with 20 ms one-way each way: median RTT 41.1–41.6 ms with
 * polling, 42.4 ms with timers alone (loopback alone: 0.7 ms).
 */
import { performance } from 'node:perf_hooks'

/** An alarm rings at most this many ms before its time. */
export const ALARM_TOLERANCE_MS = 0.02
/** Remaining waits at most this long are polled rather than left to a timer. */
const POLL_WINDOW_MS = 1
/** A timer is aimed this many ms early and polling does the rest: timers fire 0.1–0.7 ms late. */
const TIMER_LEAD_MS = 0.7
/** Most polling time saved up while idle, ms. */
const POLL_BUDGET_MAX_MS = 20

/** One polling loop and its CPU budget, shared by a set of alarms. */
export class Poller {
  private readonly waiting = new Set<Alarm>()
  private running = false
  private budgetMs: number
  private budgetAt = performance.now()
  private lastTurn = 0

  /** @param budgetShare - share of wall-clock time the loop may spend polling, 0..1 (0: never poll) */
  constructor(readonly budgetShare: number) {
    this.budgetMs = budgetShare > 0 ? POLL_BUDGET_MAX_MS : 0
  }

  /** Whether polling is within budget right now. */
  affordable(now: number): boolean {
    if (this.budgetShare <= 0) return false
    this.budgetMs = Math.min(POLL_BUDGET_MAX_MS, this.budgetMs + (now - this.budgetAt) * this.budgetShare)
    this.budgetAt = now
    return this.budgetMs > 0
  }

  /** @internal */
  add(alarm: Alarm): void {
    this.waiting.add(alarm)
    if (this.running) return
    this.running = true
    this.lastTurn = performance.now()
    setImmediate(this.turn)
  }

  /** @internal */
  remove(alarm: Alarm): void {
    this.waiting.delete(alarm)
  }

  private readonly turn = (): void => {
    const now = performance.now()
    // charge the whole turn, I/O included: an over-estimate, on the safe side
    this.budgetMs -= now - this.lastTurn
    this.lastTurn = now
    for (const alarm of [...this.waiting]) {
      if (alarm.at <= now + ALARM_TOLERANCE_MS) {
        this.waiting.delete(alarm)
        alarm.ring()
      }
    }
    if (this.waiting.size > 0 && this.affordable(performance.now())) {
      setImmediate(this.turn)
      return
    }
    this.running = false
    // out of budget: hand the remaining alarms back to timers
    for (const alarm of [...this.waiting]) {
      this.waiting.delete(alarm)
      alarm.rearm(false)
    }
  }
}

/** A one-shot alarm calling `fn` at a `performance.now()` time, never before it (within the tolerance). */
export class Alarm {
  /** When the alarm will ring (`Infinity` when not set). */
  at = Infinity
  private timer: NodeJS.Timeout | undefined

  constructor(private readonly poller: Poller, private readonly fn: () => void) {}

  /** Rings at `at` (ms, `performance.now()` clock), replacing any earlier setting. */
  set(at: number): void {
    this.clear()
    this.at = at
    this.rearm(true)
  }

  /** Cancels the alarm. */
  clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.poller.remove(this)
    this.at = Infinity
  }

  /** @internal called by the poller when due */
  ring(): void {
    this.at = Infinity
    this.fn()
  }

  /** @internal waits for `at` by the cheapest precise means available */
  rearm(mayPoll: boolean): void {
    const now = performance.now()
    const wait = this.at - now
    const poll = mayPoll && this.poller.affordable(now)
    if (wait <= ALARM_TOLERANCE_MS || (wait <= POLL_WINDOW_MS && poll)) {
      // due (ring on the next turn, never synchronously inside set()), or close enough to poll
      this.poller.add(this)
    } else {
      // aim a little early when polling can finish the wait; a timer may also fire early:
      // onTimer checks, and polls or re-arms
      this.timer = setTimeout(this.onTimer, Math.max(1, wait - (poll ? TIMER_LEAD_MS : 0)))
    }
  }

  private readonly onTimer = (): void => {
    this.timer = undefined
    this.rearm(true)
  }
}
