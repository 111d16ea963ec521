/**
 * One direction of one emulated wide-area link: the connections crossing it (flows) share
 * its capacity. Bytes wait in their flow's backlog, the link serialises the backlogs in
 * round-robin at its rate (a quantum per turn), then each piece travels for the
 * propagation delay and is delivered to its flow, in order.
 *
 * Serialisation is computed lazily in virtual time (`linkFreeAt`), so late timers never
 * slow the link down: one alarm per pipe wakes it when the next piece may start or arrive,
 * and every wake-up delivers everything that is due, coalesced per flow. Arrival times are
 * monotonic (constant delay, monotonic departure), so the wire is a plain FIFO.
 */
import { performance } from 'node:perf_hooks'
import { Uint8ArrayList } from 'uint8arraylist'
import { DEFAULT_POLL_BUDGET_SHARE } from './config.ts'
import { DepartureQueue, type Departure } from './departure-queue.ts'
import { Alarm, ALARM_TOLERANCE_MS, Poller } from './alarm.ts'

/** What flows through a pipe. */
export type Chunk = Uint8Array | Uint8ArrayList

/** Data due within this many ms of now is delivered now rather than after another wake-up. */
export const DUE_TOLERANCE_MS = ALARM_TOLERANCE_MS

/** Parameters of one pipe. */
export interface PipeInit {
  /** Name of the sending cluster (for stats). */
  readonly from: string
  /** Name of the receiving cluster (for stats). */
  readonly to: string
  /** Propagation delay, ms, >= 0. */
  readonly delayMs: number
  /** Link rate, bytes/s, > 0; `Infinity` = uncapped (a pure delay line). */
  readonly rateBytesPerSec: number
  /** Round-robin unit between flows, bytes. */
  readonly quantumBytes: number
  /** Per-flow backlog above which `push` returns false. */
  readonly backlogHighWaterBytes: number
  /** Per-flow bytes on the wire above which `push` returns false. */
  readonly maxInFlightBytes: number
}

/** Callbacks of one flow. Neither may throw. */
export interface FlowHandlers {
  /** Receives the flow's bytes, in order, once they have crossed the link. */
  deliver: (data: Chunk) => void
  /** Called once after `push` returned false, when the flow is back to half its limits. */
  onDrain: () => void
}

/** Counters of one pipe. */
export interface PipeStats {
  /** Sending cluster. */
  readonly from: string
  /** Receiving cluster. */
  readonly to: string
  readonly delayMs: number
  /** `Infinity` when uncapped. */
  readonly rateBytesPerSec: number
  /** Connection directions currently using the pipe (an intra-cluster connection counts twice). */
  readonly connections: number
  /** Bytes delivered since the pipe was created. */
  readonly bytesCarried: number
  /** Bytes waiting for the link now (all connections). */
  readonly backlogBytes: number
  /** Bytes on the wire now: serialised, not yet delivered. */
  readonly inFlightBytes: number
  /** Largest backlog seen. */
  readonly peakBacklogBytes: number
}

/** One connection's use of one pipe (one direction). Created by {@link Pipe.open}. */
export class PipeFlow {
  /** @internal bytes waiting for the link */
  readonly backlog = new Uint8ArrayList()
  /** @internal bytes serialised and not yet delivered */
  inFlightBytes = 0
  /** @internal push() returned false and onDrain has not been called since */
  needsDrain = false
  /** @internal */
  destroyed = false
  /** @internal */
  readonly idleWaiters: Array<() => void> = []

  constructor(private readonly pipe: Pipe, readonly handlers: FlowHandlers) {}

  /** Queues `data` for the link; false when the sender should wait for `onDrain`. */
  push(data: Chunk): boolean {
    return this.pipe.push(this, data)
  }

  /** Nothing of this flow is queued or on the wire. */
  get idle(): boolean {
    return this.backlog.byteLength === 0 && this.inFlightBytes === 0
  }

  /** Resolves once everything pushed so far has been delivered (or the flow destroyed). */
  whenIdle(): Promise<void> {
    if (this.idle || this.destroyed) return Promise.resolve()
    return new Promise(resolve => { this.idleWaiters.push(resolve) })
  }

  /** Leaves the pipe, dropping whatever is still queued or on the wire. Idempotent. */
  destroy(): void {
    this.pipe.detach(this)
  }
}

/** One direction of one link, shared by the flows crossing it. */
export class Pipe {
  private readonly flows = new Set<PipeFlow>()
  /** Flows with a backlog, in round-robin order; `rr` is the next one to serve. */
  private readonly active: PipeFlow[] = []
  private rr = 0
  private readonly wire = new DepartureQueue<PipeFlow, Chunk>()
  /** Virtual time (performance.now() ms) at which the link finishes what it has started. */
  private linkFreeAt = 0
  private backlogBytes = 0
  private inFlightBytes = 0
  private bytesCarried = 0
  private peakBacklogBytes = 0
  private readonly alarm: Alarm
  private flushing = false
  private flushQueued = false
  private readonly capped: boolean

  /** @param poller - the polling loop of the emulator (a private one by default) */
  constructor(readonly init: PipeInit, poller: Poller = new Poller(DEFAULT_POLL_BUDGET_SHARE)) {
    this.capped = Number.isFinite(init.rateBytesPerSec)
    this.alarm = new Alarm(poller, () => { this.flush() })
  }

  /** A new flow (one connection's direction) on this pipe. */
  open(handlers: FlowHandlers): PipeFlow {
    const flow = new PipeFlow(this, handlers)
    this.flows.add(flow)
    return flow
  }

