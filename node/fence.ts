/**
 * Fencing after a stall. A peer whose process stopped or stalled for about the
 * failure-detection timeout may have been declared dead meanwhile, its virtual nodes handed
 * to its successor, and a broadcast sent to it during the stall re-routed there. What its
 * sockets buffered during the stall must then not be delivered: the successor delivered
 * it (exactly once per virtual node). Before it hears that it is dead, such a peer would
 * still work through those buffered frames, so after a stall it holds every incoming
 * frame, asks members whether it is still one (`sync`, answered with every member's
 * status), and on the first answer that names it:
 * - alive at its incarnation: replays the held frames in order, and goes on;
 * - dead: hands that answer to the core (which evicts the peer: node/rejoin.ts) and drops
 *   the held frames.
 * No answer within `waitMs`, or more than `maxHeldBytes` held: the frames are replayed
 * (a peer that cannot reach any member keeps working as before; the log says so).
 * Heartbeats and byes pass: they carry no state.
 */
import type { Uint8ArrayList } from 'uint8arraylist'
import { decodeMessage, type CodecLimits } from '../overlay/codec.ts'
import type { Message } from '../overlay/messages.ts'
import { FrameKind } from './frame-channel.ts'

/** One frame as Links received it. */
export interface HeldFrame {
  readonly from: string
  readonly kind: number
  readonly body: Uint8ArrayList
  /** The bulk channel it came on (opaque here). */
  readonly bulk: unknown
}

/** The message of a core frame when it is membership facts (what the fence looks for), else undefined. */
export function factsIn (frame: HeldFrame, limits: CodecLimits): Message | undefined {
  if (frame.kind !== FrameKind.Core) return undefined
  try {
    const msg = decodeMessage(frame.body.subarray(), limits)
    return msg.t === 'facts' ? msg : undefined
  } catch {
    return undefined
  }
}

/** What the fence needs of the node. */
export interface FenceHost {
  /** Ask members whether this peer is still one; false when it is not a member (nothing to check). */
  begin: () => boolean
  /** A frame's message when it is membership facts (decoded), else undefined. */
  facts: (frame: HeldFrame) => Message | undefined
  /** What `facts` says of this peer at its current incarnation. */
  verdict: (facts: Message) => 'dead' | 'alive' | 'unknown'
  /** Processes a frame as if it had just arrived. */
  replay: (frame: HeldFrame) => void
  log: (formatter: string, ...args: unknown[]) => void
}

export interface FenceInit {
  /** A gap between two ticks longer than this starts fencing (ms). */
  readonly afterMs: number
  /** Longest wait for an answer (ms). */
  readonly waitMs: number
  /** Most bytes held. */
  readonly maxHeldBytes: number
}

export class Fence {
  private held: HeldFrame[] | undefined
  private heldBytes = 0
  private timer: ReturnType<typeof setTimeout> | undefined
  private lastTickAt: number
  readonly stats = { fences: 0, confirmedAlive: 0, confirmedDead: 0, unanswered: 0, overflows: 0 }

  constructor (private readonly host: FenceHost, private readonly init: FenceInit, now: number) {
    this.lastTickAt = now
  }

  /** True while frames are held. */
  get active (): boolean { return this.held !== undefined }

  /**
   * The process is running at `now` (a frame, a heartbeat tick): a gap since the last tick
   * longer than `afterMs` was a stall, which starts fencing.
   */
  tick (now: number): void {
    const gapMs = now - this.lastTickAt
    this.lastTickAt = now
    if (this.held !== undefined || gapMs <= this.init.afterMs) return
    if (!this.host.begin()) return
    this.stats.fences++
    this.host.log('this process stalled for %d ms: holding incoming frames until a member says whether it is still one', Math.round(gapMs))
    this.held = []
    this.heldBytes = 0
    this.timer = setTimeout(() => { this.stats.unanswered++; this.release('no member answered') }, this.init.waitMs)
  }

  /** A frame arrived: true when the fence took it (held, or the answer that ends it). */
  take (frame: HeldFrame): boolean {
    if (this.held === undefined) return false
    const facts = this.host.facts(frame)
    if (facts !== undefined) {
      const v = this.host.verdict(facts)
      if (v === 'dead') {
        this.stats.confirmedDead++
        this.drop('declared dead meanwhile')
        this.host.replay(frame)
        return true
      }
      if (v === 'alive') {
        this.stats.confirmedAlive++
        this.release('still a member')
        return false // processed now, after the held ones
      }
    }
    this.held.push(frame)
    this.heldBytes += frame.body.byteLength
    if (this.heldBytes > this.init.maxHeldBytes) { this.stats.overflows++; this.release('too much held') }
    return true
  }

  /** Drops what is held (an eviction: nothing of the old incarnation is processed). */
  drop (why: string): void {
    const held = this.end()
    if (held !== undefined) this.host.log('dropping %d frame(s) held since the stall: %s', held.length, why)
  }

  /** Replays what is held, in order. */
  private release (why: string): void {
    const held = this.end()
    if (held === undefined) return
    this.host.log('replaying %d frame(s) held since the stall: %s', held.length, why)
    for (const f of held) this.host.replay(f)
  }

  private end (): HeldFrame[] | undefined {
    const held = this.held
    this.held = undefined
    this.heldBytes = 0
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    return held
  }
}
