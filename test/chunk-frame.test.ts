/**
 * The raw chunk frame (node/chunk-frame.ts): round trips for any chunk, the payload kept
 * as a view, and remote garbage rejected with a WireError only.
 */
import fc from 'fast-check'
import { Uint8ArrayList } from 'uint8arraylist'
import { describe, expect, it } from 'vitest'
import { decodeChunkFrame, encodeChunkFrame } from '../node/chunk-frame.ts'
import { encodeMessage } from '../overlay/codec.ts'
import type { ChunkMessage } from '../overlay/messages.ts'
import { WireError } from '../overlay/wire-errors.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'

const body = (parts: Uint8Array[]): Uint8ArrayList => new Uint8ArrayList(new Uint8Array(new Uint8ArrayList(...parts).subarray()))

const chunkArb: fc.Arbitrary<ChunkMessage> = fc.record({
  stream: fc.nat(1e9),
  count: fc.integer({ min: 1, max: 1000 }),
  data: fc.uint8Array({ maxLength: 70_000 }),
  withOpen: fc.boolean(),
  mode: fc.constantFrom('lat' as const, 'bw' as const, 'direct' as const),
  lo: fc.nat(1000),
  len: fc.integer({ min: 1, max: 1000 }),
  fallback: fc.boolean()
}).chain((r) => fc.nat(r.count - 1).map((index): ChunkMessage => ({
  t: 'chunk',
  stream: r.stream,
  index,
  data: r.data,
  ...(r.withOpen
    ? { open: { id: 'root/0.1', origin: '/ip4/127.0.0.1/tcp/1/p2p/x', mode: r.mode, header: IntervalSet.range(r.lo, r.lo + r.len), chunkCount: r.count, totalBytes: r.count * 65536, fallback: r.fallback, hops: 3 } }
    : {})
})))

function rejects (b: Uint8ArrayList): string {
  try { decodeChunkFrame(b) } catch (err) {
    expect(err).toBeInstanceOf(WireError)
    return (err as WireError).reason
  }
  throw new Error('expected a WireError')
}

describe('chunk frames', () => {
  it('round-trip every chunk message, open header included', () => {
    fc.assert(fc.property(chunkArb, (m) => {
      const parts = encodeChunkFrame(m)
      expect(parts[1]).toBe(m.data) // the payload is written as it is, not copied
      const back = decodeChunkFrame(body(parts))
      expect(Buffer.from(back.data).equals(Buffer.from(m.data))).toBe(true)
      expect({ ...back, data: null, open: back.open === undefined ? undefined : { ...back.open, header: back.open.header.toString() } })
        .toEqual({ ...m, data: null, open: m.open === undefined ? undefined : { ...m.open, header: m.open.header.toString() } })
    }), { numRuns: 200 })
  })

  it('decodes the payload as a view of the received bytes', () => {
    const m: ChunkMessage = { t: 'chunk', stream: 1, index: 0, data: new Uint8Array(1000).fill(7) }
    const received = new Uint8Array(new Uint8ArrayList(...encodeChunkFrame(m)).subarray())
    const back = decodeChunkFrame(new Uint8ArrayList(received))
    expect(back.data.buffer).toBe(received.buffer)
  })

  it('rejects garbage, overruns, other messages and data in the header as WireErrors', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
      try { decodeChunkFrame(new Uint8ArrayList(bytes)) } catch (err) { expect(err).toBeInstanceOf(WireError) }
    }), { numRuns: 500 })
    expect(rejects(new Uint8ArrayList(new Uint8Array([0x80])))).toBe('malformed') // truncated varint
    expect(rejects(new Uint8ArrayList(new Uint8Array([50, 1, 2])))).toBe('malformed') // header overruns
    const ack = encodeMessage({ t: 'ack', stream: 3 })
    expect(rejects(body([new Uint8Array([ack.length]), ack]))).toBe('malformed')
    const inner = encodeMessage({ t: 'chunk', stream: 1, index: 0, data: new Uint8Array([1]) })
    expect(rejects(body([new Uint8Array([inner.length]), inner]))).toBe('malformed')
    const big: ChunkMessage = { t: 'chunk', stream: 1, index: 0, data: new Uint8Array(2000) }
    expect(() => decodeChunkFrame(body(encodeChunkFrame(big)), { maxMessageBytes: 1000 })).toThrow(WireError)
  })
})
