import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { EventQueue } from '../experiments/sim/event-queue.ts'
import { Network, resolveTopology, type NetworkBorder, type TopologyInit } from '../experiments/sim/network.ts'

/**
 * The cut of a partitioned run (experiments/sim/parallel/): two networks, each owning one
 * cluster, exchanging at barriers what their borders exported, deliver every message at the
 * same virtual time as one network does. Lanes between the partitions keep their order at
 * the receiver's side (experiments/sim/lane-orders.ts). (Two messages reaching one downlink
 * at the very same instant may swap, the imported one being queued later: random times in
 * quarter milliseconds make such ties all but impossible here.)
 */

interface Send { atMs: number, from: number, to: number, sizeBytes: number, lane: number, id: number }
type Arrive = () => void

const TOPOLOGY: TopologyInit = { clusters: [{ name: 'a', peers: 3 }, { name: 'b', peers: 3 }], intraRttMs: 0.3, interRttMs: 6 }

/** Delivery times by message id through one network. */
function whole (sends: readonly Send[]): Map<number, number> {
  const queue = new EventQueue<Arrive>()
  let now = 0
  const net = new Network<Arrive>(resolveTopology(TOPOLOGY), (t, ev) => { queue.push(t, ev) })
  const got = new Map<number, number>()
  for (const s of sends) queue.push(s.atMs, () => { net.send(now, s.from, s.to, s.sizeBytes, () => { got.set(s.id, now) }, s.lane) })
  for (let e = queue.pop(); e !== undefined; e = queue.pop()) { now = e.timeMs; e.item() }
  return got
}

/** The same through two partitions (cluster a: peers 0-2, b: 3-5), in windows of the lookahead. */
function split (sends: readonly Send[]): Map<number, number> {
  const got = new Map<number, number>()
  const lookaheadMs = 3
  type Out = { k: 'announce' | 'bulk' | 'small' | 'lost', t: number, from: number, to: number, lane: number, seq: number, sizeBytes: number, id: number }
  const parts = [0, 1].map((p) => {
    const queue = new EventQueue<Arrive | number>()
    const out: Out[] = []
    let seq = 0
    const state = { now: 0 }
    const net = new Network<Arrive | number>(resolveTopology(TOPOLOGY), (t, ev) => { queue.push(t, ev) })
    const mine = (peer: number): boolean => (peer < 3 ? 0 : 1) === p
    const border: NetworkBorder<Arrive | number> = {
      isRemote: (peer) => !mine(peer),
      nextSeq: () => seq++,
      announce: (from, to, lane, s) => { out.push({ k: 'announce', t: 0, from, to, lane, seq: s, sizeBytes: 0, id: -1 }) },
      bulk: (t, from, to, lane, s, sizeBytes, ev) => { out.push({ k: 'bulk', t, from, to, lane, seq: s, sizeBytes, id: ev as number }) },
      small: (t, from, to, lane, s, ev) => { out.push({ k: 'small', t, from, to, lane, seq: s, sizeBytes: 0, id: ev as number }) },
      lost: (from, to, lane, s) => { out.push({ k: 'lost', t: 0, from, to, lane, seq: s, sizeBytes: 0, id: -1 }) }
    }
    net.border = border
    // The arrival event is the message id (a number), as data that could cross threads.
    for (const s of sends) if (mine(s.from)) queue.push(s.atMs, () => { net.send(state.now, s.from, s.to, s.sizeBytes, s.id, s.lane) })
    return { queue, out, net, state }
  })
  const run = (p: typeof parts[number], endMs: number): void => {
    for (let t = p.queue.peekTime(); t !== undefined && t < endMs; t = p.queue.peekTime()) {
      p.state.now = t
      const ev = p.queue.popItem()
      if (typeof ev === 'number') got.set(ev, t)
      else ev()
    }
  }
  for (let end = lookaheadMs; end < 10_000; end += lookaheadMs) {
    for (const p of parts) run(p, end)
    for (const [i, p] of parts.entries()) {
      const other = parts[1 - i] as typeof p
      for (const o of p.out.splice(0)) {
        if (o.k !== 'announce' && o.k !== 'lost') expect(o.t, 'nothing crosses faster than the lookahead').toBeGreaterThanOrEqual(end)
        if (o.k === 'announce') other.net.importAnnounce(other.state.now, o.from, o.to, o.lane, o.seq)
        else if (o.k === 'bulk') other.net.importBulk(other.state.now, o.t, o.from, o.to, o.lane, o.seq, o.sizeBytes, o.id)
        else if (o.k === 'small') other.net.importSmall(other.state.now, o.t, o.from, o.to, o.lane, o.seq, o.id)
        else other.net.importLost(other.state.now, o.from, o.to, o.lane, o.seq)
      }
    }
  }
  return got
}

const send = fc.record({
  atMs: fc.integer({ min: 0, max: 400 }).map((x) => x / 4),
  from: fc.integer({ min: 0, max: 5 }),
  to: fc.integer({ min: 0, max: 5 }),
  sizeBytes: fc.oneof(fc.constantFrom(0, 1, 100, 1500), fc.integer({ min: 1501, max: 300_000 })),
  lane: fc.integer({ min: 0, max: 2 })
})

describe('the network cut between partitions (experiments/sim/parallel/)', () => {
  it('delivers every message at the time one network does: bulk and small, across lanes, with queues and the wide-area link', () => {
    fc.assert(fc.property(fc.array(send, { minLength: 1, maxLength: 60 }), (raw) => {
      const sends = raw.map((s, id) => ({ ...s, id })).sort((a, b) => a.atMs - b.atMs || a.id - b.id)
      const a = whole(sends)
      const b = split(sends)
      expect(b.size).toBe(sends.length)
      for (const s of sends) expect(b.get(s.id), `message ${s.id}`).toBe(a.get(s.id))
    }), { numRuns: 200 })
  })

  it('keeps a small message behind a bulk one sent before it on the same lane between partitions', () => {
    const sends: Send[] = [
      { atMs: 0, from: 0, to: 3, sizeBytes: 1_000_000, lane: 0, id: 0 },
      { atMs: 0.5, from: 0, to: 3, sizeBytes: 10, lane: 0, id: 1 },
      { atMs: 0.5, from: 0, to: 3, sizeBytes: 10, lane: 1, id: 2 }
    ]
    const b = split(sends)
    expect(b.get(1) as number).toBeGreaterThanOrEqual(b.get(0) as number)
    expect(b.get(2) as number, 'another lane overtakes').toBeLessThan(b.get(0) as number)
    expect(b).toEqual(whole(sends))
  })
})
