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

export class StreamTraffic {
  /** streamKey(sender, stream) → broadcast id. */
  private readonly streamIds = new Map<number, string>()

  constructor (private readonly bcasts: ReadonlyMap<string, BcastTrack>) {}

  /** Peer `from` sends `msg` to peer `to`. */
  account (from: number, to: number, msg: Message): void {
    let id: string | undefined
    if (msg.t === 'chunk') {
      const key = streamKey(from, msg.stream)
      if (msg.open !== undefined) {
        id = msg.open.id
        this.streamIds.set(key, id)
        const b = this.bcasts.get(id)
        if (b !== undefined) {
          b.streams++
          b.stripes = Math.max(b.stripes, msg.open.stripes ?? 1)
          if (msg.open.fallback) b.fallback++
        }
      } else {
        id = this.streamIds.get(key)
      }
    } else if (msg.t === 'ack') {
      id = this.streamIds.get(streamKey(to, msg.stream))
    } else if (msg.t === 'entries-req' || msg.t === 'entries-rep') {
      id = msg.id
    }
    if (id === undefined) return
    const b = this.bcasts.get(id)
    if (b === undefined) return
    b.messages++
    b.bytesSent += wireSize(msg)
  }
}
