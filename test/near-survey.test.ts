/**
 * The RTT survey (overlay/near-survey.ts): a peer that has measured nobody pings a random
 * sample, so that its near lane probes peers of its own cluster rather than far ones it
 * took for near.
 */
import { describe, expect, it } from 'vitest'
import { NearSurvey, SURVEY_NONCE } from '../overlay/near-survey.ts'
import { Probing } from '../overlay/probing.ts'
import type { Message } from '../overlay/messages.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { coldStart64, fakeProbingHost } from './probing-fixtures.ts'
import { Rng } from '../experiments/sim/rng.ts'

describe('NearSurvey', () => {
  it('pings up to count distinct peers and times each pong once', () => {
    const rng = new Rng(7)
    const peers = Array.from({ length: 20 }, (_, i) => `q${i}`)
    const s = new NearSurvey(8)
    const picked = s.start(10, peers, () => rng.next())
    expect(picked).toHaveLength(8)
    expect(new Set(picked).size).toBe(8)
    for (const p of picked) expect(peers).toContain(p)
    expect(s.onPong(10.5, picked[0] as PeerId)).toBe(0.5)
    expect(s.onPong(11, picked[0] as PeerId)).toBeUndefined()
    const other = peers.find((p) => !picked.includes(p)) as PeerId
    expect(s.onPong(11, other)).toBeUndefined()
    // While pongs are outstanding no new survey starts: a pong is always timed from the
    // ping it answers, never from a later one to the same peer.
    expect(s.start(10.2, peers, () => rng.next())).toEqual([])
    expect(s.onPong(10.3, picked[1] as PeerId)).toBeCloseTo(0.3, 9)
    for (const p of picked.slice(2)) expect(s.onPong(10.4, p)).toBeCloseTo(0.4, 9)
    // All answered: fewer candidates than count gives all of them.
    expect(new Set(s.start(20, peers.slice(0, 3), () => rng.next()))).toEqual(new Set(peers.slice(0, 3)))
    expect(s.onPong(21, 'q0')).toBe(1)
    const oldOnly = picked.find((p) => !['q0', 'q1', 'q2'].includes(p)) as PeerId
    expect(s.onPong(21, oldOnly)).toBeUndefined()
    expect(new NearSurvey(0).start(0, peers, () => rng.next())).toEqual([])
  })

  it('gives up a ping unanswered for expireMs, and does not ping that peer again in the next survey', () => {
    const rng = new Rng(5)
    const peers = Array.from({ length: 6 }, (_, i) => `q${i}`)
    const s = new NearSurvey(2, 1000)
    const [a, b] = s.start(0, peers, () => rng.next()) as [PeerId, PeerId]
    expect(s.onPong(0.3, a)).toBeCloseTo(0.3, 9)
    // b never answers (it crashed, or its dial timed out): blocked until the ping expires.
    expect(s.start(999, peers, () => rng.next())).toEqual([])
    const again = s.start(1000, peers, () => rng.next())
    expect(again).toHaveLength(2)
    expect(again).not.toContain(b)
    // A very late pong from b is not timed from anything.
    expect(s.onPong(1000.2, b)).toBeUndefined()
  })

  it('is uniform: every candidate is picked about equally often', () => {
    const rng = new Rng(3)
    const peers = Array.from({ length: 10 }, (_, i) => `q${i}`)
    const seen = new Map<PeerId, number>()
    for (let i = 0; i < 500; i++) for (const p of new NearSurvey(3).start(0, peers, () => rng.next())) seen.set(p, (seen.get(p) ?? 0) + 1)
    // 500 x 3 / 10 = 150 each.
    for (const p of peers) expect(seen.get(p)).toBeGreaterThan(100)
  })
})

/** A Probing with the near lane among 30 peers, p00-p09 near (0.3 ms), the rest far (6 ms). */
function harness (nearSurveyCount: number): { probing: Probing, sent: Array<{ to: PeerId, msg: Message }> } {
  const sent: Array<{ to: PeerId, msg: Message }> = []
  const members = ['me', ...Array.from({ length: 30 }, (_, i) => `p${String(i).padStart(2, '0')}`)]
  const rng = new Rng(11)
  const host = fakeProbingHost(members, sent, { random: () => rng.next() })
  const probing = new Probing(host, { probeExtraCount: 10, steadyProbeIntervalMs: 0, probeTimeoutMs: 1000, probeBytes: 1000, probePingCount: 1, probeNearFraction: 0, probeNearLane: true, probeDetour: false, probeBandwidthReuseMs: 0, probeNearLaneGapMs: 0, treeNewsGapMs: 0, nearSurveyCount })
  return { probing, sent }
}

