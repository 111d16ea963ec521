/**
 * Reductions while peers join, leave and crash, on the core loop (test/core-loop.ts),
 * random per seed: 5-8 peers, 17-46 virtual nodes, short or segmented arrays (with
 * sibling combining), a started or a collective reduction, 1-4 membership changes within
 * a few milliseconds of its start. Every reduction must end with the exact result (each
 * virtual node counted once) within 10 s, and no invariant of the loop may break (one
 * owner per virtual node at every instant among them). A reviewer's version of this found
 * a joiner and a crash take-over owning the same virtual nodes (seed 5020, started).
 *
 *   CHURN_TRIALS=2000 CHURN_FROM=1 npx vitest run test/reduction-churn.test.ts
 */
import { describe, expect, it } from 'vitest'
import { mulberry32, settled, type Loop } from './core-loop.ts'
import { churnEvents, churnFailures, churnSeedsLabel, runEvents } from './churn-events.ts'
import type { Output } from '../overlay/outputs.ts'
import type { CoreInit } from '../overlay/config.ts'

type Reduced = Extract<Output, { type: 'reduced' }>

/** One random trial; null when it passed, else what went wrong. */
function trial (seed: number, collective: boolean): string | null {
  const rnd = mulberry32(seed)
  const vnodes = 17 + Math.floor(rnd() * 30)
  const names = Array.from({ length: 5 + Math.floor(rnd() * 4) }, (_, i) => `p${i}`)
  const long = rnd() < 0.3
  const config: CoreInit = long ? { reduceSegmentBytes: 64, reduceMinSegmentBytes: 64, reduceCombineMinBytes: 8 } : {}
  const loop: Loop = settled(vnodes, { config }, names)
  const length = long ? 40 : 2
  const root = names[Math.floor(rnd() * names.length)] as string
  const others = names.filter((n) => n !== root)
  const events = churnEvents(loop, rnd, others, 5)
  const id = 'c1'
  if (collective) {
    for (const n of names) {
      events.push({ at: n === root ? 0 : rnd() * 20, run: () => { if (!loop.down.has(n) && loop.core(n).state === 'running') loop.input(n, (c) => c.reduceCollective(loop.now, { id, root, op: 'sum', length })) } })
    }
  }
  const t0 = loop.now
  const rid = collective ? id : loop.input(root, (c) => c.reduce(loop.now, { op: 'sum', length }))
  runEvents(loop, events, t0)
  try {
    loop.runUntil(() => loop.outputs('reduced').length > 0 || loop.outputs('reduce-failed').length > 0, 70_000, 'an outcome')
  } catch (e) { return `seed ${seed}: ${String(e)}` }
  if (loop.outputs('reduce-failed').length > 0) return `seed ${seed}: failed at ${loop.now - t0} ms`
  const out = loop.outputs('reduced')[0]?.out as Reduced
  if (out.id !== rid) return `seed ${seed}: result of ${out.id}, not ${rid}`
  if (out.value[0] !== vnodes * (vnodes + 1) / 2 || out.value[1] !== vnodes) return `seed ${seed}: ${out.value[0]},${out.value[1]} for ${vnodes} virtual nodes`
  if (loop.now - t0 > 10_000) return `seed ${seed}: took ${loop.now - t0} ms`
  if (loop.violations.length > 0) return `seed ${seed}: ${loop.violations[0] as string}`
  return null
}

describe('reductions under churn: exact, in time, one owner per virtual node', () => {
  for (const collective of [false, true]) {
    it(`${collective ? 'collective' : 'started'}: ${churnSeedsLabel}`, () => { expect(churnFailures((s) => trial(s, collective))).toEqual([]) })
  }

  it('started, seed 5020 (a joiner and a crash take-over owned the same virtual nodes)', () => {
    expect(trial(5020, false)).toBeNull()
  })
})
