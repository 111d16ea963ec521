/**
 * steadyProbeIntervalMs: 0 keeps 003's schedule (no probe once trees are built); a positive
 * interval makes every idle peer probe once per interval, and trees stay correct.
 */
import { describe, expect, it } from 'vitest'
import { parseScenario, type Scenario } from '../experiments/sim/scenario.ts'
import { Simulation } from '../experiments/sim/simulation.ts'

function scenario (steadyProbeIntervalMs: number): Scenario {
  return parseScenario({
    name: 'steady', seed: 3,
    topology: { clusters: [{ name: 'a', peers: 4 }, { name: 'b', peers: 4 }], intraRttMs: 0.3, interRttMs: 10 },
    vnodes: 32,
    until: 20_000,
    core: { steadyProbeIntervalMs },
    schedule: [{ at: 15_000, do: 'broadcast', root: 'p0001', bytes: 1 }, { at: 16_000, do: 'broadcast', root: 'p0002', bytes: 1_000_000 }]
  })
}

describe('steady probing', () => {
  it('off by default: no probe after the trees are built; on: about one per peer and interval', () => {
    const off = new Simulation(scenario(0)).run()
    const on = new Simulation(scenario(1000)).run()
    expect(off.violations).toEqual([])
    expect(on.violations).toEqual([])
    expect(on.totals.broadcastsComplete).toBe(2)
    expect(on.totals.duplicates).toBe(0)
    // 8 peers idle for most of 20 s probe roughly 8 x 18 more times (a steady probe that
    // moves a peer can start a short burst: 173 more in all with the default config).
    expect(on.probes.total - off.probes.total).toBeGreaterThan(8 * 12)
    expect(on.probes.total - off.probes.total).toBeLessThan(8 * 24)
  })
})
