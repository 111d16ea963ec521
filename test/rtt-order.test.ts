/**
 * overlay/rtt-order.ts and the sorted walks of overlay/near-peers.ts. NearPeers used to
 * scan every known peer per question; the walks must give exactly the answers the scans
 * gave (the simulator's reports are byte-identical across the change), so a property test
 * drives both with the same random operations and compares every answer.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { RttOrder } from '../overlay/rtt-order.ts'
import { NearPeers, NEAR_HINTS_PER_REPLY, NEAR_POOL_SIZE, NEAR_RTT_FACTOR, type NearHint } from '../overlay/near-peers.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'

/**
 * The scans NearPeers did before the sorted walks (the reference). Its updates copy
 * NearPeers' on purpose: the answers depend on the maps' insertion order, so the oracle
 * must keep the same maps the same way; only the queries differ.
 */
class ScanModel {
  readonly measured = new Map<PeerId, number>()
  readonly hinted = new Map<PeerId, number>()
  readonly probed = new Map<PeerId, number>()
  private seq = 0
  constructor (private readonly self: PeerId) {}
  measuredRtt (peer: PeerId, rttMs: number): void {
    if (peer === this.self || !(rttMs >= 0)) return
    const cur = this.measured.get(peer)
    if (cur === undefined || rttMs < cur) this.measured.set(peer, rttMs)
    this.hinted.delete(peer)
  }

  addHints (via: PeerId, viaRttMs: number, hints: readonly NearHint[]): void {
    if (!(viaRttMs >= 0)) return
    for (const h of hints) {
      if (h.peer === this.self || h.peer === via || this.measured.has(h.peer) || !(h.rttMs >= 0)) continue
      const est = viaRttMs + h.rttMs
      const cur = this.hinted.get(h.peer)
      if (cur === undefined || est < cur) this.hinted.set(h.peer, est)
    }
  }

  markProbed (peer: PeerId): void { this.probed.set(peer, ++this.seq) }
  newBurst (): void { this.probed.clear() }
  prune (isAlive: (p: PeerId) => boolean): void {
    for (const map of [this.measured, this.hinted, this.probed]) for (const p of [...map.keys()]) if (!isAlive(p)) map.delete(p)
  }

  nearestRtt (isAlive: (p: PeerId) => boolean): number {
    let m = Infinity
    for (const [p, r] of this.measured) if (r < m && isAlive(p)) m = r
    return m
  }

  nearest (isAlive: (p: PeerId) => boolean, count: number): NearHint[] {
    const best: NearHint[] = []
    for (const [peer, rttMs] of this.measured) if (isAlive(peer)) insertBounded(best, { peer, rttMs }, count)
    return best
  }

  pick (r: number, isAlive: (p: PeerId) => boolean, pool: number): PeerId | undefined {
    const limitMs = NEAR_RTT_FACTOR * this.nearestRtt(isAlive)
    const best: NearHint[] = []
    let oldest: PeerId | undefined
    let oldestSeq = Infinity
    const consider = (peer: PeerId, rttMs: number): void => {
      if (rttMs > limitMs || !isAlive(peer)) return
      const seq = this.probed.get(peer)
      if (seq === undefined) insertBounded(best, { peer, rttMs }, pool)
      else if (seq < oldestSeq) { oldestSeq = seq; oldest = peer }
    }
    for (const [peer, rttMs] of this.measured) consider(peer, rttMs)
    for (const [peer, rttMs] of this.hinted) consider(peer, rttMs)
    if (best.length === 0) return oldest
    return (best[Math.min(best.length - 1, Math.floor(r * best.length))] as NearHint).peer
  }
}

function insertBounded (list: NearHint[], h: NearHint, max: number): void {
  if (list.length === max && h.rttMs >= (list[max - 1] as NearHint).rttMs) return
  let i = list.length
  while (i > 0 && (list[i - 1] as NearHint).rttMs > h.rttMs) i--
  list.splice(i, 0, h)
  if (list.length > max) list.pop()
}

