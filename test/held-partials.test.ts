/**
 * A reduction's partials go to the control stream as it drains (node/held-partials.ts),
 * not all at once: a burst longer than the control stream's queue limit no longer resets
 * it as stuck, the partials keep their order, and other control messages do not wait
 * behind them. Fake libp2p components, no sockets.
 */
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { Uint8ArrayList } from 'uint8arraylist'
import { afterEach, describe, expect, it } from 'vitest'
import { decodeMessage } from '../overlay/codec.ts'
import type { Message, PartialMessage } from '../overlay/messages.ts'
import { FrameKind } from '../node/frame-channel.ts'
import { encodeHello } from '../node/hello.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { FakeStream } from './fake-stream.ts'
import { frame, framesOf, rig, settled, type Rig } from './links-rig.ts'

/** A stream whose muxer window is full after `windowSends` sends, until the test calls `drain()`. */
class WindowedStream extends FakeStream {
  override writableNeedsDrain = false
  private sinceDrain = 0
  constructor (private readonly windowSends: number) { super() }
  override send (data: Uint8ArrayList): boolean {
    super.send(data)
    if (++this.sinceDrain >= this.windowSends) this.writableNeedsDrain = true
    return !this.writableNeedsDrain
  }

  drain (): void {
    this.sinceDrain = 0
    this.writableNeedsDrain = false
    this.dispatchEvent(new Event('drain'))
  }
}

/** The core messages written on `s`, in order. */
function coreMessages (s: FakeStream): Message[] {
  return framesOf(s).filter((f) => f.kind === FrameKind.Core).map((f) => decodeMessage(f.body))
}

const segment = (seg: number): PartialMessage => ({ t: 'partial', id: 'r', root: 'root', op: 'sum', covered: IntervalSet.range(0, 4), value: new Float64Array(8192).fill(seg), seg })

describe('held partials', () => {
  let current: Rig | undefined
  afterEach(async () => { await current?.links.stop(); current = undefined })

  const connect = async (stream: FakeStream): Promise<{ r: Rig, to: string }> => {
    const remote = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
    const to = `/ip4/127.0.0.1/tcp/4001/p2p/${remote}`
    // A 1 MiB queue limit (bulkMinBytes at most an eighth of it) and a 256 KiB high-water mark.
    const r = current = await rig([], { maxQueuedBytes: 1024 * 1024, bulkMinBytes: 128 * 1024, bulkHighWaterBytes: 256 * 1024 })
    r.inbound(stream, remote)
    stream.feed(frame(FrameKind.Hello, encodeHello({ id: to, incarnation: 1 })))
    await settled()
    return { r, to }
  }

  it('a burst of 4 MiB of partials through a 1 MiB queue limit: fed as the stream drains, in order, none lost', async () => {
    const s = new WindowedStream(4)
    const { r, to } = await connect(s)
    for (let k = 0; k < 64; k++) r.links.send(to, segment(k), undefined)
    await settled()
    // The window is full: about the high-water mark was queued, the rest waits unencoded.
    const first = coreMessages(s).length
    expect(first).toBeGreaterThan(0)
    expect(first).toBeLessThan(16)
    // Other control messages go ahead of the partials still held.
    r.links.send(to, { t: 'ping', nonce: 7 }, undefined)
    for (let i = 0; i < 100 && coreMessages(s).filter((m) => m.t === 'partial').length < 64; i++) { s.drain(); await settled() }
    const sent = coreMessages(s)
    const segs = sent.filter((m): m is PartialMessage => m.t === 'partial').map((m) => m.seg)
    expect(segs).toEqual(Array.from({ length: 64 }, (_, k) => k))
    const ping = sent.findIndex((m) => m.t === 'ping')
    expect(ping).toBeGreaterThan(0)
    expect(ping).toBeLessThan(sent.length - 1)
    expect(r.links.stats.queueOverflows).toBe(0)
    expect(s.aborted).toBeUndefined()
  })

  it('partials held when their channel closes go on the next one', async () => {
    // The window is full from the first send (the hello): the first partials stay in that
    // channel's queue, and are lost with it as any control message is; the rest are held.
    const s = new WindowedStream(1)
    const { r, to } = await connect(s)
    for (let k = 0; k < 16; k++) r.links.send(to, segment(k), undefined)
    await settled()
    expect(coreMessages(s)).toEqual([])
    // A second channel from the same process (a simultaneous dial), then the first closes.
    const next = new FakeStream()
    r.inbound(next, to.split('/p2p/')[1] as string)
    next.feed(frame(FrameKind.Hello, encodeHello({ id: to, incarnation: 1 })))
    await settled()
    s.dispatchEvent(new Event('close'))
    await settled()
    const after = coreMessages(next).filter((m): m is PartialMessage => m.t === 'partial').map((m) => m.seg as number)
    const queued = 16 - after.length
    expect(queued).toBeGreaterThan(0)
    expect(after).toEqual(Array.from({ length: 16 - queued }, (_, k) => queued + k))
  })
})
