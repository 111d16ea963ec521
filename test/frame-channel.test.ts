/**
 * The frame channel's batching (node/frame-channel.ts): frames queued together share a
 * `send` while they fit in BATCH_BYTES (one Yamux frame in one Noise message), a larger
 * frame goes alone, and the frames come out of the other end whole and in order. A node's
 * chunk frame (NODE_CHUNK_BYTES of data) fits in one batch.
 */
import type { Stream } from '@libp2p/interface'
import { Uint8ArrayList } from 'uint8arraylist'
import { describe, expect, it } from 'vitest'
import { encodeChunkFrame } from '../node/chunk-frame.ts'
import { BATCH_BYTES, FrameChannel, FrameKind, type FrameBody } from '../node/frame-channel.ts'
import { NODE_CHUNK_BYTES } from '../node/treecast-service.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { FakeStream } from './fake-stream.ts'

interface Got { kind: number, body: Uint8Array }

function channelPair (): { a: FrameChannel, sa: FakeStream, got: Got[] } {
  const sa = new FakeStream()
  const sb = new FakeStream()
  const got: Got[] = []
  const init = { maxFrameBytes: 1 << 20, maxQueuedBytes: 1 << 24 }
  const a = new FrameChannel(sa as unknown as Stream, init, { frame: () => {}, drained: () => {}, closed: () => {} }, () => 0)
  void new FrameChannel(sb as unknown as Stream, init, { frame: (kind, body) => { got.push({ kind, body: body.subarray() }) }, drained: () => {}, closed: () => {} }, () => 0)
  // what a sends, b receives
  const send = sa.send.bind(sa)
  sa.send = (data) => { sb.feed(new Uint8ArrayList(data.subarray())); return send(data) }
  return { a, sa, got }
}

const filled = (n: number, v: number): Uint8Array => new Uint8Array(n).fill(v)
const flushed = async (): Promise<void> => { await Promise.resolve() }

describe('FrameChannel batching', () => {
  it('puts frames queued together in one send while they fit, and delivers them in order', async () => {
    const { a, sa, got } = channelPair()
    const bodies = [30_000, 30_000, 30_000, 100, 5].map((n, i) => filled(n, i + 1))
    for (const b of bodies) a.send(FrameKind.Core, b)
    await flushed()
    // 30,000 + 30,000 (+ 2 x 4 bytes of prefix) fit; the third would not
    expect(sa.sent.map((s) => s.byteLength)).toEqual([2 * (30_000 + 4), 30_000 + 4 + 100 + 2 + 5 + 2])
    for (const s of sa.sent) expect(s.byteLength).toBeLessThanOrEqual(BATCH_BYTES)
    expect(got.map((g) => g.body.byteLength)).toEqual(bodies.map((b) => b.byteLength))
    expect(got.every((g, i) => g.kind === FrameKind.Core && g.body.every((x) => x === i + 1))).toBe(true)
  })

  it('sends a frame larger than a batch alone', async () => {
    const { a, sa, got } = channelPair()
    a.send(FrameKind.Core, filled(10, 1))
    a.send(FrameKind.Core, filled(100_000, 2))
    a.send(FrameKind.Core, filled(10, 3))
    await flushed()
    expect(sa.sent.map((s) => s.byteLength)).toEqual([12, 100_000 + 4, 12])
    expect(got.map((g) => g.body.byteLength)).toEqual([10, 100_000, 10])
  })

  it("fits a node's chunk frame, open header included, in one batch", async () => {
    const { a, sa, got } = channelPair()
    const origin = '/ip4/203.0.113.200/tcp/65535/p2p/12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo'
    // a header of 100 intervals: a long routing header
    let header = IntervalSet.empty()
    for (let i = 0; i < 100; i++) header = header.union(IntervalSet.range(i * 1000, i * 1000 + 10))
    const data = filled(NODE_CHUNK_BYTES, 9)
    for (let index = 0; index < 3; index++) {
      const parts: FrameBody = encodeChunkFrame({
        t: 'chunk',
        stream: 4_000_000_000,
        index,
        data,
        ...(index === 0 ? { open: { id: `${origin}/123456.7`, origin, mode: 'bw', header, chunkCount: 17, totalBytes: 1 << 20, fallback: false, hops: 9 } } : {})
      })
      a.send(FrameKind.Chunk, parts)
    }
    await flushed()
    expect(sa.sent).toHaveLength(3)
    for (const s of sa.sent) expect(s.byteLength).toBeLessThanOrEqual(BATCH_BYTES)
    expect(got.map((g) => g.kind)).toEqual([FrameKind.Chunk, FrameKind.Chunk, FrameKind.Chunk])
  })
})
