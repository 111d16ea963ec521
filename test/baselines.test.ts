/**
 * The static baselines of issue 5 (experiments/baselines/): every schedule delivers every
 * byte, the tree shapes and wide-area traffic the algorithms promise, the lower bounds,
 * the reductions, and the named errors on bad input. Every figure comes from the
 * simulator's network model; no test looks at wall-clock time.
 */
import { describe, expect, it } from 'vitest'
import { BASELINES, broadcast, lowerBounds, reduce } from '../experiments/baselines/index.ts'
import type { BaselineName, CollectiveResult } from '../experiments/baselines/index.ts'
import { execute } from '../experiments/baselines/executor.ts'
import { listOrder } from '../experiments/baselines/list.ts'
import { mpichBcastAlgorithm, mpichRanks } from '../experiments/baselines/mpich.ts'
import { Plan } from '../experiments/baselines/plan.ts'
import { binomialTree, treeDepth } from '../experiments/baselines/trees.ts'
import { resolveTopology } from '../experiments/sim/network.ts'
import type { TopologyInit } from '../experiments/sim/network.ts'

const KB = 1024
const MB = 1024 * 1024
const SIZES = [1, 300 * KB, 4 * MB]

/** Three unequal clusters; the middle one has 8 peers (a power of two: recursive doubling inside it). */
const SMALL: TopologyInit = { clusters: [{ name: 'a', peers: 5 }, { name: 'b', peers: 8 }, { name: 'c', peers: 6 }] }
const N = 19
/** Root 0, a non-zero root that is not its cluster's first peer, and the last peer of the last cluster. */
const ROOTS = [0, 7, N - 1]

function paper(peers: number, k: number): TopologyInit {
  const clusters = Array.from({ length: k }, (_, i) => ({ name: `c${i}`, peers: Math.floor(peers / k) + (i < peers % k ? 1 : 0) }))
  return { clusters, intraRttMs: 0.3, interRttMs: 6, peerLinkBytesPerSec: 125_000_000, wanLinkBytesPerSec: 12_500_000 }
}

function expectEveryPeerComplete(r: CollectiveResult, root: number, n: number): void {
  expect(r.arrivalMs.length).toBe(n)
  expect(r.arrivalMs[root]).toBe(0)
  for (const t of r.arrivalMs) expect(Number.isFinite(t)).toBe(true)
  expect(r.completionMs).toBe(Math.max(...r.arrivalMs))
}

describe('broadcast: every peer ends with every byte', () => {
  for (const name of BASELINES) {
    it(`${name}: sizes 1 B, 300 KB, 4 MB from roots ${ROOTS.join(', ')}; within the lower bounds`, () => {
      for (const bytes of SIZES) {
        for (const root of ROOTS) {
          const r = broadcast(name, SMALL, root, bytes)
          expect(r.baseline).toBe(name)
          expectEveryPeerComplete(r, root, N)
          // Every non-root peer received every byte at least once.
          expect(r.bytes).toBeGreaterThanOrEqual(bytes * (N - 1))
          const lb = lowerBounds(SMALL, root, bytes)
          expect(r.completionMs).toBeGreaterThanOrEqual(lb.latencyMs)
          expect(r.completionMs).toBeGreaterThanOrEqual(lb.bandwidthMs)
        }
      }
    })
  }

  it('0 bytes and a one-peer topology complete', () => {
    for (const name of BASELINES) {
      expectEveryPeerComplete(broadcast(name, SMALL, 3, 0), 3, N)
      const lone = broadcast(name, { clusters: [{ name: 'x', peers: 1 }] }, 0, 1000)
      expect(lone.completionMs).toBe(0)
      expect(lone.messages).toBe(0)
    }
  })

  it('MPICH-like with a power-of-two peer count (recursive doubling), and every rank order', () => {
    const pow2: TopologyInit = { clusters: [{ name: 'a', peers: 8 }, { name: 'b', peers: 8 }] }
    for (const mpichRankOrder of ['shuffled', 'round-robin', 'cluster'] as const) {
      const r = broadcast('mpich', pow2, 5, 300 * KB, { mpichRankOrder })
      expect(r.params.algorithm).toBe('scatter-recursive-doubling')
      expectEveryPeerComplete(r, 5, 16)
    }
  })

  it('accepts a resolved topology and gives the same result; runs are deterministic', () => {
    for (const name of BASELINES) {
      const a = broadcast(name, SMALL, 7, 300 * KB)
      const b = broadcast(name, resolveTopology(SMALL), 7, 300 * KB)
      expect(Array.from(b.arrivalMs)).toEqual(Array.from(a.arrivalMs))
      expect(b.messages).toBe(a.messages)
    }
  })
})

