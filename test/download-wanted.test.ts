/**
 * Probes that download only when the bandwidth could matter (`probeDownloadOnDemand`):
 * the predicate (trees/download-wanted.ts), the runner's query-then-download flow
 * (overlay/probe-runner.ts), the tree table judging latency trees alone without a
 * download, and whole simulations with the option on.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { downloadWanted, type DownloadWantedInit } from '../trees/download-wanted.ts'
import { bandwidthEstimate, bandwidthPrefers } from '../trees/parent-rules.ts'
import { newTreeState, type TreeState } from '../trees/tree-state.ts'
import type { ProbeTreeEntry } from '../trees/tree-ops.ts'
import { ProbeRunner, type ProbeHost } from '../overlay/probe-runner.ts'
import { resolveCoreConfig } from '../overlay/config.ts'
import { InvalidConfigError } from '../overlay/errors.ts'
import { BandwidthMemory } from '../overlay/bandwidth-memory.ts'
import type { Message } from '../overlay/messages.ts'
import { parseScenario } from '../experiments/sim/scenario.ts'
import { Simulation } from '../experiments/sim/simulation.ts'
import { TreeNet, attractive } from './tree-net.ts'

const entry = (root: PeerId, est: number, bwChildren = 0): ProbeTreeEntry => ({ root, dist: est < 0 ? -1 : 1, est, latChildren: 0, bwChildren })

function init (trees: Record<string, Partial<TreeState>>, opts: Partial<DownloadWantedInit> = {}): DownloadWantedInit {
  const states = new Map<PeerId, TreeState>()
  for (const [root, patch] of Object.entries(trees)) states.set(root, Object.assign(newTreeState('bw', root, root === 'me', IntervalSet.EMPTY, undefined), patch))
  return { self: 'me', isAlive: (p) => p !== 'dead', bwTree: (root) => states.get(root), bwMaxChildren: 0, tieTolerance: 0.05, ...opts }
}

describe('downloadWanted (trees/download-wanted.ts)', () => {
  it('a candidate connected in no bandwidth tree, or only in trees of dead roots or this peer, is not worth a download', () => {
    const w = init({ r: {}, me: {} })
    expect(downloadWanted(w, 'c', 1, [])).toBe(false)
    expect(downloadWanted(w, 'c', 1, [entry('r', -1)])).toBe(false)
    expect(downloadWanted(w, 'c', 1, [entry('me', 5e6), entry('dead', 5e6)])).toBe(false)
  })

  it('a tree without a parent (or not known yet) takes any connected candidate: download', () => {
    expect(downloadWanted(init({ r: {} }), 'c', 1, [entry('r', 1)])).toBe(true)
    expect(downloadWanted(init({}), 'c', 1, [entry('new', 1)])).toBe(true)
  })

  it('the parent itself: download, so its estimate is refreshed', () => {
    expect(downloadWanted(init({ r: { parent: 'c', metric: 9e6, parentRttMs: 1 } }), 'c', 1, [entry('r', 1e6)])).toBe(true)
  })

  it('with a parent: only when est(c) beats the current estimate (or ties from much nearer)', () => {
    const w = init({ r: { parent: 'p', metric: 10e6, parentRttMs: 6 } })
    expect(downloadWanted(w, 'c', 4, [entry('r', 10e6)])).toBe(false) // a tie, but not from under half the RTT
    expect(downloadWanted(w, 'c', 4, [entry('r', 11e6)])).toBe(true)
    expect(downloadWanted(w, 'c', 2, [entry('r', 10e6)])).toBe(true) // a tie from a third of the RTT
    expect(downloadWanted(w, 'c', 1, [entry('r', 5e6), entry('s', -1)])).toBe(false)
  })

  it('a candidate with bwMaxChildren children is never taken: no download', () => {
    expect(downloadWanted(init({ r: {} }, { bwMaxChildren: 2 }), 'c', 1, [entry('r', 1e6, 2)])).toBe(false)
    expect(downloadWanted(init({ r: {} }, { bwMaxChildren: 2 }), 'c', 1, [entry('r', 1e6, 1)])).toBe(true)
  })

  it('never skips a download the bandwidth rule could act on, whatever the bandwidth measured', () => {
    fc.assert(fc.property(
      fc.double({ min: 0, max: 1e9, noNaN: true }), fc.double({ min: 0, max: 1e9, noNaN: true }), fc.double({ min: 1, max: 1e10, noNaN: true }),
      fc.integer({ min: 0, max: 4 }), fc.boolean(), fc.double({ min: 0.01, max: 100, noNaN: true }), fc.double({ min: 0.01, max: 100, noNaN: true }),
      (metric, candEst, bw, children, hasParent, parentRtt, rtt) => {
        const w = init({ r: hasParent ? { parent: 'p', metric, parentRttMs: parentRtt } : {} })
        const est = bandwidthEstimate(candEst, bw, children, false)
        const acts = bandwidthPrefers(hasParent, hasParent ? metric : -1, est, hasParent ? parentRtt : Infinity, rtt, 0.05)
        if (acts) expect(downloadWanted(w, 'c', rtt, [entry('r', candEst, children)])).toBe(true)
      }))
  })
})

function runner (wants: boolean, memory = new BandwidthMemory(0)): { runner: ProbeRunner, sent: Message[], judged: Array<number | undefined> } {
  const sent: Message[] = []
  const judged: Array<number | undefined> = []
  const host: ProbeHost = {
    candidate: () => 'b',
    baseRttMs: () => Infinity,
    knownBwBytesPerSec: (peer, now) => memory.known(peer, now),
    measuredBw: (peer, bw, now) => { memory.measured(peer, bw, now) },
    send: (_to, msg) => { sent.push(msg) },
    setTimer: () => {},
    judged: (_now, _cand, _rtt, bw) => { judged.push(bw) },
    finished: () => {},
    wantsDownload: () => wants
  }
  return { runner: new ProbeRunner(host, { probeTimeoutMs: 3000, probeBytes: 128 * 1024, probePingCount: 1, probeDownloadOnDemand: true }, 0), sent, judged }
}
const nonceOf = (m: Message | undefined): number => (m as { nonce: number }).nonce

describe('ProbeRunner with probeDownloadOnDemand', () => {
  it('asks for the tree state first; nothing to gain: judged without a bandwidth, no download', () => {
    const h = runner(false)
    h.runner.start(0)
    h.runner.onPong(10, 'b', nonceOf(h.sent[0]))
    expect(h.sent[1]).toEqual({ t: 'probe-req', nonce: expect.any(Number), light: true })
    expect(h.runner.onReply(20, 'b', { t: 'probe-rep', nonce: nonceOf(h.sent[1]), trees: [], padding: 0 })).toBe('light')
    expect(h.judged).toEqual([undefined])
    expect(h.sent).toHaveLength(2)
    expect(h.runner.light).toBe(1)
    expect(h.runner.inFlight).toBe(false)
  })

  it('something to gain: the download follows, timed from its own request, under a new nonce', () => {
    const h = runner(true)
    h.runner.start(0)
    h.runner.onPong(10, 'b', nonceOf(h.sent[0]))
    expect(h.runner.onReply(20, 'b', { t: 'probe-rep', nonce: nonceOf(h.sent[1]), trees: [], padding: 0 })).toBeUndefined()
    expect(h.sent[2]).toEqual({ t: 'probe-req', nonce: expect.any(Number) })
    expect(nonceOf(h.sent[2])).not.toBe(nonceOf(h.sent[1]))
    // A repeated answer to the query is ignored now.
    expect(h.runner.onReply(21, 'b', { t: 'probe-rep', nonce: nonceOf(h.sent[1]), trees: [], padding: 0 })).toBeUndefined()
    expect(h.runner.onReply(50, 'b', { t: 'probe-rep', nonce: nonceOf(h.sent[2]), trees: [], padding: 128 * 1024 })).toBe('download')
    expect(h.judged).toEqual([128 * 1024 / 0.020]) // 30 ms after the request, minus the 10 ms RTT
    expect(h.runner.light).toBe(0)
  })

  it('a bandwidth still known makes a plain light probe: no query', () => {
    const memory = new BandwidthMemory(1000)
    memory.measured('b', 5e6, 0)
    const h = runner(true, memory)
    h.runner.start(100)
    h.runner.onPong(110, 'b', nonceOf(h.sent[0]))
    expect(h.runner.onReply(120, 'b', { t: 'probe-rep', nonce: nonceOf(h.sent[1]), trees: [], padding: 0 })).toBe('light')
    expect(h.judged).toEqual([5e6])
  })

  it('is on by default and validated', () => {
    expect(resolveCoreConfig({}).probeDownloadOnDemand).toBe(true)
    expect(() => resolveCoreConfig({ probeDownloadOnDemand: 'yes' as unknown as boolean })).toThrow(InvalidConfigError)
  })
})

describe('TreeTable.judge without a download', () => {
  it('judges the latency trees only', () => {
    const net = new TreeNet(['r', 'a', 'b'], 4000)
    net.build('r', [['a', 'r']], 10)
    expect(net.t('b').judge(0, 'a', 1, undefined, [attractive('r')])).toBe(1)
    expect(net.t('b').get('lat', 'r')?.pending?.candidate).toBe('a')
    expect(net.t('b').get('bw', 'r')?.pending).toBeNull()
  })
})

describe('simulations with probeDownloadOnDemand', () => {
  for (const name of ['crash-64', 'churn-64', 'test-tree-roots-churn']) {
    it(`${name}: no violation, nothing lost or duplicated, every reduction right, fewer downloads`, async () => {
      const { readFileSync } = await import('node:fs')
      const base = parseScenario(JSON.parse(readFileSync(new URL(`../experiments/scenarios/${name}.json`, import.meta.url), 'utf8')))
      const on = new Simulation({ ...base, core: { ...(base.core ?? {}), probeDownloadOnDemand: true } }).run() // the default, whatever the file says
      expect(on.violations).toEqual([])
      expect(on.totals.lostDeliveries).toBe(0)
      expect(on.totals.duplicates).toBe(0)
      expect(on.totals.broadcastsComplete).toBe(on.totals.broadcasts)
      expect(on.totals.reductionsWrong).toBe(0)
      expect(on.totals.reductionsIncomplete).toBe(0)
      expect(on.stability.firstStableMs).not.toBeNull()
      expect(on.probes.light / on.probes.total).toBeGreaterThan(0.3)
    }, 120_000)
  }
})
