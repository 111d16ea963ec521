/**
 * A joiner whose contact crashes after handing it a share and before its welcome
 * (overlay/join-attempt.ts `contactDown`): the core outputs `join-failed` when the
 * contact's connection closes, and the driver gives the join up at once (the node drops
 * the core; the simulator counts it in `joinsFailed` and the joiner as crashed). Before,
 * the joiner waited for its host's join timeout (the node's `joinTimeoutMs`, 30 s), and
 * the members the contact had told about it counted it alive: the take-over of the
 * contact's virtual nodes waited the failure-detection timeout for its answer.
 *
 * experiments/scenarios/test-join-contact-crash.json: at seed 8, p0003 joins through
 * p0000 on slow links (200 KB/s, no packet-level interleaving), which hands it [4,8) and
 * crashes with the welcome still on its uplink. Replay with
 * `npm run --silent sim -- experiments/scenarios/test-join-contact-crash.json`.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parseScenario } from '../experiments/sim/scenario.ts'
import { Simulation } from '../experiments/sim/simulation.ts'
import type { SimReport } from '../experiments/sim/report.ts'
import { DEFAULT_FAILURE_DETECTION_TIMEOUT_MS } from '../overlay/config.ts'

/** Runs experiments/scenarios/`name`.json with the simulator's trace on. */
function runTraced (name: string): { r: SimReport, lines: string[] } {
  const scenario = parseScenario(JSON.parse(readFileSync(fileURLToPath(new URL(`../experiments/scenarios/${name}.json`, import.meta.url)), 'utf8')))
  const sim = new Simulation(scenario)
  const lines: string[] = []
  sim.trace = (l) => lines.push(l)
  return { r: sim.run(), lines }
}

/** The join was given up and the two members left served both broadcasts everywhere, once. */
function expectJoinGivenUp (r: SimReport): void {
  expect(r.totals.joinsFailed).toBe(1)
  expect(r.peers.final).toBe(2)
  expect(r.violations).toEqual([])
  expect(r.totals.broadcastsComplete).toBe(2)
  expect(r.totals.lostDeliveries + r.totals.duplicates + r.totals.unownedVnodesAtEnd).toBe(0)
}

describe('a join whose contact crashes before the welcome', () => {
  it('is given up at once, and the contact\'s virtual nodes are served again without waiting for the joiner', () => {
    const { r, lines } = runTraced('test-join-contact-crash')
    // The situation the scenario is for: p0000 was the contact and handed p0003 a share.
    expect(lines.some((l) => l.includes('p0000 ownership handoff-out'))).toBe(true)
    expectJoinGivenUp(r)
    // 700 ms after the crash, far less than the failure-detection timeout: the broadcast
    // reaches the virtual nodes of the contact and of the joiner's share at once (0.8 ms;
    // it took 4.6 s when the take-over waited for the joiner's answer).
    expect(DEFAULT_FAILURE_DETECTION_TIMEOUT_MS).toBeGreaterThan(2000)
    const first = r.broadcasts[0]
    expect(first?.durationMs).toBeLessThan(100)
  })

  it('is given up too when the contact crashes with the join still on its way (the sender is its contact from the first message on)', () => {
    // The same at seed 8, but p0000 crashes at the instant p0003 sends it the join: the join
    // never arrives. The simulator used to make a sender a contact of its receiver only when
    // its message arrived, so nobody told p0003, which waited for ever and counted as running.
    const { r, lines } = runTraced('test-join-in-flight-crash')
    expect(lines.some((l) => l.includes('p0000 ownership handoff-out'))).toBe(false)
    expectJoinGivenUp(r)
  })
})
