/**
 * Report figures summed over peers count every core that ran, not only those still
 * running at the end: a crash at the end of a run does not take back the probes its peers
 * had started.
 */
import { describe, expect, it } from 'vitest'
import { Simulation } from '../experiments/sim/simulation.ts'
import type { Scenario } from '../experiments/sim/scenario.ts'

const base: Omit<Scenario, 'schedule'> = { name: 'probes-gone', seed: 3, topology: { clusters: [{ name: 'a', peers: 3 }, { name: 'b', peers: 3 }] }, until: 4000 }

describe('report: probes of peers that are gone', () => {
  it('counts the probes of peers that crashed or left before the end', () => {
    const quiet = new Simulation({ ...base, schedule: [] }).run()
    // The same run, with half the peers crashing at its very end.
    const crashed = new Simulation({ ...base, schedule: [{ at: 4000, do: 'crash', count: 3 }] }).run()
    expect(quiet.probes.total).toBeGreaterThan(0)
    expect(crashed.peers.final).toBe(3)
    expect(crashed.probes).toEqual(quiet.probes)
  })
})
