/**
 * broadcast(payload, { root }): rooted at the owner of a virtual node, wherever it is called.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { TreecastNode } from '../node/create-treecast.ts'
import { InvalidArgumentError } from '../node/errors.ts'
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
})