describe('algorithm shapes', () => {
  it('MPICH binomial tree: ceil(log2 n) rounds, largest subtree first', () => {
    for (let n = 2; n <= 300; n++) {
      const group = Array.from({ length: n }, (_, i) => i)
      const rootRank = n % 7
      const t = binomialTree(group, rootRank)
      // Round model: a parent's i-th send (0-based) is received in the parent's round + i + 1.
      const round = new Map<number, number>([[t.root, 0]])
      const stack = [t.root]
      while (stack.length > 0) {
        const p = stack.pop() as number
        ;(t.children.get(p) ?? []).forEach((c, i) => {
          round.set(c, (round.get(p) as number) + i + 1)
          stack.push(c)
        })
      }
      expect(round.size).toBe(n)
      expect(Math.max(...round.values())).toBe(Math.ceil(Math.log2(n)))
      expect(t.children.get(t.root)?.length).toBe(Math.ceil(Math.log2(n)))
      expect(treeDepth(t)).toBeLessThanOrEqual(Math.ceil(Math.log2(n)))
    }
  })

  it('MPICH thresholds: binomial < 12288 B or < 8 ranks, recursive doubling for medium payloads on 2^k ranks, else ring', () => {
    expect(mpichBcastAlgorithm(12_287, 16)).toBe('binomial')
    expect(mpichBcastAlgorithm(12_288, 16)).toBe('scatter-recursive-doubling')
    expect(mpichBcastAlgorithm(524_287, 16)).toBe('scatter-recursive-doubling')
    expect(mpichBcastAlgorithm(524_288, 16)).toBe('scatter-ring')
    expect(mpichBcastAlgorithm(12_288, 17)).toBe('scatter-ring')
    expect(mpichBcastAlgorithm(64 * MB, 7)).toBe('binomial')
  })

  it('MPICH rank orders are permutations; round-robin cycles over the clusters', () => {
    const t = resolveTopology(SMALL)
    for (const order of ['shuffled', 'round-robin', 'cluster'] as const) {
      expect([...mpichRanks(t, order, 3)].sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i))
    }
    expect(mpichRanks(t, 'round-robin', 0).slice(0, 6)).toEqual([0, 5, 13, 1, 6, 14])
    expect(mpichRanks(t, 'shuffled', 1)).toEqual(mpichRanks(t, 'shuffled', 1))
    expect(mpichRanks(t, 'shuffled', 1)).not.toEqual(mpichRanks(t, 'shuffled', 2))
  })

  it('magpie and mpich-g2 send exactly one copy of the payload over each wide-area pair leaving the root cluster, none elsewhere', () => {
    for (const name of ['magpie', 'mpich-g2'] as const) {
      for (const root of ROOTS) {
        for (const bytes of SIZES) {
          const r = broadcast(name, SMALL, root, bytes, { headerBytes: 0 })
          const rc = resolveTopology(SMALL).clusterOf(root)
          for (let a = 0; a < 3; a++) {
            for (let b = 0; b < 3; b++) {
              if (a === b) continue
              expect(r.bytesFromTo?.[a]?.[b]).toBe(a === rc ? bytes : 0)
            }
          }
          expect(r.wanBytes).toBe(2 * bytes)
        }
      }
    }
  })

  it('list: one chain, each cluster visited once, WAN bytes = payload x (clusters - 1)', () => {
    const t = resolveTopology(SMALL)
    for (const root of ROOTS) {
      const order = listOrder(t, root)
      expect(order[0]).toBe(root)
      expect([...order].sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i))
      let changes = 0
      for (let i = 1; i < N; i++) if (t.clusterOf(order[i] as number) !== t.clusterOf(order[i - 1] as number)) changes++
      expect(changes).toBe(2)
      for (const bytes of SIZES) {
        const r = broadcast('list', SMALL, root, bytes, { headerBytes: 0 })
        expect(r.wanBytes).toBe(bytes * 2)
        expect(r.bytes).toBe(bytes * (N - 1))
      }
    }
  })

  it('list orders clusters to widen its bottleneck', () => {
    // a-b and a-c are narrow, b-c wide: from a, the chain must cross one narrow link only.
    const wan = [[0, 1e6, 1e6], [1e6, 0, 1e8], [1e6, 1e8, 0]]
    const topo: TopologyInit = { ...SMALL, wanLinkBytesPerSec: wan }
    const r = broadcast('list', topo, 0, MB, { headerBytes: 0 })
    expect(r.params.bottleneckBytesPerSec).toBe(1e6)
    expect(r.wanBytes).toBe(2 * MB)
    // from b, both orders have the same bottleneck; b -> c -> a crosses one narrow link, b -> a -> c two.
    const order = listOrder(resolveTopology(topo), 5)
    expect(resolveTopology(topo).clusterOf(order[8] as number)).toBe(2)
  })

  it('model: flat trees for 1 byte (no sender cost in the network model), segmented algorithms for long payloads', () => {
    const small = broadcast('model', paper(201, 3), 0, 1)
    expect(String(small.params.intraCluster)).toMatch(/flat/)
    const big = broadcast('model', paper(40, 4), 0, 4 * MB)
    expect(String(big.params.intraCluster)).not.toMatch(/flat/)
    expect(big.params.wideArea).toBe('ECEF-LAt')
  })
})

