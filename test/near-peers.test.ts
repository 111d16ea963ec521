/**
 * Near-peer probing (003 §VI's suggestion): what NearPeers remembers and picks, how Probing
 * mixes near and random candidates, and that a probe teaches locality to both ends.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { NearPeers, MAX_NEAR_HINTS, NEAR_HINTS_PER_REPLY, NEAR_POOL_SIZE, NEAR_RTT_FACTOR } from '../overlay/near-peers.ts'
import { Probing, type ProbingHost } from '../overlay/probing.ts'
import type { Message } from '../overlay/messages.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { fakeProbingHost } from './probing-fixtures.ts'
import { SURVEY_NONCE } from '../overlay/near-survey.ts'

const alive = (): boolean => true

describe('NearPeers', () => {
  it('keeps the smallest RTT measured; hints estimate through the candidate (triangle bound)', () => {
    const n = new NearPeers('me')
    n.measuredRtt('a', 0.5)
    n.measuredRtt('a', 0.3)
    n.measuredRtt('a', 0.9)
    expect(n.rttOf('a')).toBe(0.3)
    n.addHints('a', 0.3, [{ peer: 'b', rttMs: 0.2 }, { peer: 'me', rttMs: 0.1 }, { peer: 'a', rttMs: 0 }])
    expect(n.size).toEqual({ measured: 1, hinted: 1 })
    // A measurement replaces the hint.
    n.measuredRtt('b', 0.4)
    expect(n.size).toEqual({ measured: 2, hinted: 0 })
    // Hints about measured peers are ignored; the own id and negative RTTs too.
    n.addHints('a', 0.3, [{ peer: 'b', rttMs: 0.01 }])
    n.measuredRtt('me', 0.1)
    n.measuredRtt('c', -1)
    expect(n.size).toEqual({ measured: 2, hinted: 0 })
  })

  it('reports its nearest live peers, nearest first, at most NEAR_HINTS_PER_REPLY', () => {
    const n = new NearPeers('me')
    for (let i = 0; i < 20; i++) n.measuredRtt(`p${i}`, 20 - i)
    const hints = n.nearest((p) => p !== 'p19')
    expect(hints).toHaveLength(NEAR_HINTS_PER_REPLY)
    expect(hints[0]).toEqual({ peer: 'p18', rttMs: 2 })
    expect(hints.map((h) => h.rttMs)).toEqual([...hints.map((h) => h.rttMs)].sort((a, b) => a - b))
  })

  it('picks only near peers (within NEAR_RTT_FACTOR of the nearest), unprobed first, then the one probed longest ago', () => {
    const n = new NearPeers('me')
    n.measuredRtt('far', 6)
    expect(n.pick(() => 0, alive)).toBe('far') // the nearest known is near by definition
    n.measuredRtt('a', 0.3)
    n.addHints('a', 0.3, [{ peer: 'b', rttMs: 0.3 }, { peer: 'x', rttMs: 6 }])
    const seen = new Set<PeerId>()
    for (let i = 0; i < 50; i++) seen.add(n.pick(() => (i % 10) / 10, alive) as PeerId)
    expect([...seen].sort()).toEqual(['a', 'b'])
    n.markProbed('a')
    expect(n.pick(() => 0, alive)).toBe('b')
    n.markProbed('b')
    // Both probed in this burst: the one probed longest ago again.
    expect(n.pick(() => 0, alive)).toBe('a')
    n.markProbed('a')
    expect(n.pick(() => 0, alive)).toBe('b')
    // A new burst: unprobed again; dead peers are never picked.
    n.newBurst()
    expect(n.pick(() => 0.99, (p) => p !== 'b')).toBe('a')
    expect(NEAR_RTT_FACTOR).toBeGreaterThan(2) // a two-hop hint inside a cluster stays near
  })

  it('property: a pick is always a live, near, known peer, and within the pool of the lowest estimates', () => {
    fc.assert(fc.property(
      fc.array(fc.tuple(fc.integer({ min: 0, max: 30 }), fc.double({ min: 0.01, max: 50, noNaN: true })), { maxLength: 40 }),
      fc.array(fc.integer({ min: 0, max: 30 }), { maxLength: 10 }),
      fc.double({ min: 0, max: 0.999, noNaN: true }),
      (measures, dead, r) => {
        const n = new NearPeers('me')
        for (const [p, rtt] of measures) n.measuredRtt(`p${p}`, rtt)
        const isAlive = (p: PeerId): boolean => !dead.includes(Number(p.slice(1)))
        const picked = n.pick(() => r, isAlive)
        const known = new Map<PeerId, number>()
        for (const [p, rtt] of measures) known.set(`p${p}`, Math.min(rtt, known.get(`p${p}`) ?? Infinity))
        const live = [...known].filter(([p]) => isAlive(p))
        if (live.length === 0) { expect(picked).toBeUndefined(); return }
        expect(picked).toBeDefined()
        const nearest = Math.min(...live.map(([, rtt]) => rtt))
        const est = known.get(picked as PeerId) as number
        expect(isAlive(picked as PeerId)).toBe(true)
        expect(est).toBeLessThanOrEqual(NEAR_RTT_FACTOR * nearest)
        const better = live.filter(([, rtt]) => rtt < est && rtt <= NEAR_RTT_FACTOR * nearest).length
        expect(better).toBeLessThan(NEAR_POOL_SIZE)
      }
    ))
  })

  it('prune forgets dead peers once they outnumber the live ones', () => {
    const n = new NearPeers('me')
    for (let i = 0; i < 100; i++) n.measuredRtt(`p${i}`, 1)
    n.prune((p) => Number(p.slice(1)) < 10, 10)
    expect(n.size.measured).toBe(10)
  })

  it('sampleNear picks distinct live near peers, uniformly rather than always the same few', () => {
    const n = new NearPeers('me')
    for (let i = 0; i < 30; i++) n.measuredRtt(`n${i}`, 0.3 + i * 0.001)
    for (let i = 0; i < 10; i++) n.measuredRtt(`f${i}`, 6)
    n.addHints('n0', 0.3, [{ peer: 'h0', rttMs: 0.1 }])
    let seed = 3
    const random = (): number => { seed = (seed * 16807) % 2147483647; return seed / 2147483647 }
    const alive = (p: string): boolean => p !== 'n5'
    const seen = new Map<string, number>()
    for (let round = 0; round < 200; round++) {
      const s = n.sampleNear(random, alive, 8)
      expect(s).toHaveLength(8)
      expect(new Set(s).size).toBe(8)
      // Near (measured, within 3x the nearest), alive; hinted peers are not sampled.
      for (const p of s) { expect(p.startsWith('n') && p !== 'n5').toBe(true); seen.set(p, (seen.get(p) ?? 0) + 1) }
    }
    // Every one of the 29 live near peers is picked, about 200 x 8 / 29 = 55 times.
    expect(seen.size).toBe(29)
    for (const count of seen.values()) expect(count).toBeGreaterThan(25)
    expect(n.sampleNear(random, alive, 0)).toEqual([])
  })
})

/** A Probing over three clusters of peers, with the network answering at given RTTs. */
function probingHarness (nearFraction: number, randomValues: () => number, nearLane = false, probeNearLaneGapMs = 0, timers: number[] = [], treeNewsGapMs = 0): { probing: Probing, sent: Array<{ to: PeerId, msg: Message }>, judged: PeerId[] } {
  const sent: Array<{ to: PeerId, msg: Message }> = []
  const judged: PeerId[] = []
  const members = ['me', ...Array.from({ length: 30 }, (_, i) => `p${String(i).padStart(2, '0')}`)]
  const host: ProbingHost = {
    self: 'me',
    random: randomValues,
    alive: () => members,
    isAlive: (p) => members.includes(p),
    send: (to, msg) => { sent.push({ to, msg }) },
    setTimer: (at, kind) => { if (kind === 'probe') timers.push(at) },
    judged: (_now, cand) => { judged.push(cand) },
    parentlessCount: () => 0,
    isDetour: () => false,
    detourRoots: () => [],
    isRunning: () => true
  }
  return { probing: new Probing(host, { probeExtraCount: 40, steadyProbeIntervalMs: 0, probeTimeoutMs: 1000, probeBytes: 1000, probePingCount: 1, probeNearFraction: nearFraction, probeNearLane: nearLane, probeDetour: false, probeBandwidthReuseMs: 0, probeNearLaneGapMs, treeNewsGapMs, nearSurveyCount: 0 }), sent, judged }
}

