/**
 * Application payloads as stream chunks: a payload given as chunks is sent as it is, one
 * given as bytes is cut into pieces of at most `chunkBytes`.
 */
import { InvalidArgumentError } from './errors.ts'

/** The limits chunking applies. */
export interface PayloadLimits { chunkBytes: number, maxPayloadBytes: number }

/**
 * The chunks of `payload` (at least one, possibly empty). Throws InvalidArgumentError when
 * the payload exceeds `maxPayloadBytes`.
 */
export function chunkPayload (payload: Uint8Array | readonly Uint8Array[], limits: PayloadLimits): Uint8Array[] {
  if (Array.isArray(payload)) {
    const list = payload as readonly Uint8Array[]
    if (list.length === 0) return [new Uint8Array(0)]
    const total = list.reduce((n, c) => n + c.length, 0)
    if (total > limits.maxPayloadBytes) throw new InvalidArgumentError(`payload of ${total} bytes exceeds maxPayloadBytes ${limits.maxPayloadBytes}`)
    return [...list]
  }
  const bytes = payload as Uint8Array
  if (bytes.length > limits.maxPayloadBytes) throw new InvalidArgumentError(`payload of ${bytes.length} bytes exceeds maxPayloadBytes ${limits.maxPayloadBytes}`)
  const out: Uint8Array[] = []
  for (let i = 0; i < bytes.length; i += limits.chunkBytes) out.push(bytes.subarray(i, i + limits.chunkBytes))
  return out.length === 0 ? [bytes] : out
}
