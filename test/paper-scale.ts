/**
 * Shared by the paper-scale simulation tests (paper-201, paper-churn-160, paper-crash-64):
 * loading a scenario of experiments/scenarios/ and the checks every such run must pass
 * (zero lost and zero duplicate deliveries, no wrong or incomplete reduction, no invariant
 * violation, every broadcast complete, every virtual node owned at the end). One file per
 * scenario so that the test runner can run them side by side (vitest.config.ts).
 */
import { readFileSync } from 'node:fs'
import { expect } from 'vitest'
import { parseScenario, type Scenario } from '../experiments/sim/scenario.ts'
import type { SimReport } from '../experiments/sim/report.ts'

/** Loads `experiments/scenarios/<name>.json`. */
export function loadScenario (name: string): Scenario {
  return parseScenario(JSON.parse(readFileSync(new URL(`../experiments/scenarios/${name}.json`, import.meta.url), 'utf8')))
}

/** The checks every paper-scale run must pass; a failure names the replay command. */
export function expectClean (r: SimReport): void {
  const where = `replay: ${r.replay}`
  expect(r.violations, where).toEqual([])
  expect(r.totals.lostDeliveries, where).toBe(0)
  expect(r.totals.duplicates, where).toBe(0)
  expect(r.totals.reductionsWrong, where).toBe(0)
  expect(r.totals.reductionsIncomplete, where).toBe(0)
  expect(r.totals.broadcastsComplete, where).toBe(r.totals.broadcasts)
  expect(r.totals.unownedVnodesAtEnd, where).toBe(0)
}
