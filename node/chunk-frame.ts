/**
 * The `Chunk` frame: a chunk message whose payload bytes travel raw after a small CBOR
 * header, instead of inside the CBOR map. Encoding then never copies the payload (the
 * frame is handed to the stream as [prefix, header, data]) and decoding hands the core a
 * view of the received bytes, not a copy. Body layout:
 *
 *     varint(headerLength) | header | data
 *
 * where `header` is overlay/codec.ts's encoding of the same chunk message with empty
 * `data`, so every field (and `open`, on a stream's first chunk) is validated exactly as a
 * CBOR-only chunk would be. A header that is not a chunk, or a chunk header carrying data,
 * is rejected as malformed.
 */
import type { Uint8ArrayList } from 'uint8arraylist'
import * as varint from 'uint8-varint'
import { DEFAULT_CODEC_LIMITS, decodeMessage, encodeMessage, type CodecLimits } from '../overlay/codec.ts'
import type { ChunkMessage } from '../overlay/messages.ts'
import { WireError } from '../overlay/wire-errors.ts'

const EMPTY = new Uint8Array(0)

/** The frame body as parts to write one after the other: [varint + header, data]. */
export function encodeChunkFrame (msg: ChunkMessage): Uint8Array[] {
  const header = encodeMessage({ ...msg, data: EMPTY })
  const len = varint.encodingLength(header.byteLength)
  const head = new Uint8Array(len + header.byteLength)
  varint.encode(header.byteLength, head)
  head.set(header, len)
  return [head, msg.data]
}

/** Bytes of the frame body {@link encodeChunkFrame} makes, without encoding it. */
export function chunkFrameBytes (msg: ChunkMessage, headerEstimate = 128): number {
  return headerEstimate + msg.data.byteLength
}

/**
 * Decodes and validates a chunk frame body from a remote peer. Throws {@link WireError}
 * only: `too-large` past `limits.maxMessageBytes` (the whole body, as for a CBOR frame),
 * `malformed` for a bad length prefix or a header that is not an empty-data chunk, and
 * whatever decodeMessage finds wrong in the header. `data` is a view of `body` when the
 * body lies in one buffer (usual: frames are cut from one received buffer), else a copy.
 */
export function decodeChunkFrame (body: Uint8ArrayList, limits: CodecLimits = {}): ChunkMessage {
  const max = limits.maxMessageBytes ?? DEFAULT_CODEC_LIMITS.maxMessageBytes
  if (body.byteLength > max) throw new WireError('too-large', `${body.byteLength} bytes > ${max}`)
  let headerLength: number
  let prefix: number
  try {
    headerLength = varint.decode(body)
    prefix = varint.encodingLength(headerLength)
  } catch (err) {
    throw new WireError('malformed', `chunk frame: bad header length (${(err as Error).message})`)
  }
  if (prefix + headerLength > body.byteLength) throw new WireError('malformed', `chunk frame: header of ${headerLength} bytes overruns the ${body.byteLength}-byte frame`)
  const msg = decodeMessage(body.subarray(prefix, prefix + headerLength), limits)
  if (msg.t !== 'chunk') throw new WireError('malformed', `chunk frame: header is a '${msg.t}' message`)
  if (msg.data.byteLength !== 0) throw new WireError('malformed', 'chunk frame: header carries data')
  return { ...msg, data: body.subarray(prefix + headerLength) }
}
