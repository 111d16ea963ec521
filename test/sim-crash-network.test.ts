/**
 * A crash in the simulated network: what the crashed peer had not finished putting on the
 * wire is lost with it; what had left its uplink still arrives. A later incarnation's
 * uplink is not held up by the dead one's backlog.
 */
import { describe, expect, it } from 'vitest'
import { EventQueue } from '../experiments/sim/event-queue.ts'
import { Network, resolveTopology, type TopologyInit } from '../experiments/sim/network.ts'
import { Simulation } from '../experiments/sim/simulation.ts'
import { TreecastCore } from '../overlay/core.ts'
import type { Scenario } from '../experiments/sim/scenario.ts'

const MB = 1_000_000
const PEER_RATE = 125_000_000
const COST = 0.005
const tx = (bytes: number): number => bytes * 1000 / PEER_RATE

function makeSim (init: TopologyInit) {
  const queue = new EventQueue<() => void>()
  let nowMs = 0
  const net = new Network(resolveTopology(init), (t, fn) => queue.push(t, fn))
  const arrivals = new Map<string, number>()
  return {
    net,
    arrivals,
    at (t: number, fn: () => void) { queue.push(t, fn) },
    send (t: number, from: number, to: number, size: number, id: string, lane = 0) {
      queue.push(t, () => net.send(nowMs, from, to, size, () => arrivals.set(id, nowMs), lane))
    },
    run () { for (let e = queue.pop(); e !== undefined; e = queue.pop()) { nowMs = e.timeMs; e.item() } }
  }
}

const TWO: TopologyInit = { clusters: [{ name: 'a', peers: 2 }, { name: 'b', peers: 2 }] }

describe('Network.crash', () => {
  for (const uplinkQueueing of ['fair', 'fifo'] as const) {
    for (const to of [1, 2]) {
      it(`drops what the crashed sender had not sent yet (${uplinkQueueing} uplink, ${to === 1 ? 'same cluster' : 'across the WAN'})`, () => {
        const sim = makeSim({ ...TWO, uplinkQueueing })
        // Ten 1 MB messages: 8 ms each on the uplink. The crash at 20 ms falls in the third.
        for (let i = 0; i < 10; i++) sim.send(0, 0, to, MB, `m${i}`, 1)
        sim.send(0, 0, to, 100, 'small-after', 1)
        sim.at(20, () => sim.net.crash(20, 0))
        sim.run()
        expect([...sim.arrivals.keys()]).toEqual(['m0', 'm1'])
      })
    }
  }

  it('frees the uplink for a later incarnation, which is not served the dead one\'s backlog', () => {
    for (const uplinkQueueing of ['fair', 'fifo'] as const) {
      const sim = makeSim({ ...TWO, uplinkQueueing })
      for (let i = 0; i < 10; i++) sim.send(0, 0, 1, MB, `old${i}`, 1)
      sim.at(20, () => sim.net.crash(20, 0))
      sim.send(30, 0, 1, MB, 'new', 1)
      sim.run()
      expect(sim.arrivals.get('new'), uplinkQueueing).toBeCloseTo(30 + 2 * tx(MB) + 0.15 + COST, 9)
      expect([...sim.arrivals.keys()].filter((k) => k.startsWith('old'))).toEqual(['old0', 'old1'])
    }
  })

  it('validates its peer', () => {
    const net = new Network(resolveTopology(TWO), () => {})
    expect(() => net.crash(0, 4)).toThrow(RangeError)
  })
})

describe('a crashed peer in a simulation', () => {
  it('its queued chunks are not delivered after the crash', () => {
    const scenario: Scenario = {
      name: 'crash-inflight',
      seed: 1,
      topology: { clusters: [{ name: 'a', peers: 2 }, { name: 'b', peers: 2 }] },
      until: 3000,
      drainMs: 2000,
      schedule: [
        { at: 1000, do: 'broadcast', root: 'p0000', bytes: 8 * 1024 * 1024 },
        // 8 MB take 67 ms on p0000's uplink: most of it is still queued at 1010.
        { at: 1010, do: 'crash', peers: ['p0000'] }
      ]
    }
    const late: number[] = []
    const handle = TreecastCore.prototype.handle
    const spy = function (this: TreecastCore, now: number, from: string, msg: Parameters<TreecastCore['handle']>[2]): void {
      if (from === 'p0000' && now > 1010) late.push(now)
      handle.call(this, now, from, msg)
    }
    TreecastCore.prototype.handle = spy
    try {
      new Simulation(scenario).run()
    } finally {
      TreecastCore.prototype.handle = handle
    }
    // Only what had left the uplink by 1010 (at most one chunk's serialization before it) arrives.
    expect(late.length).toBeLessThanOrEqual(3)
    expect(Math.max(...late)).toBeLessThan(1012)
  })
})