/** Answers the probe in flight: peers p00-p09 are near (0.3 ms), the rest far (6 ms). */
function answer (h: ReturnType<typeof probingHarness>, now: number): number {
  const ping = h.sent.at(-1) as { to: PeerId, msg: Message }
  expect(ping.msg.t).toBe('ping')
  const near = Number(ping.to.slice(1)) < 10
  const rtt = near ? 0.3 : 6
  h.probing.onPong(now + rtt, ping.to, (ping.msg as { nonce: number }).nonce)
  const req = h.sent.at(-1) as { to: PeerId, msg: Message }
  expect(req.msg.t).toBe('probe-req')
  const hints = near ? [{ peer: `p0${(Number(ping.to.slice(1)) + 1) % 10}`, rttMs: 0.3 }] : []
  h.probing.onReply(now + 3 * rtt, ping.to, { t: 'probe-rep', nonce: (req.msg as { nonce: number }).nonce, trees: [], padding: 1000, near: hints })
  return now + 3 * rtt
}

describe('Probing: the near lane', () => {
  it('near probes go on while a wide-area probe is unanswered; the lanes never probe one peer at once', () => {
    // "Random" numbers: the main lane's picks are far ones (near share 0.5: 0.9 > 0.5).
    const values = [0.9, 0.9, 0.95, 0.9]
    let i = 0
    const h = probingHarness(0.5, () => values[i++ % values.length] as number, true)
    // p05 probed us: 0.4 ms away, a near peer is known.
    h.probing.pinged(-1, 'p05', 2)
    h.probing.requested(-0.6, 'p05', 2)
    h.probing.trigger(0)
    const answered = new Set<number>()
    const isNearPeer = (p: PeerId): boolean => Number(p.slice(1)) < 10
    let now = 0
    let nearDone = 0
    let farPending: PeerId | undefined
    for (let step = 0; step < 40 && nearDone < 12; step++) {
      const open = h.sent.map((s, k) => ({ ...s, k })).filter((s) => s.msg.t === 'ping' && !answered.has(s.k))
      const inFlight = open.map((s) => s.to)
      expect(new Set(inFlight).size).toBe(inFlight.length)
      farPending = open.find((s) => !isNearPeer(s.to))?.to ?? farPending
      const next = open.find((s) => isNearPeer(s.to))
      if (next === undefined) break
      answered.add(next.k)
      now += 1
      h.probing.onPong(now, next.to, (next.msg as { nonce: number }).nonce)
      const req = [...h.sent].reverse().find((s) => s.to === next.to && s.msg.t === 'probe-req') as { to: PeerId, msg: Message }
      h.probing.onReply(now + 1, next.to, { t: 'probe-rep', nonce: (req.msg as { nonce: number }).nonce, trees: [], padding: 1000, near: [{ peer: `p0${(Number(next.to.slice(1)) + 1) % 10}`, rttMs: 0.3 }] })
      nearDone++
    }
    // A far probe is still waiting for its answer, and the near lane kept probing meanwhile.
    expect(farPending).toBeDefined()
    expect(h.probing.isProbing).toBe(true)
    expect(nearDone).toBeGreaterThanOrEqual(10)
    // Nonces of the two lanes never collide.
    const nonces = h.sent.filter((s) => s.msg.t === 'ping').map((s) => (s.msg as { nonce: number }).nonce)
    expect(new Set(nonces).size).toBe(nonces.length)
  })

  it('the near lane starts a probe at most once per probeNearLaneGapMs', () => {
    const timers: number[] = []
    // The main lane's picks are far (0.9 > 0.5) and stay unanswered.
    const h = probingHarness(0.5, () => 0.9, true, 10, timers)
    h.probing.pinged(-1, 'p05', 2)
    h.probing.requested(-0.6, 'p05', 2)
    h.probing.trigger(0)
    const nearPings = (): Array<{ to: PeerId, msg: Message }> => h.sent.filter((s) => s.msg.t === 'ping' && Number(s.to.slice(1)) < 10)
    expect(nearPings()).toHaveLength(1)
    // The near probe is answered within 1 ms: the next one waits for the gap.
    const first = nearPings()[0] as { to: PeerId, msg: Message }
    h.probing.onPong(0.5, first.to, (first.msg as { nonce: number }).nonce)
    const req = h.sent.at(-1) as { to: PeerId, msg: Message }
    h.probing.onReply(1, first.to, { t: 'probe-rep', nonce: (req.msg as { nonce: number }).nonce, trees: [], padding: 1000 })
    expect(nearPings()).toHaveLength(1)
    expect(timers).toContain(10)
    h.probing.onTimer(9.9)
    expect(nearPings()).toHaveLength(1)
    h.probing.onTimer(10)
    expect(nearPings()).toHaveLength(2)
  })

  it('without the near lane (003) one probe runs at a time', () => {
    const h = probingHarness(0.5, () => 0.9, false)
    h.probing.trigger(0)
    expect(h.sent.filter((s) => s.msg.t === 'ping')).toHaveLength(1)
  })
})

