/**
 * Chunks that arrive before the chunk opening their stream. On the real node a stream's
 * chunks can travel on two streams of the connection (a bulk stream, then the control
 * stream after the bulk one was closed or replaced), so a later chunk may overtake the
 * opening one. Instead of rejecting it (and losing it: the sender counts it as sent), the
 * stream engine holds it here, bounded in bytes, streams and time, and replays it when the
 * opening chunk comes. What is not claimed in time is dropped and counted as an unknown
 * stream, as before.
 */
import type { ChunkMessage } from './messages.ts'

/** Bytes held at most, over all streams. */
export const MAX_EARLY_BYTES = 16 * 1024 * 1024
/** Streams with held chunks at most. */
export const MAX_EARLY_STREAMS = 256
/** What a held chunk counts beyond its data (its record): empty chunks are not free. */
export const EARLY_CHUNK_OVERHEAD_BYTES = 256
/** How long a held chunk waits for its opening chunk. */
export const EARLY_HOLD_MS = 10_000

interface Held { readonly since: number, readonly chunks: ChunkMessage[], bytes: number }

export class EarlyChunks {
  private readonly held = new Map<string, Held>()
  private bytes = 0

  /** Holds `msg` of stream `key`; false when over a bound (the caller rejects it). */
  hold (now: number, key: string, msg: ChunkMessage): boolean {
    this.expire(now)
    const size = msg.data.byteLength + EARLY_CHUNK_OVERHEAD_BYTES
    if (this.bytes + size > MAX_EARLY_BYTES) return false
    let h = this.held.get(key)
    if (h === undefined) {
      if (this.held.size >= MAX_EARLY_STREAMS) return false
      h = { since: now, chunks: [], bytes: 0 }
      this.held.set(key, h)
    }
    h.chunks.push(msg)
    h.bytes += size
    this.bytes += size
    return true
  }

  /** The chunks held for stream `key`, now released. */
  take (key: string): ChunkMessage[] {
    const h = this.held.get(key)
    if (h === undefined) return []
    this.held.delete(key)
    this.bytes -= h.bytes
    return h.chunks
  }

  /** Drops what waited longer than {@link EARLY_HOLD_MS}; returns the number of chunks dropped. */
  expire (now: number): number {
    let dropped = 0
    for (const [key, h] of this.held) {
      if (now - h.since <= EARLY_HOLD_MS) continue
      this.held.delete(key)
      this.bytes -= h.bytes
      dropped += h.chunks.length
    }
    return dropped
  }

  /** Bytes held, each chunk counted with {@link EARLY_CHUNK_OVERHEAD_BYTES} more. */
  get heldBytes (): number { return this.bytes }
  /** Streams with chunks held. */
  get streams (): number { return this.held.size }
}
