/**
 * node/frame-channel.ts and node/links.ts on fake streams, the defects a review of the
 * networking path found: a close that never reached the stream, a pruned peer redialled
 * every 15 s, a redial loop when a dialled id is answered by another id of the same key,
 * and the fence's replay timer outliving stop().
 */
import type { Stream } from '@libp2p/interface'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { Uint8ArrayList } from 'uint8arraylist'
import { describe, expect, it } from 'vitest'
import { encodeMessage } from '../overlay/codec.ts'
import { FrameChannel, FrameKind } from '../node/frame-channel.ts'
import { encodeHello } from '../node/hello.ts'
import { BULK_PROTOCOL } from '../node/links.ts'
import { encodeTransferEnd } from '../node/bulk-router.ts'
import { encodeChunkFrame } from '../node/chunk-frame.ts'
import { FakeStream } from './fake-stream.ts'
import { frame, rig, settled } from './links-rig.ts'

class CloseSpy extends FakeStream { closes = 0; override async close (): Promise<void> { this.closes++ } }

const remoteId = async (): Promise<string> => peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

describe('FrameChannel.close()', () => {
  it('closes the stream after a frame queued in the same turn, once it is written', async () => {
    const s = new CloseSpy()
    const ch = new FrameChannel(s as unknown as Stream, { maxFrameBytes: 1 << 20, maxQueuedBytes: 1 << 20 }, { frame: () => {}, drained: () => {}, closed: () => {} }, () => 0)
    ch.send(FrameKind.Bye, new Uint8Array(0))
    let done = false
    void ch.close().then(() => { done = true })
    await settled()
    expect(s.sent.length).toBe(1)
    expect(done).toBe(true)
    expect(s.closes).toBe(1)
  })
})

describe('FrameChannel firstFrame', () => {
  const open = (s: FakeStream, frames: number[]): FrameChannel => new FrameChannel(s as unknown as Stream, { maxFrameBytes: 1 << 20, maxQueuedBytes: 1 << 20, firstFrame: { maxBytes: 100, withinMs: 50 } }, { frame: (kind) => { frames.push(kind) }, drained: () => {}, closed: () => {} }, () => 0)

  it('a small first frame, then frames of any size up to the limit', async () => {
    const s = new FakeStream()
    const frames: number[] = []
    open(s, frames)
    s.feed(frame(FrameKind.Hello, new Uint8Array(90)))
    s.feed(frame(FrameKind.Core, new Uint8Array(5000)))
    await sleep(80)
    expect(frames).toEqual([FrameKind.Hello, FrameKind.Core])
    expect(s.aborted).toBeUndefined()
  })

  it('a first frame past maxBytes, or its announced length only, aborts the stream', () => {
    const long = new FakeStream()
    open(long, [])
    long.feed(frame(FrameKind.Hello, new Uint8Array(200)))
    expect(long.aborted).toBeDefined()
    const partial = new FakeStream()
    open(partial, [])
    const n = 1024 * 1024 // announced, then only part of it sent
    partial.feed(new Uint8ArrayList(Uint8Array.of((n & 0x7f) | 0x80, ((n >> 7) & 0x7f) | 0x80, n >> 14), new Uint8Array(4096)))
    expect(partial.aborted).toBeDefined()
  })

  it('no first frame within withinMs aborts the stream', async () => {
    const s = new FakeStream()
    open(s, [])
    await sleep(80)
    expect(s.aborted).toBeDefined()
  })
})