const PEERS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'me']
const peer = fc.constantFrom(...PEERS)
/** Few distinct RTTs, so that ties (where order matters) are common. */
const rtt = fc.constantFrom(0.1, 0.2, 0.3, 0.6, 0.9, 1, 3, 6, -1)
type Op =
  | { k: 'measure', p: string, r: number }
  | { k: 'hints', via: string, r: number, hints: Array<{ peer: string, rttMs: number }> }
  | { k: 'probe', p: string }
  | { k: 'burst' }
  | { k: 'kill', p: string }
  | { k: 'revive', p: string }
  | { k: 'prune' }
  | { k: 'ask', r: number, pool: number, count: number }
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ k: fc.constant('measure' as const), p: peer, r: rtt }),
  fc.record({ k: fc.constant('hints' as const), via: peer, r: rtt, hints: fc.array(fc.record({ peer, rttMs: rtt }), { maxLength: 4 }) }),
  fc.record({ k: fc.constant('probe' as const), p: peer }),
  fc.record({ k: fc.constant('burst' as const) }),
  fc.record({ k: fc.constant('kill' as const), p: peer }),
  fc.record({ k: fc.constant('revive' as const), p: peer }),
  fc.record({ k: fc.constant('prune' as const) }),
  fc.record({ k: fc.constant('ask' as const), r: fc.double({ min: 0, max: 0.999, noNaN: true }), pool: fc.integer({ min: 1, max: NEAR_POOL_SIZE }), count: fc.integer({ min: 1, max: NEAR_HINTS_PER_REPLY }) })
)

describe('RttOrder', () => {
  it('keeps insertion order for iteration and (RTT, insertion) order for the sorted views', () => {
    const aside = new Set<string>()
    const o = new RttOrder((p) => aside.has(p))
    o.set('x', 3)
    o.set('y', 1)
    o.set('z', 3)
    o.set('x', 1) // keeps its place in the insertion order, so it sorts before y at the same RTT
    expect([...o.keys()]).toEqual(['x', 'y', 'z'])
    expect(o.sorted.map((e) => e.peer)).toEqual(['x', 'y', 'z'])
    aside.add('y')
    o.setAside('y')
    expect(o.sortedFresh.map((e) => e.peer)).toEqual(['x', 'z'])
    o.set('y', 0.5) // still aside
    expect(o.sortedFresh.map((e) => e.peer)).toEqual(['x', 'z'])
    aside.clear()
    o.restoreAll()
    expect(o.sortedFresh.map((e) => e.peer)).toEqual(['y', 'x', 'z'])
    expect(o.delete('x')).toBe(true)
    expect(o.delete('x')).toBe(false)
    o.retain((p) => p !== 'z')
    expect(o.sorted.map((e) => e.peer)).toEqual(['y'])
    expect(o.sortedFresh.map((e) => e.peer)).toEqual(['y'])
    o.set('x', 0.1) // re-added: last in insertion order
    expect([...o]).toEqual([['y', 0.5], ['x', 0.1]])
    expect(o.size).toBe(2)
  })

  it('property: NearPeers answers exactly as the full scans did (pick, nearest, nearestRtt)', () => {
    fc.assert(fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
      const dead = new Set<string>()
      const isAlive = (p: PeerId): boolean => !dead.has(p)
      const n = new NearPeers('me')
      const m = new ScanModel('me')
      for (const o of ops) {
        switch (o.k) {
          case 'measure': n.measuredRtt(o.p, o.r); m.measuredRtt(o.p, o.r); break
          case 'hints': n.addHints(o.via, o.r, o.hints); m.addHints(o.via, o.r, o.hints); break
          case 'probe': n.markProbed(o.p); m.markProbed(o.p); break
          case 'burst': n.newBurst(); m.newBurst(); break
          case 'kill': dead.add(o.p); break
          case 'revive': dead.delete(o.p); break
          case 'prune': n.prune(isAlive, -100) /* below its threshold: always prunes */; m.prune(isAlive); break
          case 'ask': {
            if (n.pick(() => o.r, isAlive, o.pool) !== m.pick(o.r, isAlive, o.pool)) return false
            if (JSON.stringify(n.nearest(isAlive, o.count)) !== JSON.stringify(m.nearest(isAlive, o.count))) return false
            if (n.nearestRtt(isAlive) !== m.nearestRtt(isAlive)) return false
          }
        }
      }
      return true
    }), { numRuns: 1000 })
  })
})
