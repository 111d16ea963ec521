/**
 * node/relay.ts on the serving side, frame by frame over a fake stream: a relay stream
 * starts one broadcast, however the asker goes on.
 */
import { describe, expect, it } from 'vitest'
import type { Connection, Stream } from '@libp2p/interface'
import { encode } from 'cborg'
import { Uint8ArrayList } from 'uint8arraylist'
import * as varint from 'uint8-varint'
import { Relay } from '../node/relay.ts'
import { RelayFailedError } from '../node/errors.ts'
import { encodeHello } from '../node/hello.ts'
import { FakeStream } from './fake-stream.ts'

function frame (kind: number, body: Uint8Array): Uint8ArrayList {
  const len = varint.encodingLength(body.byteLength + 1)
  const head = new Uint8Array(len + 1)
  varint.encode(body.byteLength + 1, head)
  head[len] = kind
  return new Uint8ArrayList(head, body)
}

const HELLO = 1
const START = 16
const DATA = 17

function serving (): { s: FakeStream, broadcasts: number[], rejected: string[] } {
  const broadcasts: number[] = []
  const rejected: string[] = []
  const relay = new Relay({
    hello: () => ({ id: '/ip4/1.2.3.4/tcp/1/p2p/ME', incarnation: 1 }),
    open: async () => { throw new Error('unused') },
    broadcast: (payload) => { broadcasts.push(payload.byteLength); return { id: `me/${broadcasts.length}`, done: new Promise<void>(() => {}) } },
    maxPayloadBytes: () => 1 << 30,
    maxFrameBytes: 1 << 20,
    clock: () => 0,
    reject: (r) => { rejected.push(r) }
  })
  const s = new FakeStream()
  relay.accept(s as unknown as Stream, { remotePeer: { toString: () => 'REMOTE' } } as unknown as Connection)
  s.feed(frame(HELLO, encodeHello({ id: '/ip4/9.9.9.9/tcp/1/p2p/REMOTE', incarnation: 1 })))
  return { s, broadcasts, rejected }
}

describe('relay: one stream, one broadcast', () => {
  it('frames after the last announced byte are rejected and start nothing', () => {
    const { s, broadcasts, rejected } = serving()
    s.feed(frame(START, encode({ bytes: 1000 })))
    s.feed(frame(DATA, new Uint8Array(600)))
    expect(broadcasts).toEqual([])
    s.feed(frame(DATA, new Uint8Array(400)))
    expect(broadcasts).toEqual([1000])
    for (let i = 0; i < 50; i++) s.feed(frame(DATA, new Uint8Array(0)))
    s.feed(frame(START, encode({ bytes: 5 })))
    expect(broadcasts).toEqual([1000])
    expect(rejected).toEqual(Array(51).fill('relay-bad-frame'))
  })

  it('an empty payload starts at its start frame, once', () => {
    const { s, broadcasts, rejected } = serving()
    s.feed(frame(START, encode({ bytes: 0 })))
    s.feed(frame(DATA, new Uint8Array(0)))
    expect(broadcasts).toEqual([0])
    expect(rejected).toEqual(['relay-bad-frame'])
  })

  it("asking a root: a root that left or was declared dead fails what was asked of it (a hung root's relay stream is not watched)", async () => {
    const stream = new FakeStream()
    const relay = new Relay({
      hello: () => ({ id: '/ip4/1.2.3.4/tcp/1/p2p/ME', incarnation: 1 }),
      open: async () => stream as unknown as Stream,
      broadcast: () => { throw new Error('unused') },
      maxPayloadBytes: () => 1 << 30,
      maxFrameBytes: 1 << 20,
      clock: () => 0,
      reject: () => {}
    })
    const asked = relay.broadcastAt('ROOT', new Uint8Array(10), 'auto')
    await new Promise((resolve) => setImmediate(resolve))
    relay.rootGone('OTHER')
    relay.rootGone('ROOT')
    await expect(asked).rejects.toThrow(RelayFailedError)
    await expect(asked).rejects.toThrow(/ROOT left or was declared dead/)
    expect(stream.aborted).toBeDefined()
  })
})
