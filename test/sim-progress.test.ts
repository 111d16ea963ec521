/**
 * Progress of one long simulator run (experiments/harness/sim-progress.ts): the virtual
 * seconds done reach the bar in order and add up to the scenario's length, and watching a
 * run does not change it (the report is byte-identical).
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parseScenario } from '../experiments/sim/scenario.ts'
import { Simulation } from '../experiments/sim/simulation.ts'
import { simProgress } from '../experiments/harness/sim-progress.ts'
import type { ProgressBar } from '../experiments/harness/types.ts'

/** A bar maker that records what it is told. */
function recording (): { makeBar: (total: number, label: string) => ProgressBar, bars: Array<{ total: number, label: string }>, ticks: number[], done: number[] } {
  const rec = { bars: [] as Array<{ total: number, label: string }>, ticks: [] as number[], done: [] as number[] }
  const makeBar = (total: number, label: string): ProgressBar => { rec.bars.push({ total, label }); return { tick: (steps = 1) => { rec.ticks.push(steps) }, done: () => { rec.done.push(1) } } }
  return { makeBar, ...rec }
}

describe('simulator progress', () => {
  it('ticks whole virtual seconds, never past the end, one bar, done once', () => {
    const r = recording()
    const p = simProgress('x', r.makeBar)
    for (const ms of [0, 400, 999, 1000, 3500, 3600, 12_000, 11_000]) p.onProgress(ms, 10_000)
    p.done()
    expect(r.bars).toEqual([{ total: 10, label: 'x' }])
    expect(r.ticks).toEqual([1, 2, 7])
    expect(r.done.length).toBe(1)
  })

  it('a run watched gives the same report as one not watched; the bar is told the virtual time in order', () => {
    // stable-64's cold start, with its first broadcast: about 200 k events.
    const full = parseScenario(JSON.parse(readFileSync(new URL('../experiments/scenarios/stable-64.json', import.meta.url), 'utf8')))
    const scenario = { ...full, until: 8050, schedule: full.schedule.slice(0, 1) }
    const seen: number[] = []
    const watched = new Simulation(scenario).run((ms, until) => { expect(until).toBe(scenario.until); seen.push(ms) })
    const plain = new Simulation(scenario).run()
    expect(JSON.stringify(watched)).toBe(JSON.stringify(plain))
    expect(seen.length).toBeGreaterThanOrEqual(2)
    expect([...seen].sort((a, b) => a - b)).toEqual(seen)
  })
})