describe('Probing: near and random candidates', () => {
  /** A burst of 40 answered probes with a fixed stream of "random" numbers; the peers judged. */
  const burst = (nearFraction: number): PeerId[] => {
    let x = 0
    const h = probingHarness(nearFraction, () => { x = (x + 0.37) % 1; return x })
    h.probing.trigger(0)
    let now = 0
    for (let i = 0; i < 40; i++) now = answer(h, now)
    return h.judged
  }
  const isNear = (p: PeerId): boolean => Number(p.slice(1)) < 10

  it('with probeNearFraction 0 every candidate is uniformly random (003)', () => {
    const judged = burst(0)
    const nearShare = judged.filter(isNear).length / judged.length
    expect(nearShare).toBeLessThan(0.5)
  })

  it('with probeNearFraction 0.75 most probes go to the near cluster once one near peer is known', () => {
    const judged = burst(0.75)
    const firstNear = judged.findIndex(isNear)
    expect(firstNear).toBeGreaterThanOrEqual(0)
    const after = judged.slice(firstNear + 1)
    const nearShare = after.filter(isNear).length / after.length
    expect(nearShare).toBeGreaterThan(0.6)
  })

  it('a probe times its RTT at the probed peer too: ping answered, then probe-req', () => {
    const h = probingHarness(0.75, () => 0)
    h.probing.pinged(10, 'p05', 2)
    const hints = h.probing.requested(10.4, 'p05', 2)
    expect(hints).toEqual([])
    expect(h.probing.rttOf('p05')).toBeCloseTo(0.4)
    // The next reply lists it.
    h.probing.pinged(20, 'p07', 2)
    expect(h.probing.requested(20.3, 'p07', 2)).toEqual([{ peer: 'p05', rttMs: expect.closeTo(0.4) as unknown as number }])
    // A probe-req without an answered ping measures nothing.
    h.probing.requested(30, 'p09', 2)
    expect(h.probing.rttOf('p09')).toBeUndefined()
  })

  it("times the prober's RTT from the pong of the ping its probe-req names: another ping in between (liveness, survey, forged) measures nothing", () => {
    const h = probingHarness(0.75, () => 0)
    // p05 probes us (ping nonce 6); before its probe-req comes, a liveness ping (nonce 0)
    // it sent meanwhile arrives too. Timed from that pong, the RTT was 0.1 ms instead of
    // 0.4, and the smallest RTT is kept for good (near table, linkFarRttMs).
    h.probing.pinged(10, 'p05', 6)
    h.probing.pinged(10.3, 'p05', 0)
    h.probing.pinged(10.35, 'p05', SURVEY_NONCE)
    h.probing.requested(10.4, 'p05', 6)
    expect(h.probing.rttOf('p05')).toBeCloseTo(0.4)
    // A probe-req naming another nonce than the ping answered (a replay, a stale request) measures nothing.
    h.probing.pinged(20, 'p07', 8)
    h.probing.requested(20.1, 'p07', 10)
    expect(h.probing.rttOf('p07')).toBeUndefined()
    h.probing.requested(20.3, 'p07', 8)
    expect(h.probing.rttOf('p07')).toBeCloseTo(0.3)
    // A liveness ping alone times nothing.
    h.probing.pinged(30, 'p09', 0)
    h.probing.requested(30.2, 'p09', 0)
    expect(h.probing.rttOf('p09')).toBeUndefined()
  })

  it('the near table stays bounded between bursts: a near peer offering again and again, its replies naming peers that are not members', () => {
    const h = probingHarness(0.75, () => 0, true, 0, [], 50)
    h.probing.pinged(0, 'p01', 2)
    h.probing.requested(0.3, 'p01', 2) // p01 is near: its offers are probed
    const near = (h.probing as unknown as { near: NearPeers }).near
    for (let i = 0; i < 100; i++) {
      const t = 10 + i * 50 // once per treeNewsGapMs, as a sender's news goes
      h.probing.offered(t, 'p01')
      const ping = h.sent.at(-1) as { to: PeerId, msg: Message }
      expect(ping).toMatchObject({ to: 'p01', msg: { t: 'ping' } })
      h.probing.onPong(t + 0.3, 'p01', (ping.msg as { nonce: number }).nonce)
      const req = h.sent.at(-1) as { to: PeerId, msg: Message }
      expect(req.msg.t).toBe('probe-req')
      const hints = Array.from({ length: MAX_NEAR_HINTS }, (_, j) => ({ peer: `x${i}-${j}`, rttMs: 0.1 }))
      h.probing.onReply(t + 0.6, 'p01', { t: 'probe-rep', nonce: (req.msg as { nonce: number }).nonce, trees: [], padding: 1000, near: hints })
      // 31 members: what prune keeps past, plus one reply's hints.
      expect(near.size.measured + near.size.hinted).toBeLessThanOrEqual(2 * 31 + 16 + MAX_NEAR_HINTS)
    }
  })

  it('a probe waiting for a peer that left is given up at once, and the next one starts', () => {
    const h = probingHarness(0, () => 0)
    h.probing.trigger(0)
    const first = h.sent.at(-1) as { to: PeerId, msg: Message }
    expect(first.msg.t).toBe('ping')
    h.probing.targetGone(5, 'someone-else')
    expect(h.sent).toHaveLength(1)
    h.probing.targetGone(5, first.to)
    expect(h.sent).toHaveLength(2)
    expect(h.sent[1]?.msg.t).toBe('ping')
  })
})

