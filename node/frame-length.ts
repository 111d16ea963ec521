/**
 * The length prefix of a frame (an unsigned LEB128 varint, as uint8-varint writes it),
 * read for @libp2p/utils' LengthPrefixedDecoder without throwing when it is incomplete.
 *
 * The decoder calls its length decoder again after every frame it cuts, so at the end of
 * nearly every read the buffer is empty or holds part of a prefix; uint8-varint then
 * throws a RangeError, which the decoder catches as "need more bytes". Building that error
 * (a stack trace) once per read of every stream was 3.6% of the CPU of a 1 MB broadcast
 * among gossipsub-compare's 24 in-process peers (EXPERIMENTS.md, seventeenth round).
 */
import type { Uint8ArrayList } from 'uint8arraylist'

/** A varint prefix longer than this many bytes is malformed (7 bytes hold up to 2^49). */
export const MAX_FRAME_LENGTH_BYTES = 7

/**
 * A length decoder for LengthPrefixedDecoder whose frames are at most `maxFrameBytes`
 * (the decoder's `maxDataLength`). An incomplete prefix reads as `maxFrameBytes`: a frame
 * the buffer cannot hold yet (it holds fewer than MAX_FRAME_LENGTH_BYTES bytes), so the
 * decoder waits for more. An overlong prefix reads as a length past any limit, which the
 * decoder rejects (InvalidMessageLengthError), as it rejects a frame too large.
 */
export function frameLengthDecoder (maxFrameBytes: number): (buf: Uint8ArrayList | Uint8Array) => number {
  return (buf) => {
    const n = Math.min(buf.byteLength, MAX_FRAME_LENGTH_BYTES)
    const bytes = buf instanceof Uint8Array ? buf : undefined
    let value = 0
    let scale = 1
    for (let i = 0; i < n; i++) {
      const b = bytes !== undefined ? bytes[i] as number : (buf as Uint8ArrayList).get(i)
      value += (b & 0x7f) * scale
      if (b < 0x80) return value
      scale *= 128
    }
    return buf.byteLength >= MAX_FRAME_LENGTH_BYTES ? Number.MAX_SAFE_INTEGER : maxFrameBytes
  }
}
