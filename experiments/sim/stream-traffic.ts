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

/** A number naming (peer index, sender-local stream number): stream numbers stay far below 2^32. */
export function streamKey (peer: number, stream: number): number {
  return peer * 4294967296 + stream
}

/**
 * Streams remembered per sender, at most; past it the sender's oldest is forgotten (its
 * later chunks and acknowledgement would count in no broadcast). A stream lives for one
 * collective, and a sender opens a few per collective, so thousands of newer streams from
 * the same sender mean the forgotten one ended long ago.
 */
export const MAX_STREAMS_PER_SENDER = 4096

export class StreamTraffic {
  /**
   * Per sender (peer index), its stream numbers → broadcast id, oldest first. One small map
   * per sender, not one map of all: a chunk's lookup then stays in memory a cache holds.
   */
  private readonly streamIds: Array<Map<number, string> | undefined> = []

  constructor (private readonly bcasts: ReadonlyMap<string, BcastTrack>) {}

  /** Peer `from` sends `msg` to peer `to`; `sizeBytes`: its wire size, if the caller has it. */
  account (from: number, to: number, msg: Message, sizeBytes?: number): void {
    let id: string | undefined
    if (msg.t === 'chunk') {
      if (msg.open !== undefined) {
        id = msg.open.id
        let ids = this.streamIds[from]
        if (ids === undefined) { ids = new Map(); this.streamIds[from] = ids }
        if (ids.size >= MAX_STREAMS_PER_SENDER && !ids.has(msg.stream)) ids.delete(ids.keys().next().value as number)
        ids.set(msg.stream, id)
        const b = this.bcasts.get(id)
        if (b !== undefined) {
          b.streams++
          b.stripes = Math.max(b.stripes, msg.open.stripes ?? 1)
          if (msg.open.fallback) b.fallback++
        }
      } else {
        id = this.streamIds[from]?.get(msg.stream)
      }
    } else if (msg.t === 'ack') {
      id = this.streamIds[to]?.get(msg.stream)
    } else if (msg.t === 'entries-req' || msg.t === 'entries-rep') {
      id = msg.id
    }
    if (id === undefined) return
    const b = this.bcasts.get(id)
    if (b === undefined) return
    b.messages++
    b.bytesSent += sizeBytes ?? wireSize(msg)
  }
}
