/**
 * Which ordered lane a message travels in, as on the real node (node/README.md): the
 * chunks of a multi-chunk stream go on a bulk stream of their own, everything else on the
 * one control stream per neighbour. The simulated network keeps each lane of a peer pair
 * in order, but not one lane behind the other, so a liveness ping or an acknowledgement
 * is not held up behind megabytes of queued chunks (which would make a busy link look
 * like a dead peer).
 */
import type { Message } from '../../overlay/messages.ts'
import { streamChunkCount } from '../../overlay/stripes.ts'
import { streamKey } from './stream-traffic.ts'

/** The control lane (one stream per neighbour on the node). */
export const CONTROL_LANE = 0
/** The bulk lane (chunks of streams of more than one chunk). */
export const BULK_LANE = 1
/** Open bulk streams remembered at most; past it the oldest is forgotten (its later chunks would ride the control lane). */
const MAX_OPEN = 1 << 20

export class StreamLanes {
  /** streamKey(from, stream) → chunks still to come, for bulk streams (stream numbers are the sender's, whatever the receiver). */
  private readonly open = new Map<number, number>()

  laneOf (from: number, to: number, msg: Message): number {
    if (msg.t !== 'chunk') return CONTROL_LANE
    const key = streamKey(from, msg.stream)
    if (msg.open !== undefined) {
      if (msg.open.chunkCount <= 1) return CONTROL_LANE
      if (this.open.size >= MAX_OPEN) this.open.delete(this.open.keys().next().value as number)
      // A stripe's stream carries only its stripe's chunks (overlay/stripes.ts).
      const rest = streamChunkCount(msg.open) - 1
      if (rest > 0) this.open.set(key, rest)
      return BULK_LANE
    }
    const left = this.open.get(key)
    if (left === undefined) return CONTROL_LANE
    if (left <= 1) this.open.delete(key)
    else this.open.set(key, left - 1)
    return BULK_LANE
  }
}
