/**
 * Bulk streams carry one transfer after another (node/bulk-router.ts): a transfer ends
 * with an `End` frame, and its stream is free again only once the receiver acknowledges
 * it; a stream that fails before the acknowledgement sends its transfer again; idle
 * streams close after `bulkIdleMs`. Driven by hand, on fake streams.
 */
import { describe, expect, it } from 'vitest'
import type { Stream } from '@libp2p/interface'
import { Uint8ArrayList } from 'uint8arraylist'
import * as varint from 'uint8-varint'
import { BulkRouter, encodeTransferEnd, MAX_IDLE_BULK_STREAMS, type BulkHost } from '../node/bulk-router.ts'
import { decodeChunkFrame } from '../node/chunk-frame.ts'
import { DEFAULT_NODE_NET } from '../node/config.ts'
import { FrameChannel, FrameKind } from '../node/frame-channel.ts'
import type { ChunkMessage, StreamOpen } from '../overlay/messages.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'

const CHUNK = 64 * 1024
const CHUNKS = DEFAULT_NODE_NET.bulkMinBytes / CHUNK

/** An outbound stream: records the frames written, answers with frames, closes on demand. */
class FakeStream extends EventTarget {
  writeStatus = 'writable'
  readStatus = 'readable'
  status = 'open'
  writableNeedsDrain = false
  private readonly bytes = new Uint8ArrayList()
  send (data: Uint8ArrayList): boolean { this.bytes.append(data.subarray()); return true }
  /** The frames written so far: [kind, body]. */
  frames (): Array<[number, Uint8Array]> {
    const out: Array<[number, Uint8Array]> = []
    const all = this.bytes.subarray()
    let off = 0
    while (off < all.byteLength) {
      const len = varint.decode(all, off)
      off += varint.encodingLength(len)
      out.push([all[off] as number, all.subarray(off + 1, off + len)])
      off += len
    }
    return out
  }

  /** The transfers (chunk stream ids) whose chunks were written, in order, and the ends. */
  summary (): string[] {
    return this.frames().map(([kind, body]) => {
      if (kind === FrameKind.Hello) return 'hello'
      if (kind === FrameKind.Chunk) { const m = decodeChunkFrame(new Uint8ArrayList(body)); return `c${m.stream}.${m.index}` }
      if (kind === FrameKind.End) return `end${varint.decode(body)}`
      return `kind${kind}`
    })
  }

  answer (kind: number, body: Uint8Array): void {
    const frame = new Uint8ArrayList(varint.encode(body.byteLength + 1), Uint8Array.of(kind), body)
    this.dispatchEvent(Object.assign(new Event('message'), { data: frame }))
  }

  fail (): void { this.status = 'aborted'; this.writeStatus = 'closed'; this.dispatchEvent(Object.assign(new Event('close'), { error: new Error('reset') })) }
  closedGracefully = false
  async close (): Promise<void> { this.closedGracefully = true; this.status = 'closed'; this.writeStatus = 'closed'; this.dispatchEvent(new Event('close')) }
  abort (): void { this.fail() }
  pause (): void {}
  resume (): void {}
}

function setup (): { r: BulkRouter, streams: FakeStream[], now: { ms: number } } {
  const streams: FakeStream[] = []
  const now = { ms: 0 }
  const host: BulkHost = {
    open: async () => { const s = new FakeStream(); streams.push(s); return s as unknown as Stream },
    hello: () => new Uint8Array([7]),
    failed: () => {},
    sendControl: () => {},
    drained: () => {},
    controlQueuedBytes: () => 0,
    onSent: () => {},
    clock: () => now.ms
  }
  return { r: new BulkRouter(DEFAULT_NODE_NET, host), streams, now }
}

function chunk (stream: number, index: number, stripe?: number): ChunkMessage {
  const open: StreamOpen = { id: `o/${stream}`, origin: 'o', mode: 'bw', header: IntervalSet.range(0, 4), chunkCount: CHUNKS, totalBytes: CHUNKS * CHUNK, fallback: false, hops: 0, ...(stripe !== undefined ? { stripes: 2, stripe } : {}) }
  const first = stripe ?? 0
  return { t: 'chunk', stream, index, data: new Uint8Array(CHUNK), ...(index === first ? { open } : {}) }
}

/** Routes a whole transfer (or one of its 2 stripes) to `to` and lets the streams open and the frames flush. */
async function transfer (r: BulkRouter, to: string, stream: number, stripe?: number): Promise<void> {
  for (let i = stripe ?? 0; i < CHUNKS; i += stripe === undefined ? 1 : 2) expect(r.route(to, chunk(stream, i, stripe), undefined)).toBe(true)
  await new Promise((resolve) => setTimeout(resolve, 0))
}

const ids = (stream: number): string[] => [...Array.from({ length: CHUNKS }, (_, i) => `c${stream}.${i}`), `end${stream}`]

