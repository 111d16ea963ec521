import { describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { Simulation } from '../experiments/sim/simulation.ts'
import { ParallelSimulation } from '../experiments/sim/parallel/parallel-simulation.ts'
import { mergeDeliveries } from '../experiments/sim/parallel/merge-results.ts'
import { InvalidScenarioError, parseScenario, type Scenario } from '../experiments/sim/scenario.ts'
import type { SimReport } from '../experiments/sim/report.ts'
import { runScript } from './run-script.ts'

const scenario = (name: string): Scenario => parseScenario(JSON.parse(readFileSync(new URL(`../experiments/scenarios/${name}.json`, import.meta.url), 'utf8')))

/** stable-64 with more to check: a collective reduction, an array reduction, back-to-back broadcasts from random roots. */
function busy (core?: Scenario['core']): Scenario {
  const s = scenario('stable-64')
  return {
    ...s,
    name: 'stable-64-busy',
    ...(core !== undefined ? { core } : {}),
    schedule: [
      ...s.schedule,
      { at: 9000, do: 'broadcast', root: 'random', bytes: 300_000, every: 40, count: 5 },
      { at: 9500, do: 'reduce', root: 'random', op: 'max', length: 64, collective: true },
      { at: 9600, do: 'reduce', root: 'random', op: 'sum', length: 8 }
    ]
  }
}

describe('the simulator on threads (experiments/sim/parallel/)', () => {
  it('on one thread gives the one-thread simulator\'s report byte for byte (the partition, records and merge add nothing)', async () => {
    // The last: a 1 MB broadcast still under way at `until` (the run drains past it, stopping where one thread stops).
    const t = scenario('test-stable-broadcast')
    for (const s of [scenario('stable-64'), t, busy(), { ...t, until: 4502, schedule: t.schedule.slice(0, 3) }]) {
      const one = JSON.stringify(new Simulation(s).run())
      const par = JSON.stringify(await new ParallelSimulation(s, s.seed, 1).run())
      expect(par, s.name).toBe(one)
    }
  }, 120_000)

  it('on two threads: every broadcast complete once everywhere, reductions correct, no violation, and the same report twice', async () => {
    for (const s of [busy(), busy({ treeRootStride: 5 })]) {
      const a = await new ParallelSimulation(s, s.seed, 2).run()
      expect(a.violations, s.name).toEqual([])
      expect(a.totals.broadcasts, s.name).toBe(7)
      expect(a.totals.broadcastsComplete, s.name).toBe(7)
      expect(a.totals.lostDeliveries + a.totals.duplicates, s.name).toBe(0)
      expect(a.totals.reductions, s.name).toBe(3)
      expect(a.totals.reductionsWrong + a.totals.reductionsIncomplete, s.name).toBe(0)
      expect(a.reductions.find((r) => r.collective !== undefined)?.collective?.callers, 'every peer called the collective').toBe(64)
      expect(a.stability.firstStableMs, s.name).not.toBeNull()
      expect(a.simulatedMs, 'quiet soon after until (a collective ends at its root\'s partition only)').toBeLessThan(s.until + 1000)
      // Traffic counted in both partitions: a stable broadcast opens one stream per peer but its root.
      for (const b of a.broadcasts) expect(b.streams, b.id).toBeGreaterThanOrEqual(63)
      const b = await new ParallelSimulation(s, s.seed, 2).run()
      expect(JSON.stringify(b), 'a run is a function of scenario, seed and threads').toBe(JSON.stringify(a))
    }
  }, 120_000)

  it('on two threads stops where the run is quiet, and counts each broadcast\'s traffic once, acknowledgements across partitions included', async () => {
    const s = scenario('test-stable-broadcast')
    const one = new Simulation(s).run()
    const two = await new ParallelSimulation(s, s.seed, 2).run()
    expect(two.simulatedMs, 'quiet at until, as on one thread').toBe(one.simulatedMs)
    expect(two.violations).toEqual([])
    for (const b of two.broadcasts.filter((x) => x.bytes === 1)) {
      // 12 peers in three clusters, stable trees: a chunk and an acknowledgement per tree edge.
      expect(b.streams, b.id).toBe(11)
      expect(b.messages, b.id).toBe(22)
    }
    expect(two.broadcasts.map((b) => b.bytesSent), 'the same bytes as on one thread (the same stable trees)').toEqual(one.broadcasts.map((b) => b.bytesSent))
  }, 60_000)

  it('refuses what it does not take yet, by name', () => {
    const s = scenario('stable-64')
    expect(() => new ParallelSimulation({ ...s, schedule: [{ at: 5000, do: 'crash', peers: ['p0003'] }] }, 1, 2)).toThrow(InvalidScenarioError)
    expect(() => new ParallelSimulation({ ...s, schedule: [{ at: 5000, do: 'leave', peers: ['p0003'] }] }, 1, 2)).toThrow(/'leave' actions/)
    expect(() => new ParallelSimulation(s, 1, 5)).toThrow(/at least 5 clusters/)
    expect(() => new ParallelSimulation(s, 1, 0)).toThrow(/threads must be an integer/)
    expect(() => new ParallelSimulation({ ...s, topology: { ...s.topology, interRttMs: 0 } }, 1, 2)).toThrow(/positive RTT/)
  })
})

describe('npm run sim -- --threads', () => {
  const CLI = 'experiments/sim/cli.ts'
  it('runs a scenario on two threads; the replay command it prints names them', async () => {
    const r = await runScript(CLI, ['experiments/scenarios/stable-64.json', '--threads', '2', '--json', '--no-progress'], 120_000)
    expect(r.code, r.stderr).toBe(0)
    const report = JSON.parse(r.stdout) as SimReport
    expect(report.totals.broadcastsComplete).toBe(2)
    expect(report.replay).toBe('npm run --silent sim -- experiments/scenarios/stable-64.json --seed 1 --threads 2')
  }, 120_000)

  it('refuses, with exit code 2 and a reason, a schedule it does not take, too many threads, or a real network', async () => {
    const churn = await runScript(CLI, ['experiments/scenarios/churn-64.json', '--threads', '2', '--no-progress'])
    expect(churn.code).toBe(2)
    expect(churn.stderr).toMatch(/does not take '(join|leave|crash)' actions yet/)
    const many = await runScript(CLI, ['experiments/scenarios/stable-64.json', '--threads', '65'])
    expect(many.code).toBe(2)
    expect(many.stderr).toContain('threads must be an integer in 1..64')
    const live = await runScript(CLI, ['experiments/scenarios/stable-64.json', '--threads', '2', '--network', 'libp2p'])
    expect(live.code).toBe(2)
    expect(live.stderr).toContain('--threads is for the simulator')
  }, 120_000)
})

describe('merging the partitions\' deliveries', () => {
  const part = (entries: Array<[number, number]>, vnodes = 4): { at: Int32Array, firstMs: Float64Array, delivered: number, duplicates: number, lastDeliveryMs: number } => {
    const at = new Int32Array(vnodes).fill(-1)
    const firstMs = new Float64Array(vnodes).fill(NaN)
    for (const [v, t] of entries) { at[v] = 0; firstMs[v] = t }
    return { at, firstMs, delivered: entries.length, duplicates: 0, lastDeliveryMs: Math.max(0, ...entries.map(([, t]) => t)) }
  }

  it('counts a virtual node once, keeps its first time, and calls one delivered in two partitions a duplicate', () => {
    const { deliveries, violations } = mergeDeliveries([[['b', part([[0, 5], [1, 6]])]], [['b', part([[2, 7], [1, 4]])]]], 4)
    const d = deliveries.get('b')
    expect(d?.delivered).toBe(3)
    expect(d?.duplicates).toBe(1)
    expect(d?.lastDeliveryMs).toBe(7)
    expect(d?.firstMs[1]).toBe(4)
    expect(violations).toEqual(['duplicate delivery of b for virtual node 1 in two partitions'])
  })
})
