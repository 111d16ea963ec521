/**
 * Noise with quiet length reads (node/quiet-noise.ts): the reader agrees with Noise's own on
 * every complete length and stops the decoder on an incomplete one without an exception,
 * LengthPrefixedDecoder with it cuts any split of a message sequence as with Noise's own,
 * and a real Noise connection gets it (which guards the private member the wrapper relies
 * on: if a Noise release renames it, the reader silently stays the throwing one and this
 * fails) and still carries bytes both ways.
 */
import fc from 'fast-check'
import type { ConnectionEncrypter, MessageStream, Upgrader } from '@libp2p/interface'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { defaultLogger } from '@libp2p/logger'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { LengthPrefixedDecoder, multiaddrConnectionPair } from '@libp2p/utils'
import { Uint8ArrayList } from 'uint8arraylist'
import { describe, expect, it } from 'vitest'
import { quietLengths, quietNoise, quietUint16BE } from '../node/quiet-noise.ts'

const be16 = (n: number): Uint8Array => Uint8Array.of(n >> 8, n & 0xff)

describe('quietUint16BE', () => {
  it('reads a complete length big-endian, from one buffer or a list of several', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 0xffff }), fc.uint8Array({ maxLength: 3 }), (n, rest) => {
      expect(quietUint16BE(Uint8Array.from([...be16(n), ...rest]))).toBe(n)
      const [hi, lo] = be16(n)
      expect(quietUint16BE(new Uint8ArrayList(Uint8Array.of(hi ?? 0), Uint8Array.of(lo ?? 0), rest))).toBe(n)
    }))
  })

  it('reads fewer than 2 bytes as 0, without throwing', () => {
    expect(quietUint16BE(new Uint8Array(0))).toBe(0)
    expect(quietUint16BE(Uint8Array.of(7))).toBe(0)
    expect(quietUint16BE(new Uint8ArrayList())).toBe(0)
    expect(quietUint16BE(new Uint8ArrayList(Uint8Array.of(7)))).toBe(0)
  })

  it('cuts any split of a message sequence into the same messages', () => {
    const message = fc.uint8Array({ minLength: 0, maxLength: 600 })
    fc.assert(fc.property(fc.array(message, { maxLength: 12 }), fc.array(fc.nat(8000), { maxLength: 20 }), (messages, cuts) => {
      const wire = new Uint8ArrayList()
      for (const m of messages) { wire.append(be16(m.length)); wire.append(m) }
      const all = wire.subarray()
      const points = [...new Set(cuts.map((c) => c % (all.length + 1)))].sort((a, b) => a - b)
      const decoder = new LengthPrefixedDecoder({ lengthDecoder: quietUint16BE, encodingLength: () => 2 })
      const out: Uint8Array[] = []
      let prev = 0
      for (const p of [...points, all.length]) {
        for (const m of decoder.decode(all.subarray(prev, p))) out.push(m.subarray())
        prev = p
      }
      // the decoder drops empty messages, with Noise's reader as with this one
      expect(out).toEqual(messages.filter((m) => m.length > 0))
    }))
  })
})

/** Noise for one side of a connection, with the components it reads. */
async function encrypter (): Promise<ConnectionEncrypter> {
  const privateKey = await generateKeyPair('Ed25519')
  const upgrader = { getStreamMuxers: () => new Map() } as unknown as Upgrader
  return quietNoise()({ peerId: peerIdFromPrivateKey(privateKey), privateKey, logger: defaultLogger(), upgrader })
}

/** Collects what `stream` receives until it has `bytes`. */
async function receive (stream: MessageStream, bytes: number): Promise<Uint8Array> {
  const got = new Uint8ArrayList()
  return await new Promise((resolve) => {
    stream.addEventListener('message', (evt) => {
      got.append(evt.data)
      if (got.byteLength >= bytes) resolve(got.subarray())
    })
  })
}

describe('quietNoise', () => {
  it('gives both sides of a real Noise connection the quiet reader, and bytes still flow both ways', async () => {
    const [outbound, inbound] = multiaddrConnectionPair()
    const [a, b] = await Promise.all([encrypter(), encrypter()])
    const [client, server] = await Promise.all([
      a.secureOutbound(outbound, { skipStreamMuxerNegotiation: true }),
      b.secureInbound(inbound, { skipStreamMuxerNegotiation: true })
    ])
    for (const side of [client, server]) {
      const decoder = (side.connection as unknown as { decoder?: { lengthDecoder?: unknown } }).decoder
      expect(decoder?.lengthDecoder, 'Noise keeps its decoder in `decoder.lengthDecoder`').toBe(quietUint16BE)
    }
    // more than one Noise message (65,535 bytes) each way, in one send
    const big = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 7) & 0xff)
    const small = Uint8Array.of(1, 2, 3)
    const atServer = receive(server.connection, big.length)
    const atClient = receive(client.connection, small.length)
    client.connection.send(big)
    server.connection.send(small)
    expect(await atServer).toEqual(big)
    expect(await atClient).toEqual(small)
    client.connection.abort(new Error('done'))
    server.connection.abort(new Error('done'))
  })

  it('leaves a connection of another kind untouched', () => {
    const other = { send: () => true }
    expect(quietLengths(other)).toBe(other)
    const odd = { decoder: { lengthDecoder: 42 } }
    quietLengths(odd)
    expect(odd.decoder.lengthDecoder).toBe(42)
  })
})
