/**
 * What a joining peer receives before its contact's snapshot (a hand-off can overtake the
 * welcome): kept, within a count and a byte budget, and handled once the peer is a member.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { wireSize } from './codec.ts'
import type { Message } from './messages.ts'

/** Messages a joining peer keeps while it waits for its contact's snapshot. */
export const MAX_PRE_JOIN_MESSAGES = 4096
/** Their total wire size at most (a broadcast's chunks may arrive before the welcome). */
export const MAX_PRE_JOIN_BYTES = 64 * 1024 * 1024

/** The bounded buffer of early messages. */
export class PreJoinBuffer {
  private items: Array<{ from: PeerId, msg: Message }> = []
  private bytes = 0

  constructor (private readonly maxMessages = MAX_PRE_JOIN_MESSAGES, private readonly maxBytes = MAX_PRE_JOIN_BYTES) {}

  /** Keeps `msg`; false (nothing kept) when either budget would be exceeded. */
  push (from: PeerId, msg: Message): boolean {
    const size = wireSize(msg)
    if (this.items.length >= this.maxMessages || this.bytes + size > this.maxBytes) return false
    this.items.push({ from, msg })
    this.bytes += size
    return true
  }

  /** Everything kept, in arrival order; the buffer is empty afterwards. */
  drain (): Array<{ from: PeerId, msg: Message }> {
    const out = this.items
    this.items = []
    this.bytes = 0
    return out
  }

  get size (): number { return this.items.length }
  get heldBytes (): number { return this.bytes }
}
