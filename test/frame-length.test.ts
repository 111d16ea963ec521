/**
 * The frame length decoder (node/frame-length.ts): it reads every complete varint prefix as
 * uint8-varint does, waits on an incomplete one without throwing, rejects an overlong one,
 * and LengthPrefixedDecoder with it cuts any split of a frame sequence into the same frames.
 */
import fc from 'fast-check'
import { LengthPrefixedDecoder } from '@libp2p/utils'
import * as varint from 'uint8-varint'
import { Uint8ArrayList } from 'uint8arraylist'
import { describe, expect, it } from 'vitest'
import { frameLengthDecoder, MAX_FRAME_LENGTH_BYTES } from '../node/frame-length.ts'

const MAX = 1 << 20

describe('frameLengthDecoder', () => {
  const decode = frameLengthDecoder(MAX)

  it('reads complete prefixes as uint8-varint does, in one buffer or split over several', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 48 }), fc.nat(8), (n, cut) => {
      const bytes = varint.encode(n)
      expect(decode(bytes)).toBe(n)
      const at = Math.min(cut, bytes.length)
      expect(decode(new Uint8ArrayList(bytes.subarray(0, at), bytes.subarray(at), Uint8Array.of(1, 2)))).toBe(n)
    }))
  })

  it('reads an incomplete prefix as the largest frame, without throwing', () => {
    expect(decode(new Uint8Array(0))).toBe(MAX)
    expect(decode(new Uint8ArrayList())).toBe(MAX)
    expect(decode(Uint8Array.of(0x80))).toBe(MAX)
    expect(decode(new Uint8ArrayList(Uint8Array.of(0xff), Uint8Array.of(0xff)))).toBe(MAX)
  })

  it('reads an overlong prefix as a length past any limit', () => {
    expect(decode(new Uint8Array(MAX_FRAME_LENGTH_BYTES).fill(0x80))).toBe(Number.MAX_SAFE_INTEGER)
    const decoder = new LengthPrefixedDecoder({ maxDataLength: MAX, lengthDecoder: decode })
    expect(() => [...decoder.decode(new Uint8Array(16).fill(0xff))]).toThrow(/length/)
  })

  it('cuts any split of a frame sequence into the same frames', () => {
    const frame = fc.uint8Array({ minLength: 1, maxLength: 600 })
    fc.assert(fc.property(fc.array(frame, { maxLength: 12 }), fc.array(fc.nat(700), { maxLength: 20 }), (frames, cuts) => {
      const wire = new Uint8ArrayList()
      for (const f of frames) { wire.append(varint.encode(f.length)); wire.append(f) }
      const all = wire.subarray()
      const points = [...new Set(cuts.map((c) => c % (all.length + 1)))].sort((a, b) => a - b)
      const decoder = new LengthPrefixedDecoder({ maxDataLength: MAX, lengthDecoder: decode })
      const out: Uint8Array[] = []
      let prev = 0
      for (const p of [...points, all.length]) {
        for (const f of decoder.decode(all.subarray(prev, p))) out.push(f.subarray())
        prev = p
      }
      expect(out).toEqual(frames)
    }))
  })
})
