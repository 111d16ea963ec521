/**
 * A simulated run that throws (a bug in the core or the simulator) names its scenario,
 * seed and virtual time, so it can be replayed, as a run that breaks an invariant does.
 */
import { describe, expect, it } from 'vitest'
import { Simulation } from '../experiments/sim/simulation.ts'
import { TreecastCore } from '../overlay/core.ts'
import type { Scenario } from '../experiments/sim/scenario.ts'

describe('a run that throws', () => {
  it('says which scenario, seed and virtual time', () => {
    const scenario: Scenario = { name: 'throws', seed: 7, topology: { clusters: [{ name: 'a', peers: 3 }] }, until: 1000, schedule: [{ at: 500, do: 'broadcast', root: 'p0000', bytes: 10 }] }
    const broadcast = TreecastCore.prototype.broadcast
    const bug = new Error('a bug')
    TreecastCore.prototype.broadcast = function (): never { throw bug }
    let err: unknown
    try {
      new Simulation(scenario).run()
    } catch (e) {
      err = e
    } finally {
      TreecastCore.prototype.broadcast = broadcast
    }
    expect((err as Error).message).toBe('simulation of throws, seed 7, threw at 500 ms of virtual time: Error: a bug')
    expect((err as Error).cause).toBe(bug)
  })
})
