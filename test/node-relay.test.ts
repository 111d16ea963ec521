/**
 * broadcast(payload, { root }): rooted at the owner of a virtual node, wherever it is called.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { TreecastNode } from '../node/create-treecast.ts'
import { InvalidArgumentError } from '../node/errors.ts'
import { MAX_RELAYS, RELAY_PROTOCOL } from '../node/relay.ts'
import { DeliveryRecorder, ownerOf, patterned, startCluster, stopAll, waitStable, withTimeout } from './node-helpers.ts'

const V = 64

describe('broadcast with another root', () => {
  let nodes: TreecastNode[] = []
  afterAll(async () => { await stopAll(nodes) }, 30_000)

  it('is rooted at the owner of the given virtual node, exactly once per virtual node', async () => {
    const cluster = await startCluster(4, { vnodes: V })
    nodes = cluster.nodes
    await waitStable(nodes, V)
    const rec = new DeliveryRecorder(V)
    for (const n of nodes) rec.attach(n)
    const asker = nodes[0] as TreecastNode
    const target = [...Array(V).keys()].find((v) => !asker.owned().has(v)) as number
    const root = ownerOf(nodes, target) as TreecastNode
    for (const size of [100, 600 * 1024]) {
      const payload = patterned(size, size)
      const h = await asker.broadcast(payload, { root: target })
      await withTimeout(h.done, 60_000, `relayed broadcast of ${size} B`)
      const c = rec.count(h.id)
      expect(c.missing.isEmpty && c.duplicated.isEmpty, rec.describe(h.id)).toBe(true)
      for (const d of rec.deliveries(h.id)) {
        expect(d.origin).toBe(root.id)
        expect(d.bytes).toBe(size)
      }
    }
    // A virtual node owned here roots the broadcast here.
    const own = asker.owned().min as number
    const h = await asker.broadcast(patterned(10, 1), { root: own })
    await withTimeout(h.done, 30_000, 'local broadcast')
    expect(rec.deliveries(h.id)[0]?.origin).toBe(asker.id)
    await expect(asker.broadcast(new Uint8Array(1), { root: V })).rejects.toThrow(InvalidArgumentError)
    await expect(asker.broadcast(new Uint8Array(1), { root: 1.5 })).rejects.toThrow(InvalidArgumentError)
    expect(() => asker.startBroadcast(new Uint8Array(1), { root: 0 })).toThrow(InvalidArgumentError)
  }, 120_000)

  it('more relayed broadcasts than MAX_RELAYS one after another all complete, and their streams close', async () => {
    // A frame queued just before close() kept the stream open (node/frame-channel.ts), and
    // the asker never closed its side: the root counted each as active, and the 17th failed.
    const asker = nodes[1] as TreecastNode
    const target = [...Array(V).keys()].find((v) => !asker.owned().has(v)) as number
    for (let i = 0; i < MAX_RELAYS + 4; i++) {
      const h = await withTimeout(asker.broadcast(patterned(100, i), { root: target }), 10_000, `relay ${i}`)
      await withTimeout(h.done, 10_000, `relay ${i} done`)
    }
    const open = (): number => nodes.flatMap((n) => n.libp2p.getConnections().flatMap((c) => c.streams)).filter((s) => s.protocol === RELAY_PROTOCOL && s.status === 'open').length
    const deadline = Date.now() + 5000
    while (open() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(open()).toBe(0)
  }, 120_000)
})
