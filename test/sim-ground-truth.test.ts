/**
 * Reduction results are judged against the ground truth (experiments/sim/analysis.ts):
 * exactly, except products, whose rounding depends on the order of combination.
 */
import { describe, expect, it } from 'vitest'
import { matchesTruth } from '../experiments/sim/analysis.ts'
import { Simulation } from '../experiments/sim/simulation.ts'
import type { Scenario } from '../experiments/sim/scenario.ts'

describe('reduction results against the ground truth', () => {
  it('a product over 64 virtual nodes, combined along the tree, is correct (it was reported wrong, an invariant violation)', () => {
    const scenario: Scenario = {
      name: 'prod-64',
      seed: 1,
      topology: { clusters: [{ name: 'a', peers: 8 }, { name: 'b', peers: 8 }] },
      vnodes: 64,
      until: 3000,
      schedule: [{ at: 1000, do: 'reduce', root: 'p0000', op: 'prod', length: 4, every: 100, count: 5 }]
    }
    const r = new Simulation(scenario).run()
    expect(r.violations).toEqual([])
    expect(r.reductions.map((x) => x.correct)).toEqual([true, true, true, true, true])
  })

  it('matchesTruth: exact but for rounding of products; a factor counted twice or missing is wrong', () => {
    const want = [6e200, 5]
    expect(matchesTruth('prod', want, Float64Array.from([6e200 * (1 + 4e-16), 5]))).toBe(true)
    expect(matchesTruth('prod', want, Float64Array.from([12e200, 5]))).toBe(false)
    expect(matchesTruth('prod', want, Float64Array.from([3e200, 5]))).toBe(false)
    expect(matchesTruth('prod', [Infinity], Float64Array.from([Infinity]))).toBe(true)
    expect(matchesTruth('sum', [10, 5], Float64Array.from([10 * (1 + 4e-16), 5]))).toBe(false)
    expect(matchesTruth('sum', [10, 5], Float64Array.from([10]))).toBe(false)
  })
})
