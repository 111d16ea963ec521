/**
 * Payloads below `bulkMinBytes` stay on the control stream. Bulk streams open without
 * waiting for the protocol answer (`negotiateFully: false`): the
 * first chunk travels with the protocol name. A peer that does not speak the bulk protocol
 * then refuses the stream only after data was written; the sender must notice, retry and
 * finally send the transfer on the control stream, so nothing is lost or doubled.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { TreecastNode } from '../node/create-treecast.ts'
import { BULK_PROTOCOL } from '../node/links.ts'
import { DeliveryRecorder, patterned, startCluster, stopAll, waitStable, withTimeout } from './node-helpers.ts'

const V = 32

type BulkStats = { opened: number, retries: number }
const bulkOf = (n: TreecastNode): BulkStats => ({ ...(n.overlay.counters() as { bulk: BulkStats }).bulk })

describe('bulk streams opened optimistically', () => {
  let nodes: TreecastNode[] = []
  afterAll(async () => { await stopAll(nodes) }, 30_000)

  it('deliver long payloads exactly once, also to a peer that refuses the bulk protocol', async () => {
    const cluster = await startCluster(4, { vnodes: V })
    nodes = cluster.nodes
    await waitStable(nodes, V)
    const rec = new DeliveryRecorder(V)
    for (const n of nodes) rec.attach(n)
    const root = nodes[0] as TreecastNode

    // Below bulkMinBytes (256 KiB) a payload of several chunks stays on the control streams.
    const start = nodes.map(bulkOf)
    const short = await root.broadcast(patterned(200 * 1024, 3))
    await withTimeout(short.done, 60_000, 'broadcast below bulkMinBytes')
    const c0 = rec.count(short.id)
    expect(c0.missing.isEmpty && c0.duplicated.isEmpty, rec.describe(short.id)).toBe(true)
    for (const d of rec.deliveries(short.id)) expect(d.bytes).toBe(200 * 1024)
    expect(nodes.reduce((n, x, i) => n + bulkOf(x).opened - (start[i] as BulkStats).opened, 0)).toBe(0)

    // Every peer speaks the protocol: streams open, no retry.
    const before = nodes.map(bulkOf)
    const first = await root.broadcast(patterned(600 * 1024, 1))
    await withTimeout(first.done, 60_000, 'broadcast with bulk streams')
    const c1 = rec.count(first.id)
    expect(c1.missing.isEmpty && c1.duplicated.isEmpty, rec.describe(first.id)).toBe(true)
    const opened = nodes.reduce((n, x, i) => n + bulkOf(x).opened - (before[i] as BulkStats).opened, 0)
    const retried = nodes.reduce((n, x, i) => n + bulkOf(x).retries - (before[i] as BulkStats).retries, 0)
    expect(opened).toBeGreaterThanOrEqual(nodes.length - 1)
    expect(retried).toBe(0)

    // One peer stops speaking it: its parent's optimistic streams are refused after the
    // first chunk went out, and the transfer still arrives, once.
    const deaf = nodes[nodes.length - 1] as TreecastNode
    await deaf.libp2p.unhandle(BULK_PROTOCOL)
    const mid = nodes.map(bulkOf)
    const second = await root.broadcast(patterned(600 * 1024, 2))
    await withTimeout(second.done, 60_000, 'broadcast to a peer without the bulk protocol')
    const c2 = rec.count(second.id)
    expect(c2.missing.isEmpty && c2.duplicated.isEmpty, rec.describe(second.id)).toBe(true)
    for (const d of rec.deliveries(second.id)) expect(d.bytes).toBe(600 * 1024)
    const retriedNow = nodes.reduce((n, x, i) => n + bulkOf(x).retries - (mid[i] as BulkStats).retries, 0)
    expect(retriedNow).toBeGreaterThan(0)
  }, 120_000)
})
