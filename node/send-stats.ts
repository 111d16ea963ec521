/**
 * Counts what this peer sends, for metrics: messages by type, point-to-point fallback sends
 * (003's rule III: a stream opened outside the trees), and payload bytes by tree. Only the
 * first chunk of a stream names its mode, so the mode of each open outbound stream is
 * remembered until its last chunk, in a bounded table (the oldest entries go first; a
 * stream that outlives the bound counts its remaining bytes as `unknown`).
 */
import type { Message } from '../overlay/messages.ts'

/** Outbound streams whose mode is remembered at most. */
const MAX_OPEN_STREAMS = 4096

export class SendStats {
  readonly byType: Record<string, number> = {}
  /** Streams opened by a point-to-point fallback send (rule III), by mode. */
  readonly fallbackSends: Record<string, number> = {}
  /** Chunk payload bytes sent, by mode (`lat`, `bw`, `direct`, `reduce`, ...; `unknown` past the table). */
  readonly bytesByMode: Record<string, number> = {}
  private readonly open = new Map<string, { mode: string, left: number }>()

  record (to: string, m: Message): void {
    this.byType[m.t] = (this.byType[m.t] ?? 0) + 1
    if (m.t !== 'chunk') return
    const key = `${to} ${m.stream}`
    let mode = 'unknown'
    if (m.open !== undefined) {
      mode = m.open.mode
      if (m.open.fallback) this.fallbackSends[mode] = (this.fallbackSends[mode] ?? 0) + 1
      if (m.open.chunkCount > 1) {
        if (this.open.size >= MAX_OPEN_STREAMS) this.open.delete(this.open.keys().next().value as string)
        this.open.set(key, { mode, left: m.open.chunkCount - 1 })
      }
    } else {
      const s = this.open.get(key)
      if (s !== undefined) {
        mode = s.mode
        if (--s.left <= 0) this.open.delete(key)
      }
    }
    this.bytesByMode[mode] = (this.bytesByMode[mode] ?? 0) + m.data.length
  }
}
