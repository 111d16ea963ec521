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

/** The control lane (one stream per neighbour on the node). */
export const CONTROL_LANE = 0
/** The bulk lane (chunks of streams of more than one chunk). */
export const BULK_LANE = 1
/** Open bulk streams remembered at most; past it the oldest is forgotten (its later chunks would ride the control lane). */
const MAX_OPEN = 1 << 20

export class StreamLanes {
  /**
   * Per sender (peer index), its open bulk streams by stream number → chunks still to come
   * (stream numbers are the sender's, whatever the receiver; a rejoined peer's run past
   * 2^32: overlay/incarnation-numbers.ts).
   */
  private readonly open: Array<Map<number, number> | undefined> = []
  /** Open bulk streams over all senders. */
  private count = 0

  laneOf (from: number, to: number, msg: Message): number {
    if (msg.t !== 'chunk') return CONTROL_LANE
    let mine = this.open[from]
    if (msg.open !== undefined) {
      if (msg.open.chunkCount <= 1) return CONTROL_LANE
      // A stripe's stream carries only its stripe's chunks (overlay/stripes.ts).
      const rest = streamChunkCount(msg.open) - 1
      if (rest > 0) {
        if (mine === undefined) { mine = new Map(); this.open[from] = mine }
        if (this.count >= MAX_OPEN && !mine.has(msg.stream)) this.forgetOne(mine)
        if (!mine.has(msg.stream)) this.count++
        mine.set(msg.stream, rest)
      }
      return BULK_LANE
    }
    const left = mine?.get(msg.stream)
    if (mine === undefined || left === undefined) return CONTROL_LANE
    if (left <= 1) { mine.delete(msg.stream); this.count-- } else mine.set(msg.stream, left - 1)
    return BULK_LANE
  }

  /** At the bound: forgets the oldest open stream of `mine` (the sender's map; never empty when several are open there, else of any sender). */
  private forgetOne (mine: Map<number, number>): void {
    const victim = mine.size > 0 ? mine : this.open.find((m) => m !== undefined && m.size > 0)
    if (victim === undefined) return
    victim.delete(victim.keys().next().value as number)
    this.count--
  }
}
