/**
 * Which stream a chunk takes (node/bulk-router.ts): short payloads the control stream,
 * unless it is backed up; long ones a bulk stream.
 */
import { describe, expect, it } from 'vitest'
import type { Stream } from '@libp2p/interface'
import { BulkRouter, type BulkHost } from '../node/bulk-router.ts'
import { DEFAULT_NODE_NET } from '../node/config.ts'
import type { ChunkMessage, StreamOpen } from '../overlay/messages.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'

const KiB = 1024
const CHUNK = 64 * KiB

function router (controlQueued: () => number): { r: BulkRouter, opened: string[] } {
  const opened: string[] = []
  const host: BulkHost = {
    // Never opens: the chunks wait, which is all these tests look at.
    open: async (peer) => { opened.push(peer); return await new Promise<Stream>(() => {}) },
    hello: () => new Uint8Array(0),
    failed: () => {},
    sendControl: () => {},
    drained: () => {},
    controlQueuedBytes: () => controlQueued(),
    onSent: () => {},
    clock: () => 0
  }
  return { r: new BulkRouter(DEFAULT_NODE_NET, host), opened }
}

function first (stream: number, totalBytes: number): ChunkMessage {
  const open: StreamOpen = { id: `o/${stream}`, origin: 'o', mode: 'lat', header: IntervalSet.range(0, 4), chunkCount: Math.ceil(totalBytes / CHUNK), totalBytes, fallback: false, hops: 0 }
  return { t: 'chunk', stream, index: 0, data: new Uint8Array(CHUNK), open }
}

describe('BulkRouter.route', () => {
  it('leaves single chunks and payloads under bulkMinBytes to the control stream', () => {
    const { r, opened } = router(() => 0)
    expect(r.route('b', first(1, 1000), undefined)).toBe(false)
    expect(r.route('b', first(2, DEFAULT_NODE_NET.bulkMinBytes - 1), undefined)).toBe(false)
    // The later chunks of a control-stream transfer follow it there.
    expect(r.route('b', { t: 'chunk', stream: 2, index: 1, data: new Uint8Array(CHUNK) }, undefined)).toBe(false)
    expect(opened).toEqual([])
  })

  it('sends payloads from bulkMinBytes on a bulk stream, every chunk of it', () => {
    const { r, opened } = router(() => 0)
    expect(r.route('b', first(3, DEFAULT_NODE_NET.bulkMinBytes), undefined)).toBe(true)
    expect(r.route('b', { t: 'chunk', stream: 3, index: 1, data: new Uint8Array(CHUNK) }, undefined)).toBe(true)
    expect(opened).toEqual(['b'])
  })

  it('sends short payloads on a bulk stream while the control stream is backed up', () => {
    let queued = DEFAULT_NODE_NET.bulkHighWaterBytes
    const { r, opened } = router(() => queued)
    expect(r.route('b', first(4, 128 * KiB), undefined)).toBe(true)
    expect(opened).toEqual(['b'])
    // Decided at the first chunk: the transfer stays on its bulk stream when the queue drains.
    queued = 0
    expect(r.route('b', { t: 'chunk', stream: 4, index: 1, data: new Uint8Array(CHUNK) }, undefined)).toBe(true)
    expect(r.route('b', first(5, 128 * KiB), undefined)).toBe(false)
  })
})
