/**
 * Payloads below `bulkMinBytes` stay on the control stream; longer ones take bulk streams.
 * The next transfer to a peer takes an idle stream rather than a new one. A peer that
 * does not speak the bulk protocol refuses them: the sender must notice, retry and finally
 * send the transfer on the control stream, so nothing is lost or doubled.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { TreecastNode } from '../node/create-treecast.ts'
import { BULK_PROTOCOL } from '../node/links.ts'
import { DeliveryRecorder, patterned, sleep, startCluster, stopAll, waitStable, withTimeout } from './node-helpers.ts'

const V = 32

type BulkStats = { opened: number, reused: number, retries: number }
/** Idle bulk streams close after this long (swept with the heartbeats, every second). */
const BULK_IDLE_MS = 300
const bulkOf = (n: TreecastNode): BulkStats => ({ ...(n.overlay.counters() as { bulk: BulkStats }).bulk })

describe('bulk streams', () => {
  let nodes: TreecastNode[] = []
  afterAll(async () => { await stopAll(nodes) }, 30_000)

  it('deliver long payloads exactly once, also to a peer that refuses the bulk protocol', async () => {
    const cluster = await startCluster(4, { vnodes: V, init: () => ({ bulkIdleMs: BULK_IDLE_MS }) })
    nodes = cluster.nodes
    await waitStable(nodes, V)
    const rec = new DeliveryRecorder(V)
    for (const n of nodes) rec.attach(n)
    const root = nodes[0] as TreecastNode
    /** Broadcasts `size` bytes from `root`, checks exactly-once delivery, returns the bulk streams opened and retried meanwhile. */
    const broadcastOnce = async (size: number, seed: number, what: string): Promise<BulkStats> => {
      const before = nodes.map(bulkOf)
      const h = await root.broadcast(patterned(size, seed))
      await withTimeout(h.done, 60_000, what)
      const c = rec.count(h.id)
      expect(c.missing.isEmpty && c.duplicated.isEmpty, rec.describe(h.id)).toBe(true)
      for (const d of rec.deliveries(h.id)) expect(d.bytes).toBe(size)
      const delta = (k: keyof BulkStats): number => nodes.reduce((n, x, i) => n + bulkOf(x)[k] - (before[i] as BulkStats)[k], 0)
      return { opened: delta('opened'), reused: delta('reused'), retries: delta('retries') }
    }

    // Below bulkMinBytes (256 KiB) a payload of several chunks stays on the control streams.
    expect((await broadcastOnce(200 * 1024, 3, 'broadcast below bulkMinBytes')).opened).toBe(0)

    // Every peer speaks the protocol: streams open, no retry.
    const first = await broadcastOnce(600 * 1024, 1, 'broadcast with bulk streams')
    expect(first.opened).toBeGreaterThanOrEqual(nodes.length - 1)
    expect(first.retries).toBe(0)
    // Right after it (once the receivers acknowledged the ends), the same transfers to the
    // same peers take the streams again.
    await sleep(200)
    const again = await broadcastOnce(600 * 1024, 5, 'broadcast on reused bulk streams')
    expect(again.reused).toBeGreaterThan(0)
    expect(again.opened).toBeLessThan(first.opened)
    expect(again.retries).toBe(0)

    // One peer stops speaking it: its parent's streams to it are refused, and the transfer
    // still arrives, once.
    const deaf = nodes[nodes.length - 1] as TreecastNode
    await deaf.libp2p.unhandle(BULK_PROTOCOL)
    // (the streams it accepted before stay open until they have been idle for bulkIdleMs)
    await sleep(BULK_IDLE_MS + 2500)
    // Closed at both ends: libp2p keeps a stream until both have closed their writing side,
    // and a half-open one would count against the per-connection limit for good.
    const bulkStreams = nodes.flatMap((n) => n.libp2p.getConnections().flatMap((c) => c.streams.filter((st) => st.protocol === BULK_PROTOCOL)))
    expect(bulkStreams.map((st) => `${st.direction} ${st.status} ${st.writeStatus}/${st.remoteWriteStatus}`)).toEqual([])
    expect((await broadcastOnce(600 * 1024, 2, 'broadcast to a peer without the bulk protocol')).retries).toBeGreaterThan(0)
    // Just above bulkMinBytes too.
    expect((await broadcastOnce(260 * 1024, 4, 'short bulk transfer to a peer without the bulk protocol')).retries).toBeGreaterThan(0)
  }, 120_000)
})
