/**
 * Tree news (trees/tree-news.ts) and the offers it sends (overlay/probing.ts): when a tree
 * gets much better, the peer's near peers are told and probe it, between bursts too.
 */
import { describe, expect, it } from 'vitest'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { TREE_NEWS_GAIN, TreeNews } from '../trees/tree-news.ts'
import type { TreeState } from '../trees/tree-state.ts'
import type { TreeKind } from '../trees/tree-kind.ts'
import { MAX_OFFERS, OFFER_FANOUT, Probing, type ProbingHost } from '../overlay/probing.ts'
import type { Message } from '../overlay/messages.ts'
import { coldStart64 } from './probing-fixtures.ts'

/** TreeNews reads only a tree's kind and metric. */
function tree (kind: TreeKind, metric: number): TreeState {
  return { kind, metric } as unknown as TreeState
}

describe('TreeNews', () => {
  /** Feeds one connected tree the metrics in turn; each step says whether it is news. */
  function walk (kind: TreeKind, steps: ReadonlyArray<readonly [number, boolean]>): void {
    const news = new TreeNews()
    const st = tree(kind, (steps[0] as readonly [number, boolean])[0])
    for (const [metric, expected] of steps) {
      st.metric = metric
      expect(news.observe(st, true), `${kind} at ${metric}`).toBe(expected)
    }
  }

  it('a bandwidth tree is news when it first connects and when its estimate beats its best by the gain', () => {
    const g = 1 + TREE_NEWS_GAIN
    // A swing down and back up to the best is not news: a parent's children come and go.
    walk('bw', [[4e6, true], [4e6 * g * 0.99, false], [4e6 * g, true], [1e6, false], [5e6, false]])
  })

  it('a latency tree is news when its distance shrinks by the gain', () => {
    walk('lat', [[12, true], [11, false], [12 / (1 + TREE_NEWS_GAIN), true], [30, false]])
  })

  it('a tree that lost its parent is news again when it connects again; unknown metrics never are', () => {
    const news = new TreeNews()
    const st = tree('bw', 8e6)
    expect(news.observe(st, true)).toBe(true)
    expect(news.observe(st, false)).toBe(false)
    expect(news.observe(st, true)).toBe(true)
    expect(news.observe(tree('lat', Infinity), true)).toBe(false)
    expect(news.observe(tree('bw', -1), true)).toBe(false)
  })
})

/** A Probing with the near lane and news on; p00-p09 are near (measured 0.3 ms), p10-p29 far (6 ms). */
function harness (treeNewsGapMs = 50, running = true): { probing: Probing, sent: Array<{ to: PeerId, msg: Message }>, timers: number[], members: PeerId[] } {
  const sent: Array<{ to: PeerId, msg: Message }> = []
  const timers: number[] = []
  const members = ['me', ...Array.from({ length: 30 }, (_, i) => `p${String(i).padStart(2, '0')}`)]
  let seed = 7
  const host: ProbingHost = {
    self: 'me',
    random: () => { seed = (seed * 16807) % 2147483647; return seed / 2147483647 },
    alive: () => members,
    isAlive: (p) => members.includes(p),
    send: (to, msg) => { sent.push({ to, msg }) },
    setTimer: (at, kind) => { if (kind === 'probe') timers.push(at) },
    judged: () => {},
    parentlessCount: () => 0,
    isDetour: () => false,
    detourRoots: () => [],
    isRunning: () => running
  }
  const probing = new Probing(host, { probeExtraCount: 0, steadyProbeIntervalMs: 0, probeTimeoutMs: 1000, probeBytes: 1000, probePingCount: 1, probeNearFraction: 0, probeNearLane: true, probeDetour: false, probeBandwidthReuseMs: 0, probeNearLaneGapMs: 10, treeNewsGapMs, nearSurveyCount: 0 })
  // Each peer probed us once: their RTTs are known (the requested() path of a probe).
  members.slice(1).forEach((p, i) => {
    const t = -100 + i
    probing.pinged(t, p, 2)
    probing.requested(t + (i < 10 ? 0.3 : 6), p, 2)
  })
  return { probing, sent, timers, members }
}

const offersSent = (sent: Array<{ to: PeerId, msg: Message }>): PeerId[] => sent.filter((s) => s.msg.t === 'offer').map((s) => s.to)
const pings = (sent: Array<{ to: PeerId, msg: Message }>): PeerId[] => sent.filter((s) => s.msg.t === 'ping').map((s) => s.to)
const isNear = (p: PeerId): boolean => Number(p.slice(1)) < 10