describe('Links', () => {
  it('an inbound stream that never says a whole hello is dropped within the failure-detection timeout', async () => {
    const remote = await remoteId()
    const r = await rig([], { heartbeatIntervalMs: 20, failureDetectionTimeoutMs: 100 })
    const silent = new FakeStream()
    r.inbound(silent, remote)
    const held = new FakeStream()
    r.inbound(held, remote)
    held.feed(new Uint8ArrayList(Uint8Array.of(0x80, 0x80, 0x40))) // a prefix announcing 1 MiB, and nothing more
    await sleep(300)
    expect(silent.aborted).toBeDefined()
    expect(held.aborted).toBeDefined()
    await r.links.stop()
  })

  it('a dialled id answered by another id of the same key is reported down, not redialled for ever', async () => {
    const remote = await remoteId()
    const to = `/ip4/127.0.0.1/tcp/1/p2p/${remote}`
    const r = await rig(Array(1000).fill('connect'))
    let fed = 0
    let stop = false
    const feeder = (async () => {
      while (!stop) {
        for (; fed < r.streams.length; fed++) r.streams[fed]?.feed(frame(FrameKind.Hello, encodeHello({ id: `/ip4/127.0.0.1/tcp/2/p2p/${remote}`, incarnation: 1 })))
        await new Promise((resolve) => setImmediate(resolve))
      }
    })()
    r.links.send(to, { t: 'sync' }, undefined)
    await sleep(200)
    stop = true
    await feeder
    await r.links.stop()
    expect(r.calls()).toBe(1)
    expect(r.down).toEqual([to])
  })

  it('a peer that said bye (it pruned us) and goes quiet is forgotten, not redialled', async () => {
    const remote = await remoteId()
    const r = await rig(Array(100).fill('connect'), { heartbeatIntervalMs: 20, failureDetectionTimeoutMs: 100 })
    const s = new FakeStream()
    r.inbound(s, remote)
    s.feed(frame(FrameKind.Hello, encodeHello({ id: `/ip4/127.0.0.1/tcp/1/p2p/${remote}`, incarnation: 1 })))
    s.feed(frame(FrameKind.Bye, new Uint8Array(0)))
    await sleep(300)
    expect(r.calls()).toBe(0)
    expect(r.links.connectedPeers()).toEqual([])
    await r.links.stop()
  })

  it('stop() cuts the channels of pruned peers that are still closing (their side never closed)', async () => {
    class NeverCloses extends FakeStream {
      override async close (): Promise<void> { await new Promise(() => {}) }
    }
    let now = 0
    const r = await rig([], { maxPeers: 1, pruneIdleMs: 10 }, { clock: () => now })
    const streams = [new NeverCloses(), new NeverCloses()]
    for (const s of streams) {
      const remote = await remoteId()
      r.inbound(s, remote)
      s.feed(frame(FrameKind.Hello, encodeHello({ id: `/ip4/127.0.0.1/tcp/1/p2p/${remote}`, incarnation: 1 })))
      await settled()
      now += 100
    }
    // Two peers past maxPeers 1, both idle: the least recently used is pruned, its stream left closing.
    expect(r.links.connectedPeers()).toHaveLength(1)
    expect(streams.every((s) => s.aborted === undefined)).toBe(true)
    await r.links.stop()
    for (const s of streams) expect(s.aborted?.message).toBe('node stopping')
  })

  it('EndAcks to a bulk sender that never reads them are bounded: the stream is cut off', async () => {
    class Stuck extends FakeStream {
      override writableNeedsDrain = true
      override send (data: Uint8ArrayList): boolean { this.sent.push(data); return false }
    }
    const remote = await remoteId()
    const r = await rig([])
    const s = new Stuck()
    r.inbound(s, remote, BULK_PROTOCOL)
    s.feed(frame(FrameKind.Hello, encodeHello({ id: `/ip4/127.0.0.1/tcp/1/p2p/${remote}`, incarnation: 1 })))
    const chunk = new Uint8ArrayList(...encodeChunkFrame({ t: 'chunk', stream: 1, index: 0, data: new Uint8Array(0) })).subarray()
    for (let i = 0; i < 5000 && s.aborted === undefined; i++) { s.feed(frame(FrameKind.Chunk, chunk)); s.feed(frame(FrameKind.End, encodeTransferEnd(1))) }
    await settled()
    expect(s.aborted).toBeDefined()
    await r.links.stop()
  })

  it('stop() ends a fence, and its replay timer with it (the process can exit)', async () => {
    let now = 0
    const r = await rig([], {}, { host: { fenceBegin: () => true }, clock: () => now })
    const s = new FakeStream()
    const remote = await remoteId()
    r.inbound(s, remote)
    s.feed(frame(FrameKind.Hello, encodeHello({ id: `/ip4/127.0.0.1/tcp/1/p2p/${remote}`, incarnation: 1 })))
    now = 1_000_000 // a stall far longer than the failure-detection timeout
    s.feed(frame(FrameKind.Core, encodeMessage({ t: 'sync' })))
    expect(r.links.fenceStats.fences).toBe(1)
    await r.links.stop()
    expect((r.links as unknown as { fence: { timer: unknown } }).fence.timer).toBeUndefined()
  })
})
