/**
 * What a shaped connection hands on: one buffer per pipe delivery, in both directions,
 * however many pieces arrived together. Noise writes each frame as a 2-byte length and a
 * ciphertext; handed on as a list, each piece became its own socket write, and the Noise
 * decoder searched the list for every length it read (EXPERIMENTS.md, sixteenth round).
 */
import { describe, expect, it } from 'vitest'
import { logger } from '@libp2p/logger'
import { multiaddr } from '@multiformats/multiaddr'
import type { MultiaddrConnection } from '@libp2p/interface'
import { Uint8ArrayList } from 'uint8arraylist'
import { Pipe, Poller, ShapedConnection, type Chunk, type PipeInit } from '../node/wan/index.ts'
import { FakeStream } from './fake-stream.ts'

const PIPE: PipeInit = { from: 'a', to: 'b', delayMs: 2, rateBytesPerSec: Infinity, quantumBytes: 16 * 1024, backlogHighWaterBytes: 1 << 20, maxInFlightBytes: 1 << 24 }

/** The socket side: records what the shaped connection writes (`sent`), and can "receive" bytes (`feed`). */
class FakeSocket extends FakeStream<Chunk> {
  readonly remoteAddr = multiaddr('/ip4/127.0.0.1/tcp/4001')
  readonly direction = 'outbound'
  readonly log = logger('test:wan-shaped')
  readonly inactivityTimeout = 0
  readonly status = 'open'
}

async function settle (): Promise<void> { await new Promise((resolve) => setTimeout(resolve, 30)) }

describe('ShapedConnection', () => {
  const poller = new Poller(0)
  const bytes = (...xs: number[]): Uint8Array => Uint8Array.from(xs)

  it('writes what arrives together as one buffer, in order', async () => {
    const socket = new FakeSocket()
    const conn = new ShapedConnection(socket as unknown as MultiaddrConnection, { up: new Pipe(PIPE, poller), down: new Pipe(PIPE, poller) })
    // three Noise-like frames, each a length piece and a body piece, sent back to back
    conn.send(new Uint8ArrayList(bytes(0, 2), bytes(10, 11)))
    conn.send(new Uint8ArrayList(bytes(0, 1), bytes(12)))
    conn.send(bytes(0, 3, 13, 14, 15))
    await settle()
    // One write per pipe delivery, each a single buffer: one in all, unless a loaded
    // machine spread the three sends over two deliveries (never one write per piece).
    expect(socket.sent.length).toBeGreaterThanOrEqual(1)
    expect(socket.sent.length).toBeLessThanOrEqual(2)
    for (const w of socket.sent) expect(w).toBeInstanceOf(Uint8Array)
    expect(socket.sent.flatMap((w) => [...(w as Uint8Array)])).toEqual([0, 2, 10, 11, 0, 1, 12, 0, 3, 13, 14, 15])
    conn.abort(new Error('done'))
  })

  it('hands up what arrives together as one buffer, in order', async () => {
    const socket = new FakeSocket()
    const conn = new ShapedConnection(socket as unknown as MultiaddrConnection, { up: new Pipe(PIPE, poller), down: new Pipe(PIPE, poller) })
    const got: Array<Uint8Array | Uint8ArrayList> = []
    conn.addEventListener('message', (evt) => { got.push(evt.data) })
    socket.feed(new Uint8ArrayList(bytes(1, 2), bytes(3)))
    socket.feed(bytes(4, 5))
    await settle()
    // one per pipe delivery (two if a loaded machine spread the pieces over two)
    expect(got.length).toBeGreaterThanOrEqual(1)
    expect(got.length).toBeLessThanOrEqual(2)
    // libp2p may wrap each in a list of its own: one buffer in it
    for (const g of got) expect(g instanceof Uint8Array ? 1 : [...g].length).toBe(1)
    expect(got.flatMap((g) => [...g.subarray()])).toEqual([1, 2, 3, 4, 5])
    conn.abort(new Error('done'))
  })
})