const isNear = (p: PeerId): boolean => Number(p.slice(1)) < 10

describe('Probing: the survey', () => {
  it('a peer that measured nobody pings nearSurveyCount peers; their pongs make the near peers known', () => {
    const h = harness(16)
    h.probing.trigger(0)
    const survey = h.sent.filter((s) => s.msg.t === 'ping' && (s.msg as { nonce: number }).nonce === SURVEY_NONCE)
    expect(survey).toHaveLength(16)
    expect(new Set(survey.map((s) => s.to)).size).toBe(16)
    expect(survey.some((s) => s.to === 'me')).toBe(false)
    // The main lane's probe is a ping of its own, with a runner nonce.
    expect(h.sent.filter((s) => s.msg.t === 'ping' && (s.msg as { nonce: number }).nonce !== SURVEY_NONCE)).toHaveLength(1)
    const surveyedNear = survey.map((s) => s.to).filter(isNear)
    expect(surveyedNear.length).toBeGreaterThan(0)
    // Pongs come back in RTT order: near ones at 0.3 ms, far ones at 6 ms.
    for (const s of survey) if (isNear(s.to)) h.probing.onPong(0.3, s.to, SURVEY_NONCE)
    for (const s of survey) if (!isNear(s.to)) h.probing.onPong(6, s.to, SURVEY_NONCE)
    const near = h.probing.nearTest()
    for (const s of survey) expect(near(s.to)).toBe(isNear(s.to))
    // The near lane, idle until now, probes a near peer.
    const lanePings = h.sent.filter((s) => s.msg.t === 'ping' && (s.msg as { nonce: number }).nonce % 2 === 1)
    expect(lanePings.length).toBeGreaterThan(0)
    expect(isNear((lanePings[0] as { to: PeerId }).to)).toBe(true)
    // A later burst does not survey again: this peer has measurements.
    const before = h.sent.length
    h.probing.trigger(100)
    expect(h.sent.slice(before).filter((s) => (s.msg as { nonce?: number }).nonce === SURVEY_NONCE)).toHaveLength(0)
  })

  it('ignores survey pongs it did not ask for', () => {
    const h = harness(4)
    h.probing.trigger(0)
    const asked = new Set(h.sent.filter((s) => (s.msg as { nonce?: number }).nonce === SURVEY_NONCE).map((s) => s.to))
    const stranger = Array.from({ length: 30 }, (_, i) => `p${String(i).padStart(2, '0')}`).find((p) => !asked.has(p)) as PeerId
    h.probing.onPong(1, stranger, SURVEY_NONCE)
    expect(h.probing.nearTest()(stranger)).toBe(false)
  })

  it('nearSurveyCount 0: no survey', () => {
    const h = harness(0)
    h.probing.trigger(0)
    expect(h.sent.filter((s) => (s.msg as { nonce?: number }).nonce === SURVEY_NONCE)).toHaveLength(0)
  })
})

describe('the survey in the simulator', () => {
  /** 64 peers in 4 clusters, cold start, 4 s: wide-area edges over every root's two trees. */
  function wanEdges (seed: number, nearSurveyCount: number): { lat: number, bw: number, violations: number } {
    const { sim, report } = coldStart64('near-survey', seed, { nearSurveyCount })
    let lat = 0
    let bw = 0
    for (let i = 0; i < 64; i++) {
      const shape = sim.treeShape(`p${String(i).padStart(4, '0')}`)
      lat += shape.lat.wanEdges
      bw += shape.bw.wanEdges
    }
    return { lat, bw, violations: report.violations.length }
  }

  it('every tree enters each other cluster once; without the survey, peers that took far peers for near ones add edges', () => {
    // Seeds 2 and 3 each have a peer whose first probes all went to other clusters.
    for (const seed of [2, 3]) {
      const on = wanEdges(seed, 32)
      const off = wanEdges(seed, 0)
      expect(on.violations + off.violations).toBe(0)
      // 64 roots x 3 other clusters: the least possible. With probes that download on
      // demand (the twenty-first round) one bandwidth tree of seed 3 kept a second entry
      // into one cluster at 4 s: 193, until cluster tags (2026-11-28) made reach reports a
      // few bytes longer and the trees came out otherwise. Before, with a download on every
      // probe, two of seed 2 did: 194.
      expect(on.lat).toBe(192)
      expect(on.bw).toBe(192)
      // Without it, some tree keeps an extra edge (seed 3: only latency trees since the
      // bandwidth trees' fan-out limit, `bwMaxChildren`).
      expect(off.lat + off.bw).toBeGreaterThan(2 * 192)
    }
  }, 120_000)
})
