/**
 * The receiving side of a bulk stream's `End` (node/links.ts): it answers `EndAck` with the
 * transfer's id, and a second `End` with no chunk since the first (a peer flooding answers
 * it does not read) is a counted rejection that resets the stream. A raw stream plays the
 * sender.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { multiaddr } from '@multiformats/multiaddr'
import type { TreecastNode } from '../node/create-treecast.ts'
import { decodeTransferEnd, encodeTransferEnd } from '../node/bulk-router.ts'
import { FrameChannel, FrameKind } from '../node/frame-channel.ts'
import { encodeHello } from '../node/hello.ts'
import { BULK_PROTOCOL } from '../node/links.ts'
import { startNode, stopAll, waitFor } from './node-helpers.ts'

describe('bulk stream End frames', () => {
  const nodes: TreecastNode[] = []
  afterAll(async () => { await stopAll(nodes) }, 30_000)

  it('are answered once per transfer; a repeated End resets the stream', async () => {
    const a = await startNode()
    const b = await startNode()
    nodes.push(a, b)
    const stream = await a.libp2p.dialProtocol(multiaddr(b.id), BULK_PROTOCOL)
    const acks: Array<number | undefined> = []
    let closed = false
    const ch = new FrameChannel(stream, { maxFrameBytes: 1 << 20, maxQueuedBytes: 1 << 20 }, {
      frame: (kind, body) => { if (kind === FrameKind.EndAck) acks.push(decodeTransferEnd(body)) },
      drained: () => {},
      closed: () => { closed = true }
    }, () => 0)
    ch.send(FrameKind.Hello, encodeHello({ id: a.id, incarnation: 1 }))
    ch.send(FrameKind.End, encodeTransferEnd(41))
    await waitFor(() => acks.length > 0, { timeoutMs: 10_000, what: 'the EndAck' })
    expect(acks).toEqual([41])
    const rejected = (): number => ((b.overlay.counters() as { rejected: Record<string, number> }).rejected['bad-end'] ?? 0)
    expect(rejected()).toBe(0)
    ch.send(FrameKind.End, encodeTransferEnd(42))
    await waitFor(() => closed, { timeoutMs: 10_000, what: 'the stream to be reset' })
    expect(rejected()).toBe(1)
    expect(acks).toEqual([41])
  }, 60_000)
})