describe('lower bounds', () => {
  it('latency: the largest one-way delay; bandwidth: the min cut ((k-1) WAN links when they are the narrowest)', () => {
    const lb = lowerBounds(paper(201, 3), 0, 25_000_000)
    expect(lb.latencyMs).toBe(3)
    expect(lb.minCutBytesPerSec).toBeCloseTo(25_000_000, 3)
    expect(lb.bandwidthMs).toBeCloseTo(1000, 6)
    const lone = lowerBounds({ clusters: [{ name: 'a', peers: 4 }] }, 2, 125_000_000)
    expect(lone.latencyMs).toBe(0.15)
    expect(lone.minCutBytesPerSec).toBeCloseTo(125_000_000, 3)
    // A narrow peer link is the cut when the WAN is wide.
    expect(lowerBounds({ ...paper(20, 4), wanLinkBytesPerSec: 1e9 }, 0, 1).minCutBytesPerSec).toBeCloseTo(125_000_000, 3)
  })

  it('latency takes a relay when it beats the direct link (non-metric RTT matrix)', () => {
    const rtt = [[0, 20, 2], [20, 0, 2], [2, 2, 0]]
    expect(lowerBounds({ ...SMALL, interRttMs: rtt }, 0, 1).latencyMs).toBe(2)
  })

  it('every baseline is at least the lower bounds at paper-like sizes', () => {
    const topo = paper(40, 4)
    for (const name of BASELINES) {
      for (const root of [0, 39]) {
        const lb = lowerBounds(topo, root, 4 * MB)
        const r = broadcast(name, topo, root, 4 * MB)
        expect(r.completionMs).toBeGreaterThanOrEqual(Math.max(lb.latencyMs, lb.bandwidthMs))
      }
    }
  })
})

describe('paper-like sanity (003 §V)', () => {
  it('1-byte broadcast, 201 peers in 3 clusters: MPICH-like is several times slower than MagPIe-like', () => {
    const topo = paper(201, 3)
    const mpich = broadcast('mpich', topo, 0, 1)
    const magpie = broadcast('magpie', topo, 0, 1)
    expect(mpich.completionMs / magpie.completionMs).toBeGreaterThan(3)
    expect(magpie.completionMs).toBeLessThan(6)
  })

  it('long broadcast: List beats MPICH-like, MagPIe-like and MPICH-G2-like, within (clusters - 1) x 1.1 of the min cut', () => {
    const topo = paper(40, 4)
    const bytes = 8 * MB
    const done = (name: BaselineName): number => broadcast(name, topo, 0, bytes).completionMs
    const list = done('list')
    for (const other of ['mpich', 'magpie', 'mpich-g2'] as const) expect(list).toBeLessThan(done(other))
    expect(list).toBeLessThan(3 * 1.1 * lowerBounds(topo, 0, bytes).bandwidthMs)
  })
})

describe('reduce', () => {
  it('completes at the root only; one message per non-root peer when the array is one segment', () => {
    for (const name of BASELINES) {
      for (const root of ROOTS) {
        const r = reduce(name, SMALL, root, 100)
        expect(r.messages).toBe(N - 1)
        expect(Number.isFinite(r.arrivalMs[root])).toBe(true)
        expect(r.completionMs).toBe(r.arrivalMs[root])
        expect(r.completionMs).toBeGreaterThan(0)
        r.arrivalMs.forEach((t, p) => { if (p !== root) expect(t).toBeNaN() })
      }
    }
  })

  it('segmented arrays combine every peer\'s contribution (the executor checks the count per unit)', () => {
    for (const name of BASELINES) {
      for (const root of ROOTS) {
        const r = reduce(name, SMALL, root, 100_000, { segmentBytes: 100_000 })
        expect(Number.isFinite(r.completionMs)).toBe(true)
        expect(r.bytes).toBeGreaterThanOrEqual(800_000 * (N - 1))
      }
    }
  })

  it('magpie and mpich-g2 send one partial array per wide-area pair into the root cluster; list crosses each link once', () => {
    const rc = 2
    const r = reduce('magpie', SMALL, N - 1, 1000, { headerBytes: 0 })
    for (let a = 0; a < 3; a++) for (let b = 0; b < 3; b++) if (a !== b) expect(r.bytesFromTo?.[a]?.[b]).toBe(b === rc ? 8000 : 0)
    expect(reduce('list', SMALL, 0, 1000, { headerBytes: 0 }).wanBytes).toBe(2 * 8000)
  })

  it('MPICH-like (topology-unaware) is slower than MagPIe-like at paper scale', () => {
    const topo = paper(128, 3)
    expect(reduce('mpich', topo, 0, 65_536).completionMs).toBeGreaterThan(reduce('magpie', topo, 0, 65_536).completionMs)
  })
})

