/**
 * The simulator is a pure function of (scenario, seed): the same pair gives a
 * byte-identical report, whatever ran before in the same process; another seed gives
 * another run.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parseScenario, type Scenario } from '../experiments/sim/scenario.ts'
import { Simulation } from '../experiments/sim/simulation.ts'
import type { SimReport } from '../experiments/sim/report.ts'
import { randomScenario } from './swarm.ts'

function small (): Scenario {
  return parseScenario(JSON.parse(readFileSync(fileURLToPath(new URL('../experiments/scenarios/small.json', import.meta.url)), 'utf8')))
}

function runJson (scenario: Scenario, seed: number = scenario.seed): string {
  return JSON.stringify(new Simulation(scenario, seed).run())
}

/** The report without the fields that only echo the seed. */
function withoutSeed (json: string): Omit<SimReport, 'seed' | 'replay'> {
  const { seed: _seed, replay: _replay, ...rest } = JSON.parse(json) as SimReport
  return rest
}

describe('simulator determinism', () => {
  it('the scenario generator is a pure function of the seed', () => {
    expect(JSON.stringify(randomScenario(7))).toBe(JSON.stringify(randomScenario(7)))
    expect(JSON.stringify(randomScenario(7))).not.toBe(JSON.stringify(randomScenario(8)))
  })

  it('same scenario and seed: byte-identical reports (small.json)', () => {
    const a = runJson(small())
    const b = runJson(small())
    expect(b.length).toBe(a.length)
    expect(b === a, 'reports differ; replay: npm run --silent sim -- experiments/scenarios/small.json --json').toBe(true)
  })

  it('same scenario and seed: byte-identical reports, with another run in between (random scenario)', () => {
    const scenario = randomScenario(3)
    const a = runJson(scenario)
    runJson(randomScenario(4))
    const b = runJson(structuredClone(scenario))
    expect(b === a, 'reports differ for randomScenario(3)').toBe(true)
  })

  it('another seed: another run (random roots, random churn, probing)', () => {
    // Root "random", leaves/crashes by count: the choices come from the seeded stream.
    const scenario: Scenario = {
      ...small(),
      schedule: [
        { at: 1500, do: 'broadcast', root: 'random', bytes: 1000, every: 200, count: 5 },
        { at: 1600, do: 'reduce', op: 'sum', length: 3 },
        { at: 2000, do: 'crash', count: 2 },
        { at: 2500, do: 'leave', count: 2 },
        { at: 3500, do: 'join', peers: 'left', rejoin: true }
      ]
    }
    const a = runJson(scenario, 1)
    const b = runJson(scenario, 2)
    expect(JSON.parse(a).seed).toBe(1)
    expect(JSON.parse(b).seed).toBe(2)
    expect(withoutSeed(b)).not.toEqual(withoutSeed(a))
    // And each is reproducible.
    expect(runJson(scenario, 2) === b).toBe(true)
  })

  it('another seed: another run of the same random scenario', () => {
    const scenario = randomScenario(5)
    expect(withoutSeed(runJson(scenario, 5))).not.toEqual(withoutSeed(runJson(scenario, 6)))
  })
})