describe('Probing: detour probes (probeDetour)', () => {
  /** A peer with 2 extra probes per burst; `detours` are the roots its latency trees reach through a detour. */
  function detourHarness (detours: Set<PeerId>, probeDetour = true): { probing: Probing, pings: () => PeerId[], answerLast: (now: number) => number } {
    const sent: Array<{ to: PeerId, msg: Message }> = []
    const members = ['me', ...Array.from({ length: 30 }, (_, i) => `p${String(i).padStart(2, '0')}`)]
    const host = fakeProbingHost(members, sent, { random: () => 0.9, isDetour: (root, farMs) => detours.has(root) && farMs > 0, detourRoots: () => [...detours] })
    const probing = new Probing(host, { probeExtraCount: 2, steadyProbeIntervalMs: 0, probeTimeoutMs: 1000, probeBytes: 1000, probePingCount: 1, probeNearFraction: 0, probeNearLane: false, probeDetour, probeBandwidthReuseMs: 0, probeNearLaneGapMs: 0, treeNewsGapMs: 0, nearSurveyCount: 0 })
    const pings = (): PeerId[] => sent.filter((s) => s.msg.t === 'ping').map((s) => s.to)
    const answerLast = (now: number): number => {
      const ping = [...sent].reverse().find((s) => s.msg.t === 'ping') as { to: PeerId, msg: Message }
      // p00 is near (0.3 ms); everyone else is far (6 ms).
      const rtt = ping.to === 'p00' ? 0.3 : 6
      probing.onPong(now + rtt, ping.to, (ping.msg as { nonce: number }).nonce)
      const req = [...sent].reverse().find((s) => s.msg.t === 'probe-req') as { to: PeerId, msg: Message }
      probing.onReply(now + 2 * rtt, ping.to, { t: 'probe-rep', nonce: (req.msg as { nonce: number }).nonce, trees: [], padding: 1000 })
      return now + 2 * rtt
    }
    return { probing, pings, answerLast }
  }

  it('when a burst ends, each root reached through a detour is probed once', () => {
    const detours = new Set<PeerId>(['p20', 'p25'])
    const h = detourHarness(detours)
    h.probing.pinged(-1, 'p00', 2)
    h.probing.requested(-0.7, 'p00', 2) // a near peer at 0.3 ms: "far" is 1.2 ms and more
    h.probing.trigger(0)
    let now = 0
    for (let i = 0; i < 10 && h.probing.isProbing; i++) now = h.answerLast(now)
    const pings = h.pings()
    // Two burst probes (random picks), then one probe of each detour root, then nothing.
    expect(pings).toHaveLength(4)
    expect(new Set(pings.slice(2))).toEqual(new Set(['p20', 'p25']))
    expect(h.probing.isProbing).toBe(false)
    // A detour seen again in the same burst is not probed again; one that went away by
    // itself is not probed at all.
    h.probing.detourSeen(now, 'p20', 6, 6)
    expect(h.pings()).toHaveLength(4)
    detours.delete('p25')
    h.probing.detourSeen(now, 'p25', 6, 6)
    expect(h.pings()).toHaveLength(4)
  })

  it('a detour that appears after the burst is probed at once; near parents and bursts in progress are left alone', () => {
    const detours = new Set<PeerId>()
    const h = detourHarness(detours)
    h.probing.pinged(-1, 'p00', 2)
    h.probing.requested(-0.7, 'p00', 2)
    h.probing.trigger(0)
    let now = 0
    h.probing.detourSeen(now, 'p07', 6, 6) // during the burst: ignored (the burst's end scans)
    for (let i = 0; i < 10 && h.probing.isProbing; i++) now = h.answerLast(now)
    expect(h.pings()).toHaveLength(2)
    h.probing.detourSeen(now, 'p09', 0.3, 6) // a near parent: no detour
    h.probing.detourSeen(now, 'p09', 6, 0.5) // a far parent next to the root: no detour
    expect(h.pings()).toHaveLength(2)
    detours.add('p11')
    h.probing.detourSeen(now, 'p11', 6, 6)
    expect(h.pings()).toEqual([...h.pings().slice(0, 2), 'p11'])
    h.answerLast(now)
    expect(h.probing.isProbing).toBe(false)
  })

  it('the queue of detour roots stays bounded when bursts keep interrupting it', () => {
    const detours = new Set<PeerId>(Array.from({ length: 29 }, (_, i) => `p${String(i + 1).padStart(2, '0')}`))
    const h = detourHarness(detours)
    h.probing.pinged(-1, 'p00', 2)
    h.probing.requested(-0.7, 'p00', 2)
    const queue = (): number => (h.probing as unknown as { detours: PeerId[] }).detours.length
    let now = 0
    for (let burst = 0; burst < 20; burst++) {
      h.probing.trigger(now)
      // The burst's 2 probes, then one detour probe; a new burst interrupts the rest.
      for (let i = 0; i < 3; i++) now = h.answerLast(now)
      expect(queue()).toBeLessThanOrEqual(29)
    }
  })

  it('off: no probe outside the burst', () => {
    const detours = new Set<PeerId>(['p20'])
    const h = detourHarness(detours, false)
    h.probing.pinged(-1, 'p00', 2)
    h.probing.requested(-0.7, 'p00', 2)
    h.probing.trigger(0)
    let now = 0
    for (let i = 0; i < 10 && h.probing.isProbing; i++) now = h.answerLast(now)
    h.probing.detourSeen(now, 'p20', 6, 6)
    expect(h.pings()).toHaveLength(2)
  })
})
