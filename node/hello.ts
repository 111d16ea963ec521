/**
 * The first frame on every treecast stream: who is speaking. A peer's overlay id is its
 * dialable multiaddr ending in `/p2p/<libp2p peer id>` (see node/README.md), so peers
 * learnt from membership facts can be dialled without any other address exchange. The
 * id's `/p2p/` part must be the peer Noise authenticated on the connection, so one peer
 * cannot speak under another's id.
 */
import { decode, encode } from 'cborg'
import type { Uint8ArrayList } from 'uint8arraylist'

/** Longest overlay id accepted (the core's codec limit on peer ids). */
export const MAX_OVERLAY_ID_LENGTH = 256
/** A hello frame's body is at most this many bytes (its id in UTF-8, its incarnation, CBOR). */
export const MAX_HELLO_BYTES = MAX_OVERLAY_ID_LENGTH * 4 + 32

export interface Hello {
  /** The sender's overlay id. */
  readonly id: string
  /** The sender's incarnation (start time in ms since the epoch). */
  readonly incarnation: number
}

export function encodeHello (h: Hello): Uint8Array {
  return encode([h.id, h.incarnation])
}

/** Parses a hello; undefined when malformed. */
export function decodeHello (body: Uint8ArrayList): Hello | undefined {
  if (body.byteLength > MAX_HELLO_BYTES) return undefined
  let v: unknown
  try { v = decode(body.subarray()) } catch { return undefined }
  if (!Array.isArray(v) || v.length !== 2) return undefined
  const [id, incarnation] = v as unknown[]
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_OVERLAY_ID_LENGTH) return undefined
  if (typeof incarnation !== 'number' || !Number.isSafeInteger(incarnation) || incarnation < 0) return undefined
  return { id, incarnation }
}

/** The libp2p peer id at the end of an overlay id, or undefined when it has none. */
export function peerIdPart (overlayId: string): string | undefined {
  const i = overlayId.lastIndexOf('/p2p/')
  if (i < 0) return undefined
  const rest = overlayId.slice(i + 5)
  return rest.length > 0 && !rest.includes('/') ? rest : undefined
}
