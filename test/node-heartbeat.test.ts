/**
 * Heartbeats on real peers: one beacon per connected peer and interval, whatever the number
 * of control streams to it, and none on a stream that carried a message within the last
 * half interval. Silence is still noticed (test/hung-peer.test.ts). Counts, no timings.
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

  it('sends one beacon per peer and interval when idle, and fewer to peers it is sending to', async () => {
    const cluster = await startCluster(3, {
      vnodes: VNODES,
      init: () => ({ heartbeatIntervalMs: INTERVAL_MS, failureDetectionTimeoutMs: 5 * INTERVAL_MS, core: { steadyProbeIntervalMs: 0 } })
    })
    nodes = cluster.nodes
    await waitStable(nodes, VNODES)
    const [a] = nodes as [TreecastNode]
    const peersOf = (n: TreecastNode): number => n.overlay.connectedPeers().length

    // Idle: every peer sends to each of its peers one beacon per interval, so over W ms at
    // most W / interval + 1 each (timer ticks), and at least half that (ticks may bunch up
    // on a loaded machine, but the silence stays far below the detection timeout).
    const windowMs = 10 * INTERVAL_MS
    const before = nodes.map((n) => links(n).heartbeatsSent)
    await sleep(windowMs)
    const idle = nodes.map((n, i) => links(n).heartbeatsSent - (before[i] as number))
    for (const [i, n] of nodes.entries()) {
      const peers = peersOf(n)
      expect(peers, 'a full mesh of 3').toBe(2)
      expect(idle[i], `node ${i} sent ${idle[i]} beacons to ${peers} peers in ${windowMs} ms`).toBeLessThanOrEqual(peers * (windowMs / INTERVAL_MS + 1))
      expect(idle[i]).toBeGreaterThanOrEqual(peers * (windowMs / INTERVAL_MS) / 2)
    }

    // Busy: a broadcasts a short message every quarter interval; its latency-tree children
    // hear from it on the control stream all the time, so it sends them no beacon.
    const a0 = links(a).heartbeatsSent
    const t0 = performance.now()
    const done: Array<Promise<unknown>> = []
    while (performance.now() - t0 < windowMs) {
      done.push((await a.broadcast(new Uint8Array(100), { mode: 'lat' })).done)
      await sleep(INTERVAL_MS / 4)
    }
    await Promise.all(done)
    const busy = links(a).heartbeatsSent - a0
    const children = a.tree('lat')?.children.length ?? 0
    expect(children, 'a has a child in its latency tree').toBeGreaterThan(0)
    // Only peers a is not sending to still get beacons.
    expect(busy, `a sent ${busy} beacons while broadcasting to ${children} children (idle: ${idle[0]})`)
      .toBeLessThanOrEqual((peersOf(a) - children) * (windowMs / INTERVAL_MS + 1) + 2)
    for (const n of nodes) expect(links(n).heartbeatsMissed).toBe(0)
  }, 120_000)
})
