/**
 * The stream engine (overlay/streams.ts) driven by hand (test/stream-host.ts): striped
 * custody corners found by the review of 2026-11-28.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parseScenario } from '../experiments/sim/scenario.ts'
import { Simulation } from '../experiments/sim/simulation.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { MAX_IDLE_SENDERS, MAX_INCOMING_PER_TRANSFER } from '../overlay/streams.ts'
import { HostRig } from './stream-host.ts'
import { swarmProblems } from './swarm.ts'

const R = (lo: number, hi: number): IntervalSet => IntervalSet.range(lo, hi)

describe('resend (a starving peer asks the origin for every chunk)', () => {
  it('a peer that asks again after its earlier resend was acknowledged gets every chunk again', () => {
    // O broadcasts over two stripes to E1 and E2, which have not acknowledged: the transfer is under way.
    const o = new HostRig('O', 12, { O: R(0, 4), E1: R(4, 8), E2: R(8, 12) })
    const chunks = [0, 1, 2, 3].map((i) => Uint8Array.of(i))
    o.streams.originate(0, { id: 'O/0.1', origin: 'O', mode: 'bw', chunkCount: 4, totalBytes: 4 }, R(0, 12), chunks, {
      local: R(0, 4),
      stripes: [{ to: 'E1', header: R(4, 12), relay: [{ to: 'E2', header: R(8, 12) }] }, { to: 'E2', header: R(4, 12), relay: [{ to: 'E1', header: R(4, 8) }] }]
    })
    // A (which took over virtual nodes after a crash) starves and asks: every chunk, an empty header.
    o.streams.onResend('A', 'O/0.1')
    const first = o.lastOpenTo('A')
    expect(first?.open.header.isEmpty).toBe(true)
    expect(o.chunksTo('A').length).toBe(4)
    // It delivered and acknowledged, and forgot the transfer. A second crash gives it more
    // virtual nodes, reached again by one stripe only: it starves again and asks again.
    o.streams.onAck('A', first?.stream as number)
    o.streams.onResend('A', 'O/0.1')
    expect(o.chunksTo('A').length, 'the second resend is answered').toBe(8)
    // While an answer is still under way, asking again adds nothing.
    o.streams.onResend('A', 'O/0.1')
    expect(o.chunksTo('A').length).toBe(8)
    expect(o.rejected).toEqual([])
    // Bounded: a member asking and acknowledging in a loop gets MAX_INCOMING_PER_TRANSFER answers at most.
    for (let k = 0; k < MAX_INCOMING_PER_TRANSFER + 5; k++) {
      const last = o.lastOpenTo('A')
      o.streams.onAck('A', last?.stream as number)
      o.streams.onResend('A', 'O/0.1')
    }
    expect(o.chunksTo('A').filter((c) => c.open !== undefined).length).toBe(MAX_INCOMING_PER_TRANSFER)
    expect(o.rejected.filter((r) => r === 'too-many-resends').length).toBeGreaterThan(0)
  })
})

describe('resend to an origin that is leaving', () => {
  it('swarm-striped-40-origin-leaves: a starving peer asks an origin that is leaving but still connected, which still holds the transfer', () => {
    // swarm-striped-40 (test/sim-scenarios): after two crashes one peer waits for a stripe
    // whose custody ended at a crashed peer, and asks p0000, the origin, 2 s later. Here
    // p0000 starts to leave before that: it drains its transfers (its connections stay open
    // until it has), but the starving peer asked only an origin still alive, so nobody
    // asked, the broadcast was never acknowledged at its root, and p0000 left only at its
    // leave timeout, 10 s later.
    const text = readFileSync(new URL('../experiments/scenarios/swarm-striped-40-origin-leaves.json', import.meta.url), 'utf8')
    const r = new Simulation(parseScenario(JSON.parse(text))).run()
    expect(r.totals.leavesTimedOut, 'no leave waits for its timeout').toBe(0)
    for (const b of r.broadcasts) expect(b.doneAtRootMs, `${b.id} acknowledged at its root`).not.toBeNull()
    expect(swarmProblems(r)).toEqual([])
  })
})

describe('a leaver draining its broadcast hears of peers that rejoin meanwhile', () => {
  it('swarm-striped-root-leaves-510: the rejoined owner\'s resend reaches the leaving origin', () => {
    // Striped family seed 510 with its first broadcast's root, p0002, leaving 690 ms after
    // it started (test/explore-swarm's root-leaves transform). p0009, the head of stripe 1,
    // crashed first; its virtual node went to p0010 with that stripe only, then back to
    // p0009's new incarnation (a rejoin asking for it) with the chunks p0010 had. p0009
    // starved and asked p0002 for every chunk, but p0002, leaving, was told of p0009's
    // death and never of its rejoin (facts fan out to alive members), so it took the
    // question for the dead incarnation's and dropped it: the broadcast was never
    // acknowledged at its root and p0002 left at its leave timeout.
    const text = readFileSync(new URL('../experiments/scenarios/swarm-striped-root-leaves-510.json', import.meta.url), 'utf8')
    const r = new Simulation(parseScenario(JSON.parse(text))).run()
    expect(r.rejected['from-dead-member'] ?? 0, 'nothing from the rejoined peer taken for its dead incarnation').toBe(0)
    expect(r.totals.leavesTimedOut, 'no leave waits for its timeout').toBe(0)
    for (const b of r.broadcasts) expect(b.doneAtRootMs, `${b.id} acknowledged at its root`).not.toBeNull()
    expect(swarmProblems(r)).toEqual([])
  })
})

describe('stream maps per sender', () => {
  it('keeps at most MAX_IDLE_SENDERS empty maps of senders whose streams ended, and a sender that comes back is served as before', () => {
    const senders = MAX_IDLE_SENDERS + 10
    const owners: Record<string, IntervalSet> = { R: R(0, 1) }
    for (let i = 0; i < senders; i++) owners[`S${i}`] = R(i + 1, i + 2)
    const r = new HostRig('R', senders + 1, owners)
    const maps = (): number => (r.streams['incomingBy'] as Map<string, Map<number, unknown>>).size
    const open = (from: number, stream: number): void => {
      r.streams.onChunk(0, `S${from}`, { t: 'chunk', stream, index: 0, data: Uint8Array.of(1), open: { id: `S${from}/0.${stream}`, origin: `S${from}`, mode: 'lat', header: R(0, 1), chunkCount: 1, totalBytes: 1, fallback: false, hops: 1 } })
    }
    for (let i = 0; i < senders; i++) open(i, 1)
    // Each one-chunk stream to R alone is delivered and acknowledged at once, and its transfer dropped.
    expect(r.delivered.length).toBe(senders)
    expect(r.sent.filter((s) => s.msg.t === 'ack').length).toBe(senders)
    expect(r.streams.activeCount).toBe(0)
    expect(maps()).toBe(MAX_IDLE_SENDERS)
    open(0, 2)
    open(senders - 1, 2)
    expect(r.delivered.length).toBe(senders + 2)
    expect(maps()).toBeLessThanOrEqual(MAX_IDLE_SENDERS)
    expect(r.rejected).toEqual([])
  })
})
