/**
 * Broadcasts while peers join, leave and crash, on the core loop (test/core-loop.ts), which
 * loses a crashed peer's messages in flight (the simulator delivers them): random per
 * seed, 5-8 peers, 17-46 virtual nodes, a 1-byte broadcast on the latency tree or a
 * 300 KB one in chunks on the bandwidth tree, 1-4 membership changes within a few
 * milliseconds of its start (never of its root). Every virtual node must get it within 10
 * s, at a peer that owns it then, and again only in a new lineage (taken over after a
 * crash, which lost what the application had there); no invariant of the loop may break
 * (one owner per virtual node at every instant among them).
 *
 *   CHURN_TRIALS=2000 CHURN_FROM=1 npx vitest run test/broadcast-churn.test.ts
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { mulberry32, settled, type Loop } from './core-loop.ts'
import { churnEvents, churnFailures, churnSeedsLabel, runEvents } from './churn-events.ts'


/** One random trial; null when it passed, else what went wrong. */
function trial (seed: number, long: boolean): string | null {
  const rnd = mulberry32(seed)
  const vnodes = 17 + Math.floor(rnd() * 30)
  const names = Array.from({ length: 5 + Math.floor(rnd() * 4) }, (_, i) => `p${i}`)
  const loop: Loop = settled(vnodes, {}, names)
  const root = names[Math.floor(rnd() * names.length)] as string
  const others = names.filter((n) => n !== root)
  const events = churnEvents(loop, rnd, others, long ? 40 : 5)
  const t0 = loop.now
  const payload = new Uint8Array(long ? 300 * 1024 : 1).map((_, i) => i & 0xff)
  const id = loop.input(root, (c) => c.broadcast(loop.now, payload))
  runEvents(loop, events, t0)
  const reached = (): IntervalSet => loop.deliveries(id).reduce((all, d) => all.union(d.out.vnodes), IntervalSet.EMPTY)
  try {
    loop.runUntil(() => reached().equals(IntervalSet.range(0, vnodes)), 10_000, 'every virtual node reached')
    loop.run(2000)
  } catch (e) { return `seed ${seed}: ${String(e)}: ${reached().toString()}` }
  // Per virtual node, in output order: again only in a new lineage, begun when a peer took
  // it over after a crash (its application state went with the crashed peer), as the
  // simulator's checker counts (experiments/sim/checker.ts).
  const epoch = new Map<number, number>()
  const deliveredIn = new Map<number, { epoch: number, peer: string, at: number }>()
  for (const l of loop.log) {
    if (l.out.type === 'ownership' && l.out.reason === 'takeover') for (const v of l.out.added.values()) epoch.set(v, (epoch.get(v) ?? 0) + 1)
    if (l.out.type !== 'deliver' || l.out.id !== id) continue
    if (l.out.chunks.reduce((n, c) => n + c.length, 0) !== payload.length) return `seed ${seed}: ${l.peer} got a payload of another size`
    for (const v of l.out.vnodes.values()) {
      const prev = deliveredIn.get(v)
      const e = epoch.get(v) ?? 0
      if (prev !== undefined && prev.epoch === e) return `seed ${seed}: virtual node ${v} got it at ${prev.peer} (t=${prev.at}) and again at ${l.peer} (t=${l.at}) in one lineage`
      deliveredIn.set(v, { epoch: e, peer: l.peer, at: l.at })
    }
  }
  if (loop.violations.length > 0) return `seed ${seed}: ${loop.violations[0] as string}`
  return null
}

describe('broadcasts under churn: every virtual node once per lineage, at its owner', () => {
  for (const long of [false, true]) {
    it(`${long ? '300 KB, bandwidth tree' : '1 byte, latency tree'}: ${churnSeedsLabel}`, () => { expect(churnFailures((s) => trial(s, long))).toEqual([]) })
  }
})
