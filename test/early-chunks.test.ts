/** overlay/early-chunks.ts: chunks held before their stream's opening chunk stay within their bounds. */
import { describe, expect, it } from 'vitest'
import { EARLY_CHUNK_OVERHEAD_BYTES, EARLY_HOLD_MS, EarlyChunks, MAX_EARLY_BYTES, MAX_EARLY_STREAMS } from '../overlay/early-chunks.ts'
import type { ChunkMessage } from '../overlay/messages.ts'

const chunk = (index: number, bytes: number): ChunkMessage => ({ t: 'chunk', stream: 1, index, data: new Uint8Array(bytes) })

describe('EarlyChunks', () => {
  it('empty chunks are not free: a flood of them stops at the byte bound', () => {
    const e = new EarlyChunks()
    let held = 0
    while (e.hold(0, 's', chunk(held, 0))) held++
    expect(held).toBe(MAX_EARLY_BYTES / EARLY_CHUNK_OVERHEAD_BYTES)
    expect(e.heldBytes).toBe(MAX_EARLY_BYTES)
    expect(e.take('s')).toHaveLength(held)
    expect(e.heldBytes).toBe(0)
    expect(e.hold(0, 's', chunk(0, 0))).toBe(true)
  })

  it('bounds the streams, and releases a stream whole, in arrival order', () => {
    const e = new EarlyChunks()
    for (let s = 0; s < MAX_EARLY_STREAMS; s++) expect(e.hold(0, `s${s}`, chunk(0, 10))).toBe(true)
    expect(e.hold(0, 'one-more', chunk(0, 10))).toBe(false)
    expect(e.hold(0, 's0', chunk(1, 20))).toBe(true) // a stream already held takes more
    expect(e.take('s0').map((c) => c.index)).toEqual([0, 1])
    expect(e.streams).toBe(MAX_EARLY_STREAMS - 1)
  })

  it('drops what waited longer than EARLY_HOLD_MS, with its bytes', () => {
    const e = new EarlyChunks()
    e.hold(0, 'old', chunk(0, 100))
    e.hold(EARLY_HOLD_MS, 'new', chunk(0, 100))
    expect(e.expire(EARLY_HOLD_MS + 1)).toBe(1)
    expect(e.take('old')).toEqual([])
    expect(e.heldBytes).toBe(100 + EARLY_CHUNK_OVERHEAD_BYTES)
  })
})
