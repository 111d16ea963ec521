/**
 * Flow control and connection bounds on real peers: a slow child slows its parent's
 * sends (the forwarder's queue stays near its high-water mark whatever the payload size),
 * a reduction's partials longer than the control stream's queue limit go up without
 * overflowing it, and a peer keeps at most `maxPeers` control streams. No wall-clock assertion.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { createTreecast, type TreecastNode } from '../node/create-treecast.ts'
import { DEFAULT_NODE_NET } from '../node/config.ts'
import { WanEmulator } from '../node/wan/wan-emulator.ts'
import { DeliveryRecorder, patterned, sleep, startCluster, stopAll, waitFor, waitStable, withTimeout } from './node-helpers.ts'

const MB = 1024 * 1024

describe('flow control and bounds', () => {
  let nodes: TreecastNode[] = []
  afterEach(async () => { await stopAll(nodes); nodes = [] }, 30_000)

  it('a slow child slows its parent: the forwarder queues at most about its high-water mark', async () => {
    // a -> b fast, b -> c at 2 MB/s, a <-> c at 100 KB/s: the bandwidth tree of a is a, b,
    // c. (Slower still and a's probe replies, queued ahead of tree messages on the a-c
    // link, hold up the tree changes themselves.)
    const wan = new WanEmulator({
      clusters: ['a', 'b', 'c'],
      wanRateBytesPerSec: { a: { b: Infinity, c: 100_000 }, b: { c: 2_000_000 } }
    })
    const keys = await Promise.all([0, 1, 2].map(async () => await generateKeyPair('Ed25519')))
    for (const [i, key] of keys.entries()) {
      wan.assign(peerIdFromPrivateKey(key).toString(), ['a', 'b', 'c'][i] as string)
      // Steady probing lets c find b even if the cold start's measurements were off.
      const n = await createTreecast({ privateKey: key, transport: wan.transport(), core: { steadyProbeIntervalMs: 1000 } })
      await n.start()
      nodes.push(n)
    }
    const [a, b, c] = nodes as [TreecastNode, TreecastNode, TreecastNode]
    const ids = nodes.map((n) => n.id)
    for (const n of nodes) n.bootstrap(24, ids)
    // Both ends of each edge must agree (children and reach reported up), or a routes c's
    // part around b.
    await waitFor(() => c.tree('bw', a.id)?.parent === b.id && b.tree('bw', a.id)?.parent === a.id &&
      (b.tree('bw', a.id)?.children ?? []).includes(c.id) && (a.tree('bw')?.children ?? []).join() === b.id && !nodes.some((n) => n.overlay.probing), {
      timeoutMs: 120_000, what: 'the bandwidth tree of a to become a -> b -> c', describe: () => `c's parent ${String(c.tree('bw', a.id)?.parent)}, b's ${String(b.tree('bw', a.id)?.parent)}`
    })
    await sleep(1000)
    const rec = new DeliveryRecorder(24)
    for (const n of nodes) rec.attach(n)
    const h = await a.broadcast(patterned(12 * MB, 3), { mode: 'bw' })
    await withTimeout(h.done, 90_000, '12 MB broadcast through a 2 MB/s link')
    const count = rec.count(h.id)
    expect(count.missing.isEmpty && count.duplicated.isEmpty, rec.describe(h.id)).toBe(true)
    const bulk = (b.overlay.counters() as { bulk: { pauses: number, peakQueuedBytes: number } }).bulk
    // b paused the stream from a while its queue to c was full, and never held much more
    // than the high-water mark (plus the chunks of one read) of the 12 MB.
    const diag = JSON.stringify(nodes.map((n) => ({ bulk: (n.overlay.counters() as { bulk: unknown }).bulk, sent: (n.overlay.counters() as { sent: unknown }).sent, cParent: c.tree('bw', a.id)?.parent === b.id })))
    expect(bulk.pauses, diag).toBeGreaterThan(0)
    expect(bulk.peakQueuedBytes).toBeLessThan(DEFAULT_NODE_NET.bulkHighWaterBytes + 2 * MB)
    console.log(`[node-flow] b paused its inbound stream ${bulk.pauses} times; peak queue ${(bulk.peakQueuedBytes / MB).toFixed(2)} MB for a 12 MB payload`)
  }, 300_000)

  it('sends partials longer than the control queue limit up without overflowing it, so nothing is pulled', async () => {
    // 2^20 elements: 8 MiB of partials from every peer to its parent, four times the queue
    // limit. They were all queued on the control stream at once, past the limit the stream
    // was reset as stuck, and the root pulled what was lost after 4 s (10^7 elements with
    // the default 32 MiB limit: 2.5 minutes, and two daemons evicted).
    const vnodes = 24
    const length = 1 << 20
    const contribute = (_id: string, start: { length: number }, v: { size: number }): Float64Array => new Float64Array(start.length).fill(v.size)
    const cl = await startCluster(3, { vnodes, init: () => ({ maxQueuedBytes: 2 * MB, contribute }) })
    nodes = cl.nodes
    await waitStable(nodes, vnodes)
    const r = await withTimeout((nodes[0] as TreecastNode).reduce('sum', length), 60_000, `a reduction of ${length} elements`)
    expect(r.value.length).toBe(length)
    expect(r.value.every((x) => x === vnodes)).toBe(true)
    const counters = nodes.map((n) => n.overlay.counters() as { links: { queueOverflows: number }, sent: Record<string, number> })
    expect(counters.map((c) => c.links.queueOverflows)).toEqual([0, 0, 0])
    expect(counters.map((c) => c.sent.pull ?? 0)).toEqual([0, 0, 0])
  }, 120_000)

  it('keeps at most maxPeers control streams, tree neighbours first', async () => {
    const maxPeers = 3
    for (let i = 0; i < 8; i++) {
      // No steady probing: a probe touches a random peer, which then stays for pruneIdleMs.
      const n = await createTreecast({ maxPeers, pruneIdleMs: 2000, core: { steadyProbeIntervalMs: 0 } })
      await n.start()
      nodes.push(n)
    }
    const ids = nodes.map((n) => n.id)
    for (const n of nodes) n.bootstrap(32, ids)
    await waitFor(() => nodes.every((n) => !n.overlay.probing), { timeoutMs: 60_000, what: 'stable trees' })
    // Pruning runs with the heartbeats, on peers quiet for pruneIdleMs: wait for it.
    const pruned = (): number => nodes.reduce((sum, n) => sum + (n.overlay.counters() as { links: { pruned: number } }).links.pruned, 0)
    await waitFor(() => pruned() > 0, { timeoutMs: 60_000, what: 'some peer to be pruned' })
    await sleep(3000)
    for (const n of nodes) {
      const neighbours = new Set<string>()
      for (const t of n.trees()) {
        if (t.parent !== null) neighbours.add(t.parent)
        for (const c of t.children) neighbours.add(c)
      }
      const connected = n.overlay.connectedPeers()
      // Past maxPeers only tree neighbours (and a peer being probed right now) stay.
      const others = connected.filter((p) => !neighbours.has(p))
      expect(others.length, `${connected.length} connected, ${neighbours.size} neighbours`).toBeLessThanOrEqual(maxPeers)
    }
  }, 180_000)
})
