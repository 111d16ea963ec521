/**
 * Attributes the simulated traffic of streams to the broadcast they carry: chunk messages
 * and their acknowledgements count towards the broadcast's `messages` and `bytesSent`, and
 * fallback opens (003's rule III) towards its `fallback`. So do the question and answer of
 * a stripe ask (`entries-req`, `entries-rep`: overlay/stripe-asks.ts), which name the
 * broadcast they are for.
 */
import { wireSize } from '../../overlay/codec.ts'
import type { Message } from '../../overlay/messages.ts'
import type { BcastTrack } from './report.ts'
import { streamChunkCount } from '../../overlay/stripes.ts'

/**
 * Streams remembered per sender at most; past it the sender's oldest is forgotten (and
 * counted in `forgottenOpen`). A stream is forgotten anyway once its acknowledgement and its
 * last chunk have been sent, so only a sender with this many streams under way at once
 * (or abandoned: their receiver died before acknowledging) reaches the bound.
 */
export const MAX_STREAMS_PER_SENDER = 65_536

/**
 * A stream under way: its broadcast's track (undefined: the stream carries no tracked
 * broadcast), the chunks still to come after the open, whether it was acknowledged. The
 * track, not the id: a chunk or acknowledgement then costs one lookup, not two. A track
 * is made when its broadcast starts, before any of its streams opens, and never removed,
 * so looking it up at the open is looking it up later.
 */
interface OpenStream { readonly track: BcastTrack | undefined, left: number, acked: boolean }

export class StreamTraffic {
  /**
   * Per sender (peer index), its streams under way by stream number, oldest first. One small
   * map per sender, not one map of all: a chunk's lookup then stays in memory a cache holds.
   */
  private readonly streams: Array<Map<number, OpenStream> | undefined> = []
  /** Streams forgotten at the bound before their end (their later traffic counts nowhere). */
  forgottenOpen = 0

  /**
   * @param bcasts - the tracks by broadcast id (a partition of a run on threads counts its share of others' too)
   * @param isRemote - a peer another partition of a run on threads simulates: its
   *   acknowledgements and holds are counted there (see `opened`), so a stream to it ends here
   *   with its last chunk
   */
  constructor (private readonly bcasts: { get (id: string): BcastTrack | undefined }, private readonly isRemote: (peer: number) => boolean = () => false) {}

  /**
   * A run on threads: stream `msg.stream` of `from`, simulated in another partition, was
   * opened to a peer of this one (the open is counted there). Remembered so that the
   * receiver's acknowledgement and holds, sent here, count towards its broadcast.
   */
  opened (from: number, msg: Extract<Message, { t: 'chunk' }>): void {
    if (msg.open !== undefined) this.remember(from, msg.stream, { track: this.bcasts.get(msg.open.id), left: 0, acked: false })
  }

  /** Stream `stream` of `from` is under way (the sender's oldest forgotten at the bound). */
  private remember (from: number, stream: number, s: OpenStream): void {
    let open = this.streams[from]
    if (open === undefined) { open = new Map(); this.streams[from] = open }
    if (open.size >= MAX_STREAMS_PER_SENDER && !open.has(stream)) { open.delete(open.keys().next().value as number); this.forgottenOpen++ }
    open.set(stream, s)
  }

  /** Peer `from` sends `msg` to peer `to`; `sizeBytes`: its wire size, if the caller has it. */
  account (from: number, to: number, msg: Message, sizeBytes?: number): void {
    let b: BcastTrack | undefined
    if (msg.t === 'chunk') {
      if (msg.open !== undefined) {
        b = this.bcasts.get(msg.open.id)
        const left = Math.max(0, streamChunkCount(msg.open) - 1)
        const remote = this.isRemote(to)
        if (!remote || left > 0) this.remember(from, msg.stream, { track: b, left, acked: remote })
        if (b !== undefined) {
          b.streams++
          b.stripes = Math.max(b.stripes, msg.open.stripes ?? 1)
          if (msg.open.fallback) b.fallback++
        }
      } else {
        const s = this.streams[from]?.get(msg.stream)
        if (s !== undefined) {
          b = s.track
          if (--s.left <= 0 && s.acked) this.streams[from]?.delete(msg.stream)
        }
      }
    } else if (msg.t === 'ack') {
      // An acknowledgement names a stream of the peer it goes to; it may come before the
      // stream's last chunks (a part handed on early), so the stream ends at both.
      const s = this.streams[to]?.get(msg.stream)
      if (s !== undefined) {
        b = s.track
        s.acked = true
        if (s.left <= 0) this.streams[to]?.delete(msg.stream)
      }
    } else if (msg.t === 'hold') {
      // A receiver still busy with a stream of the peer it goes to (overlay/stream-holds.ts).
      b = this.streams[to]?.get(msg.stream)?.track
    } else if (msg.t === 'entries-req' || msg.t === 'entries-rep') {
      b = this.bcasts.get(msg.id)
    }
    if (b === undefined) return
    b.messages++
    b.bytesSent += sizeBytes ?? wireSize(msg)
  }
}