  stats(): PipeStats {
    return {
      from: this.init.from,
      to: this.init.to,
      delayMs: this.init.delayMs,
      rateBytesPerSec: this.init.rateBytesPerSec,
      connections: this.flows.size,
      bytesCarried: this.bytesCarried,
      backlogBytes: this.backlogBytes,
      inFlightBytes: this.inFlightBytes,
      peakBacklogBytes: this.peakBacklogBytes
    }
  }

  /** @internal use {@link PipeFlow.push} */
  push(flow: PipeFlow, data: Chunk): boolean {
    const n = data.byteLength
    if (flow.destroyed) return true
    if (n > 0) {
      const now = performance.now()
      if (this.capped) {
        this.advance(now)
        // an idle link starts serialising on arrival, not at the end of its last burst
        if (this.active.length === 0 && this.linkFreeAt < now) this.linkFreeAt = now
        if (flow.backlog.byteLength === 0) this.active.push(flow)
        flow.backlog.append(data)
        this.backlogBytes += n
        if (this.backlogBytes > this.peakBacklogBytes) this.peakBacklogBytes = this.backlogBytes
        this.advance(now)
      } else {
        this.depart(flow, data, now + this.init.delayMs)
      }
      if (this.wire.peekAt() <= now + DUE_TOLERANCE_MS) this.queueFlush()
      else this.arm()
    }
    const ok = flow.backlog.byteLength <= this.init.backlogHighWaterBytes && flow.inFlightBytes <= this.init.maxInFlightBytes
    if (!ok) flow.needsDrain = true
    return ok
  }

  /** @internal use {@link PipeFlow.destroy} */
  detach(flow: PipeFlow): void {
    if (flow.destroyed) return
    flow.destroyed = true
    this.flows.delete(flow)
    const i = this.active.indexOf(flow)
    if (i >= 0) {
      this.active.splice(i, 1)
      if (i < this.rr) this.rr--
    }
    this.backlogBytes -= flow.backlog.byteLength
    flow.backlog.consume(flow.backlog.byteLength)
    this.inFlightBytes -= flow.inFlightBytes
    flow.inFlightBytes = 0
    for (const resolve of flow.idleWaiters.splice(0)) resolve()
  }

  private depart(flow: PipeFlow, data: Chunk, at: number): void {
    this.wire.push({ at, flow, data })
    flow.inFlightBytes += data.byteLength
    this.inFlightBytes += data.byteLength
  }

  /** Starts serialising every quantum whose turn comes at or before `now`. */
  private advance(now: number): void {
    if (!this.capped) return
    const { quantumBytes, rateBytesPerSec, delayMs } = this.init
    while (this.active.length > 0 && this.linkFreeAt <= now) {
      if (this.rr >= this.active.length) this.rr = 0
      const flow = this.active[this.rr] as PipeFlow
      const n = Math.min(quantumBytes, flow.backlog.byteLength)
      const piece = flow.backlog.sublist(0, n)
      flow.backlog.consume(n)
      this.backlogBytes -= n
      this.linkFreeAt += n * 1000 / rateBytesPerSec
      this.depart(flow, piece, this.linkFreeAt + delayMs)
      if (flow.backlog.byteLength === 0) this.active.splice(this.rr, 1)
      else this.rr++
    }
  }

  private queueFlush(): void {
    if (this.flushQueued || this.flushing) return
    this.flushQueued = true
    queueMicrotask(() => {
      this.flushQueued = false
      this.flush()
    })
  }

  /** Serialises what is due, delivers what has arrived, repeats until nothing is due. */
  private flush(): void {
    if (this.flushing) return
    this.flushing = true
    try {
      for (;;) {
        const now = performance.now()
        this.advance(now)
        const due = this.takeArrived(now)
        if (due !== undefined) {
          for (const [flow, chunks] of due) {
            if (flow.destroyed) continue
            flow.handlers.deliver(chunks.length === 1 ? chunks[0] as Chunk : new Uint8ArrayList(...chunks))
          }
        }
        for (const flow of this.flows) this.settle(flow)
        if (due === undefined) break
      }
    } finally {
      this.flushing = false
      this.arm()
    }
  }

  /** Takes every departure that has arrived by `now`, grouped per flow in order. */
  private takeArrived(now: number): Map<PipeFlow, Chunk[]> | undefined {
    let due: Map<PipeFlow, Chunk[]> | undefined
    const limit = now + DUE_TOLERANCE_MS
    while (this.wire.peekAt() <= limit) {
      const d = this.wire.shift() as Departure<PipeFlow, Chunk>
      if (d.flow.destroyed) continue
      const n = d.data.byteLength
      d.flow.inFlightBytes -= n
      this.inFlightBytes -= n
      this.bytesCarried += n
      due ??= new Map()
      const list = due.get(d.flow)
      if (list === undefined) due.set(d.flow, [d.data])
      else list.push(d.data)
    }
    return due
  }

  private settle(flow: PipeFlow): void {
    if (flow.needsDrain &&
      flow.backlog.byteLength <= this.init.backlogHighWaterBytes / 2 &&
      flow.inFlightBytes <= this.init.maxInFlightBytes / 2) {
      flow.needsDrain = false
      flow.handlers.onDrain()
    }
    if (flow.idle && flow.idleWaiters.length > 0) {
      for (const resolve of flow.idleWaiters.splice(0)) resolve()
    }
  }

  /** Keeps the alarm set at the next event: a quantum's turn or an arrival. */
  private arm(): void {
    const next = Math.min(this.wire.peekAt(), this.active.length > 0 ? this.linkFreeAt : Infinity)
    if (next === Infinity) this.alarm.clear()
    else if (this.alarm.at > next) this.alarm.set(next)
  }
}