describe('Probing: tree news and offers', () => {
  it('news goes to near peers only, at most once per treeNewsGapMs; news in between waits for the next round', () => {
    const h = harness(50)
    h.probing.news(0)
    const first = offersSent(h.sent)
    expect(first.length).toBe(OFFER_FANOUT)
    expect(new Set(first).size).toBe(first.length)
    expect(first.every(isNear)).toBe(true)
    h.sent.length = 0
    h.probing.news(10)
    h.probing.news(20)
    expect(offersSent(h.sent)).toEqual([])
    expect(h.timers).toContain(50)
    h.probing.onTimer(49.9)
    expect(offersSent(h.sent)).toEqual([])
    h.probing.onTimer(50)
    expect(offersSent(h.sent).length).toBe(OFFER_FANOUT)
  })

  it('news is off with treeNewsGapMs 0, and while the peer does not run', () => {
    const off = harness(0)
    off.probing.news(0)
    expect(offersSent(off.sent)).toEqual([])
    const stopped = harness(50, false)
    stopped.probing.news(0)
    expect(offersSent(stopped.sent)).toEqual([])
  })

  it("with treeNewsGapMs 0 offers are ignored too: 003's schedule alone decides who is probed (another peer's config, or a forged offer, does not)", () => {
    const off = harness(0)
    off.probing.offered(0, 'p03')
    expect(pings(off.sent)).toEqual([])
    expect(off.probing.isProbing).toBe(false)
  })

  it('an offer from a near peer is probed at once, between bursts too; far, unknown and duplicate offers are not', () => {
    const h = harness(50)
    expect(h.probing.isProbing).toBe(false)
    h.probing.offered(0, 'p15')
    h.probing.offered(0, 'stranger')
    expect(pings(h.sent)).toEqual([])
    h.probing.offered(0, 'p03')
    expect(pings(h.sent)).toEqual(['p03'])
    // The offered probe counts as probing (the trees are still changing).
    expect(h.probing.isProbing).toBe(true)
    // p03 again while probed, and p04 twice: one probe of p04 waits.
    h.probing.offered(0.1, 'p03')
    h.probing.offered(0.1, 'p04')
    h.probing.offered(0.2, 'p04')
    const ping = h.sent.at(-1) as { to: PeerId, msg: Message }
    h.probing.onPong(0.3, 'p03', (ping.msg as { nonce: number }).nonce)
    const req = h.sent.at(-1) as { to: PeerId, msg: Message }
    expect(req.msg.t).toBe('probe-req')
    h.probing.onReply(0.6, 'p03', { t: 'probe-rep', nonce: (req.msg as { nonce: number }).nonce, trees: [], padding: 1000 })
    // Offers are not paced (their trees changed): the waiting offer goes next, at once.
    expect(pings(h.sent)).toEqual(['p03', 'p04'])
  })

  it('between bursts the near lane probes offerers only: an offer whose peer died while it waited starts no probe of another peer', () => {
    const h = harness(50)
    h.probing.offered(0, 'p03')
    h.probing.offered(0.1, 'p04') // waits behind p03's probe
    // p04 dies before its turn.
    h.members.splice(h.members.indexOf('p04'), 1)
    h.probing.targetGone(0.2, 'p04')
    const ping = h.sent.at(-1) as { to: PeerId, msg: Message }
    h.probing.onPong(0.3, 'p03', (ping.msg as { nonce: number }).nonce)
    const req = h.sent.at(-1) as { to: PeerId, msg: Message }
    h.probing.onReply(0.6, 'p03', { t: 'probe-rep', nonce: (req.msg as { nonce: number }).nonce, trees: [], padding: 1000 })
    // No burst, no offer left: nobody else is probed (it was some near peer, outside any burst).
    expect(pings(h.sent)).toEqual(['p03'])
    expect(h.probing.isProbing).toBe(false)
  })

  it('a peer offering again and again is probed at most about once per half treeNewsGapMs (a sender offers once per treeNewsGapMs)', () => {
    const h = harness(50)
    // p03 offers every millisecond for a second, and answers every probe at once.
    for (let t = 0; t < 1000; t++) {
      h.probing.offered(t, 'p03')
      const last = h.sent.at(-1) as { to: PeerId, msg: Message }
      if (last.msg.t !== 'ping' || last.to !== 'p03' || (last as { answered?: boolean }).answered === true) continue
      ;(last as { answered?: boolean }).answered = true
      h.probing.onPong(t + 0.3, 'p03', (last.msg as { nonce: number }).nonce)
      const req = h.sent.at(-1) as { to: PeerId, msg: Message }
      h.probing.onReply(t + 0.6, 'p03', { t: 'probe-rep', nonce: (req.msg as { nonce: number }).nonce, trees: [], padding: 1000 })
    }
    const probes = pings(h.sent).length
    expect(probes).toBeGreaterThanOrEqual(20)
    expect(probes).toBeLessThanOrEqual(1000 / 25 + 1)
    expect(h.probing.isProbing).toBe(false)
  })

  it('waiting offers are bounded by MAX_OFFERS (the oldest is dropped)', () => {
    const h = harness(50)
    // Make 30 near peers: every member at 0.3 ms.
    h.members.slice(1).forEach((p, i) => { h.probing.pinged(i, p, 2); h.probing.requested(i + 0.3, p, 2) })
    for (const p of h.members.slice(1)) h.probing.offered(100, p)
    // One in flight, MAX_OFFERS waiting: answer nothing, let each probe time out.
    let now = 100
    for (let i = 0; i < 40; i++) { now += 1000; h.probing.onTimer(now) }
    const probed = pings(h.sent)
    expect(probed.length).toBe(1 + MAX_OFFERS)
    expect(probed[0]).toBe('p00')
    expect(probed.slice(1)).toEqual(h.members.slice(1).slice(-MAX_OFFERS))
  })
})

describe('tree news in the simulator', () => {
  /** 64 peers in 4 clusters, cold start, 4 s: wide-area edges of p0000's bandwidth tree. */
  function bwWanEdges (seed: number, treeNewsGapMs: number): { wan: number, offers: number, violations: number } {
    const { sim, report } = coldStart64('tree-news', seed, { treeNewsGapMs })
    return { wan: sim.treeShape('p0000').bw.wanEdges, offers: report.probes.offers, violations: report.violations.length }
  }

  it('gathers each cluster behind fewer wide-area edges of the bandwidth tree than without news', () => {
    let withNews = 0
    let without = 0
    for (const seed of [1, 2, 3]) {
      const on = bwWanEdges(seed, 50)
      const off = bwWanEdges(seed, 0)
      expect(on.violations + off.violations).toBe(0)
      expect(on.offers).toBeGreaterThan(0)
      expect(off.offers).toBe(0)
      withNews += on.wan
      without += off.wan
    }
    // 3 is the least possible (one edge into each other cluster).
    expect(withNews).toBeGreaterThanOrEqual(9)
    expect(withNews).toBeLessThan(without)
  }, 120_000)
})
