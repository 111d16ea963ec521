/**
 * `@chainsafe/libp2p-noise` whose secured connections read message lengths without an
 * exception.
 *
 * Noise 17.x cuts the bytes it reads into messages with libp2p's LengthPrefixedDecoder,
 * which reads lengths until the buffer runs out and learns that it did from a RangeError
 * thrown by Noise's 2-byte length reader: one exception, with its stack trace, per read
 * of every connection. Among gossipsub-compare's 24 in-process peers that was 5.9% of the
 * CPU of 1 MB broadcasts (EXPERIMENTS.md, eighteenth round). The same fix for treecast's
 * own frames is node/frame-length.ts.
 *
 * The reader here returns a length of 0 for fewer than 2 bytes: the decoder then needs 2
 * bytes for the frame, has fewer, and stops as it did on the exception. A real 0-length
 * message is still consumed as before (the decoder skips empty frames).
 */
import { noise, type NoiseInit } from '@chainsafe/libp2p-noise'
import type { ConnectionEncrypter, SecuredConnection } from '@libp2p/interface'
import type { Uint8ArrayList } from 'uint8arraylist'
import { delegate } from './corked-tcp.ts'

/** Noise's big-endian 2-byte message length, or 0 when fewer than 2 bytes are buffered. */
export function quietUint16BE (data: Uint8Array | Uint8ArrayList): number {
  if (data.length < 2) return 0
  if (data instanceof Uint8Array) return ((data[0] ?? 0) << 8) | (data[1] ?? 0)
  return data.getUint16(0)
}
quietUint16BE.bytes = 2

/** What the quiet reader needs of a secured connection (a private member of Noise's). */
interface DecodingConnection { decoder?: { lengthDecoder?: unknown } }

/**
 * Gives `connection` (a connection secured by Noise) the quiet length reader. A connection
 * of another kind is returned untouched. Returns `connection`.
 */
export function quietLengths<T> (connection: T): T {
  const decoder = (connection as unknown as DecodingConnection).decoder
  if (decoder !== undefined && typeof decoder.lengthDecoder === 'function') decoder.lengthDecoder = quietUint16BE
  return connection
}

type NoiseComponents = Parameters<ReturnType<typeof noise>>[0]

/**
 * A connection encrypter factory for libp2p's `connectionEncrypters: [...]`, in place of
 * `noise(init)`: the same Noise, its connections reading lengths without an exception.
 * createTreecast uses it by default.
 */
export function quietNoise (init?: NoiseInit): (components: NoiseComponents) => ConnectionEncrypter {
  const factory = noise(init)
  return (components) => {
    const inner = factory(components)
    const quiet = async <E>(secured: Promise<SecuredConnection<E>>): Promise<SecuredConnection<E>> => {
      const result = await secured
      quietLengths(result.connection)
      return result
    }
    const secureOutbound: ConnectionEncrypter['secureOutbound'] = async (...args) => await quiet(inner.secureOutbound(...args))
    const secureInbound: ConnectionEncrypter['secureInbound'] = async (...args) => await quiet(inner.secureInbound(...args))
    return delegate(inner, { secureOutbound, secureInbound })
  }
}