describe('executor', () => {
  it('one message costs uplink + propagation + downlink + CPU, exactly as the network model says', () => {
    const topo = resolveTopology({ clusters: [{ name: 'a', peers: 2 }] })
    const plan = new Plan(65_536)
    plan.send(0, 1, 0, 65_536, 1)
    const r = execute(topo, plan, { kind: 'broadcast', root: 0, headerBytes: 32 })
    expect(r.arrivalMs[1]).toBeCloseTo(2 * 65_568 / 125_000 + 0.15 + 0.005, 9)
  })

  it('a peer forwards a segment only after receiving it (pipelining along a chain)', () => {
    const topo = resolveTopology({ clusters: [{ name: 'a', peers: 3 }] })
    const plan = new Plan(2000_000)
    for (const [from, to] of [[0, 1], [1, 2]]) plan.sendRange(from as number, to as number, 0, 2000_000, 100_000, 1)
    const r = execute(topo, plan, { kind: 'broadcast', root: 0, headerBytes: 0 })
    const hop = 2 * 100_000 / 125_000 + 0.15 + 0.005
    // 20 segments through 0's uplink, then the last one's remaining path to 2 via 1.
    expect(r.arrivalMs[2]).toBeCloseTo(20 * 0.8 + (hop - 0.8) + hop, 6)
    expect(r.arrivalMs[1]).toBeLessThan(r.arrivalMs[2] as number)
  })

  it('a send whose data never arrives is a ScheduleDeadlockError', () => {
    const topo = resolveTopology({ clusters: [{ name: 'a', peers: 3 }] })
    const plan = new Plan(10)
    plan.send(1, 2, 0, 10, 1)
    expect(() => execute(topo, plan, { kind: 'broadcast', root: 0, headerBytes: 0 })).toThrow(expect.objectContaining({ name: 'ScheduleDeadlockError' }))
  })
})

describe('bad input', () => {
  const named = (name: string) => expect.objectContaining({ name })
  it('throws named errors', () => {
    expect(() => broadcast('mpich', SMALL, N, 1)).toThrow(named('InvalidBaselineInputError'))
    expect(() => broadcast('mpich', SMALL, -1, 1)).toThrow(named('InvalidBaselineInputError'))
    expect(() => broadcast('list', SMALL, 1.5, 1)).toThrow(named('InvalidBaselineInputError'))
    expect(() => broadcast('list', SMALL, 0, -1)).toThrow(named('InvalidBaselineInputError'))
    expect(() => broadcast('list', SMALL, 0, 1.5)).toThrow(named('InvalidBaselineInputError'))
    expect(() => reduce('magpie', SMALL, 0, -3)).toThrow(named('InvalidBaselineInputError'))
    expect(() => reduce('magpie', SMALL, 99, 3)).toThrow(named('InvalidBaselineInputError'))
    expect(() => lowerBounds(SMALL, 0, -1)).toThrow(named('InvalidBaselineInputError'))
    expect(() => lowerBounds(SMALL, 19, 1)).toThrow(named('InvalidBaselineInputError'))
    expect(() => broadcast('list', SMALL, 0, 1, { segmentBytes: 0 })).toThrow(named('InvalidBaselineInputError'))
    expect(() => broadcast('mpich', SMALL, 0, 1, { mpichRankOrder: 'sorted' as never })).toThrow(named('InvalidBaselineInputError'))
    expect(() => broadcast('gossip' as BaselineName, SMALL, 0, 1)).toThrow(named('UnknownBaselineError'))
    expect(() => reduce('gossip' as BaselineName, SMALL, 0, 1)).toThrow(named('UnknownBaselineError'))
    expect(() => broadcast('list', { clusters: [] }, 0, 1)).toThrow(named('InvalidTopologyError'))
  })
})
