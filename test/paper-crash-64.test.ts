/**
 * Simulation test at the paper's scale: 64 peers: crashes during long broadcasts and reductions, and crashed peers rejoining.
 * Zero lost and zero duplicate deliveries, no wrong reduction, no invariant violation.
 */
import { describe, expect, it } from 'vitest'
import { Simulation } from '../experiments/sim/simulation.ts'
import { expectClean, loadScenario } from './paper-scale.ts'

// A run takes 10 s to 3 min on a 2-core machine: the default test timeout is too short.
describe('paper scale', { timeout: 600_000 }, () => {
  it('64 peers: crashes during long broadcasts and reductions, and crashed peers rejoining', () => {
    const r = new Simulation(loadScenario('crash-64')).run()
    expectClean(r)
    expect(r.totals.reductions).toBe(10)
    expect(r.peers.final).toBeLessThan(64)
  })
})