describe('bulk stream reuse', () => {
  it('reuses a stream only after the receiver acknowledged the end of its transfer', async () => {
    const { r, streams } = setup()
    await transfer(r, 'b', 1)
    expect(streams).toHaveLength(1)
    expect(streams[0]?.summary()).toEqual(['hello', ...ids(1)])
    // not acknowledged yet: the next transfer takes a new stream
    await transfer(r, 'b', 2)
    expect(streams).toHaveLength(2)
    streams[0]?.answer(FrameKind.EndAck, encodeTransferEnd(1))
    expect(r.idleStreams).toBe(1)
    // acknowledged: the third goes on the first stream, without a second hello
    await transfer(r, 'b', 3)
    expect(streams).toHaveLength(2)
    expect(streams[0]?.summary()).toEqual(['hello', ...ids(1), ...ids(3)])
    expect(r.stats).toMatchObject({ opened: 2, reused: 1, retries: 0 })
    streams[0]?.answer(FrameKind.EndAck, encodeTransferEnd(3))
    streams[1]?.answer(FrameKind.EndAck, encodeTransferEnd(2))
    expect(r.busyWith('b')).toBe(false)
    expect(r.idleStreams).toBe(2)
    // another peer never gets b's streams
    await transfer(r, 'c', 4)
    expect(streams).toHaveLength(3)
  })

  it('reuses a stream for the same stripe number only', async () => {
    const { r, streams } = setup()
    await transfer(r, 'b', 1, 0)
    expect(streams[0]?.summary()).toEqual(['hello', 'c1.0', 'c1.2', 'end1'])
    streams[0]?.answer(FrameKind.EndAck, encodeTransferEnd(1))
    await transfer(r, 'b', 2, 1)
    expect(streams).toHaveLength(2)
    await transfer(r, 'b', 3, 0)
    expect(streams).toHaveLength(2)
    expect(streams[0]?.summary()).toEqual(['hello', 'c1.0', 'c1.2', 'end1', 'c3.0', 'c3.2', 'end3'])
    // an unstriped transfer has a pool of its own
    await transfer(r, 'b', 4)
    expect(streams).toHaveLength(3)
  })

  it('sends the whole transfer again when its stream fails before the acknowledgement', async () => {
    const { r, streams } = setup()
    await transfer(r, 'b', 1)
    streams[0]?.fail()
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(streams).toHaveLength(2)
    expect(streams[1]?.summary()).toEqual(['hello', ...ids(1)])
    expect(r.stats.retries).toBe(1)
    streams[1]?.answer(FrameKind.EndAck, encodeTransferEnd(1))
    expect(r.busyWith('b')).toBe(false)
  })

  it('drops a failed idle stream, closes streams idle for bulkIdleMs, and keeps a few per peer', async () => {
    const { r, streams, now } = setup()
    const n = MAX_IDLE_BULK_STREAMS + 2
    for (let t = 1; t <= n; t++) await transfer(r, 'b', t)
    expect(streams).toHaveLength(n)
    for (let t = 1; t <= n; t++) streams[t - 1]?.answer(FrameKind.EndAck, encodeTransferEnd(t))
    expect(r.idleStreams).toBe(MAX_IDLE_BULK_STREAMS)
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(streams.filter((s) => s.closedGracefully)).toHaveLength(2)
    // an idle stream reset by the remote is not reused
    const open = streams.filter((s) => !s.closedGracefully)
    open.forEach((s) => { s.fail() })
    expect(r.idleStreams).toBe(0)
    await transfer(r, 'b', 100)
    expect(streams).toHaveLength(n + 1)
    streams[n]?.answer(FrameKind.EndAck, encodeTransferEnd(100))
    now.ms += DEFAULT_NODE_NET.bulkIdleMs + 1
    r.sweep(now.ms)
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(r.idleStreams).toBe(0)
    expect(streams[n]?.closedGracefully).toBe(true)
  })

  it("stops holding an inbound stream back once its transfer's End was read", async () => {
    const { r, streams } = setup()
    // the inbound stream the chunks come from, as the receiving side sees it
    const inbound = new FakeStream()
    const paused: string[] = []
    inbound.pause = () => { inbound.readStatus = 'paused'; paused.push('pause') }
    inbound.resume = () => { inbound.readStatus = 'readable'; paused.push('resume') }
    const u = new FrameChannel(inbound as unknown as Stream, { maxFrameBytes: 1 << 20, maxQueuedBytes: 1 << 24 }, { frame: () => {}, drained: () => {}, closed: () => {} }, () => 0)
    // forwarded to a child whose stream takes nothing more: the queue passes the high-water mark
    const big = DEFAULT_NODE_NET.bulkHighWaterBytes / CHUNK + 4
    const open: StreamOpen = { id: 'o/9', origin: 'o', mode: 'bw', header: IntervalSet.range(0, 4), chunkCount: big, totalBytes: big * CHUNK, fallback: false, hops: 1 }
    expect(r.route('c', { t: 'chunk', stream: 9, index: 0, data: new Uint8Array(CHUNK), open }, u)).toBe(true)
    await new Promise((resolve) => setTimeout(resolve, 0))
    const child = streams[0] as FakeStream
    child.writableNeedsDrain = true
    for (let i = 1; i < big; i++) r.route('c', { t: 'chunk', stream: 9, index: i, data: new Uint8Array(CHUNK) }, u)
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(paused).toEqual(['pause'])
    // the End of the inbound transfer arrives (links.ts): the stream may carry the next one
    r.upstreamEnded(u)
    expect(paused).toEqual(['pause', 'resume'])
  })

  it('closes a stream whose acknowledgement names another transfer', async () => {
    const { r, streams } = setup()
    await transfer(r, 'b', 1)
    streams[0]?.answer(FrameKind.EndAck, encodeTransferEnd(2))
    await new Promise((resolve) => setTimeout(resolve, 0))
    // the transfer goes again on a new stream
    expect(streams[0]?.status).toBe('aborted')
    expect(streams[1]?.summary()).toEqual(['hello', ...ids(1)])
  })
})
