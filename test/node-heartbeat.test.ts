/**
 * Heartbeats on real peers: a beacon per control stream and interval, idle or busy, and no
 * live peer declared silent. Silence is noticed (test/hung-peer.test.ts). Counts, no timings.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { TreecastNode } from '../node/create-treecast.ts'
import { sleep, startCluster, stopAll, waitStable } from './node-helpers.ts'

const INTERVAL_MS = 200
const VNODES = 24

interface LinkStats { heartbeatsSent: number, heartbeatsMissed: number }
const links = (n: TreecastNode): LinkStats => (n.overlay.counters() as { links: LinkStats }).links

describe('heartbeats', () => {
  let nodes: TreecastNode[] = []
  afterEach(async () => { await stopAll(nodes); nodes = [] }, 30_000)

  it('go to every connected peer each interval, idle or busy, and miss none', async () => {
    const cluster = await startCluster(3, {
      vnodes: VNODES,
      init: () => ({ heartbeatIntervalMs: INTERVAL_MS, failureDetectionTimeoutMs: 5 * INTERVAL_MS, core: { steadyProbeIntervalMs: 0 } })
    })
    nodes = cluster.nodes
    await waitStable(nodes, VNODES)
    const [a] = nodes as [TreecastNode]
    const windowMs = 10 * INTERVAL_MS
    const ticks = windowMs / INTERVAL_MS
    // Per peer: one beacon per control stream (two after a simultaneous dial) and tick, and
    // at least half the ticks (they may bunch up on a loaded machine).
    const check = (sent: number[], what: string): void => {
      for (const [i, n] of nodes.entries()) {
        const peers = n.overlay.connectedPeers().length
        expect(peers, 'a full mesh of 3').toBe(2)
        expect(sent[i], `${what}: node ${i} sent ${sent[i]} beacons to ${peers} peers in ${windowMs} ms`).toBeLessThanOrEqual(2 * peers * (ticks + 1))
        expect(sent[i]).toBeGreaterThanOrEqual(peers * ticks / 2)
      }
    }
    let before = nodes.map((n) => links(n).heartbeatsSent)
    await sleep(windowMs)
    check(nodes.map((n, i) => links(n).heartbeatsSent - (before[i] as number)), 'idle')

    // Busy: a broadcasts a short message every quarter interval; beacons go on.
    before = nodes.map((n) => links(n).heartbeatsSent)
    const t0 = performance.now()
    const done: Array<Promise<unknown>> = []
    while (performance.now() - t0 < windowMs) {
      done.push((await a.broadcast(new Uint8Array(100), { mode: 'lat' })).done)
      await sleep(INTERVAL_MS / 4)
    }
    await Promise.all(done)
    check(nodes.map((n, i) => links(n).heartbeatsSent - (before[i] as number)), 'busy')
    for (const n of nodes) expect(links(n).heartbeatsMissed).toBe(0)
  }, 120_000)
})
