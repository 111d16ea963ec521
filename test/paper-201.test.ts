/**
 * Simulation test at the paper's scale: 201 peers in 3 clusters (RTT 0.3 ms inside, 6 ms between; 003 §V): stable-state
 * broadcasts (1 byte, 512 KB striped) and a reduction after a cold start.
 * Zero lost and zero duplicate deliveries, no wrong reduction, no invariant violation.
 */
import { describe, expect, it } from 'vitest'
import type { Scenario } from '../experiments/sim/scenario.ts'
import { Simulation } from '../experiments/sim/simulation.ts'
import { expectClean, loadScenario } from './paper-scale.ts'

// A run takes 10 s to 3 min on a 2-core machine: the default test timeout is too short.
describe('paper scale', { timeout: 600_000 }, () => {
  it('201 peers in 3 clusters (RTT 0.3 ms inside, 6 ms between): stable-state broadcasts and a reduction', () => {
    const base = loadScenario('paper-201')
    const scenario: Scenario = {
      ...base,
      until: 14_000,
      schedule: [
        { at: 12_000, do: 'broadcast', root: 'p0000', bytes: 1 },
        { at: 12_050, do: 'broadcast', root: 'p0150', bytes: 1 },
        { at: 12_100, do: 'broadcast', root: 'p0070', bytes: 512 * 1024 },
        { at: 13_000, do: 'reduce', root: 'p0000', op: 'sum', length: 16 }
      ]
    }
    const r = new Simulation(scenario).run()
    expectClean(r)
    expect(r.broadcasts).toHaveLength(3)
    expect(r.reductions).toHaveLength(1)
    expect(r.stability.firstStableMs).not.toBeNull()
    expect(r.stability.firstStableMs as number).toBeLessThan(12_000)
    // Stable trees: no point-to-point fallback, and exactly one copy per peer other than the
    // root: every chunk once. The 512 KB one is striped (one stripe per other cluster,
    // overlay/stripes.ts): peers outside the root's cluster get one stream per stripe.
    for (const b of r.broadcasts) {
      expect(b.fallbackSends).toBe(0)
      const chunks = Math.max(1, Math.ceil(b.bytes / (64 * 1024)))
      expect(b.messages - b.streams, `${b.id}: chunk messages`).toBe(200 * chunks)
      expect(b.stripes).toBe(b.bytes >= 256 * 1024 ? 2 : 1)
      if (b.stripes === 1) expect(b.streams).toBe(200)
      else expect(b.streams).toBeLessThanOrEqual(200 * b.stripes)
    }
  })

})
