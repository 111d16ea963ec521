/** The node's send counters behind the daemon's fallback and bytes-by-tree metrics. */
import { describe, expect, it } from 'vitest'
import type { Message, StreamOpen } from '../overlay/messages.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { SendStats } from '../node/send-stats.ts'

function open (mode: StreamOpen['mode'], chunkCount: number, fallback = false): StreamOpen {
  return { id: 'x', origin: 'a', mode, header: IntervalSet.fromRanges([[0, 4]]), chunkCount, totalBytes: chunkCount * 10, fallback, hops: 1 }
}
const chunk = (stream: number, index: number, o?: StreamOpen): Message => ({ t: 'chunk', stream, index, data: new Uint8Array(10), ...(o !== undefined ? { open: o } : {}) })

describe('SendStats', () => {
  it('counts bytes by the mode of each stream, across chunks and peers', () => {
    const s = new SendStats()
    s.record('p1', chunk(1, 0, open('bw', 3)))
    s.record('p2', chunk(1, 0, open('lat', 1)))
    s.record('p1', chunk(1, 1))
    s.record('p1', chunk(1, 2))
    s.record('p1', chunk(1, 3)) // past the stream's end: its mode is forgotten
    s.record('p3', chunk(7, 0, open('direct', 2, true)))
    s.record('p3', chunk(7, 1))
    s.record('p1', { t: 'ack', stream: 1 })
    expect(s.bytesByMode).toEqual({ bw: 30, lat: 10, direct: 20, unknown: 10 })
    expect(s.fallbackSends).toEqual({ direct: 1 })
    expect(s.byType).toEqual({ chunk: 7, ack: 1 })
  })

  it('forgets the oldest open streams past its bound instead of growing', () => {
    const s = new SendStats()
    for (let i = 0; i < 5000; i++) s.record('p', chunk(i, 0, open('bw', 2)))
    s.record('p', chunk(0, 1)) // evicted: counted as unknown
    s.record('p', chunk(4999, 1))
    expect(s.bytesByMode).toEqual({ bw: 5000 * 10 + 10, unknown: 10 })
  })
})
