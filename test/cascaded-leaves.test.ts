/**
 * Cascaded graceful leaves over skewed links: seven peers, some links 5-20 ms where the
 * rest take 1-2 ms, and up to four peers leaving within 8 ms of each other just after a
 * broadcast, so that a leaver's successor has often left already (a hand-off to it is
 * lost: the successor rule re-homes its ranges at its close) and a slow leaver may not
 * hear of another's leave before its close (it sees it dead). Every virtual node must end
 * owned by one running peer that every view names, the broadcast everywhere exactly once,
 * and each owner must hold the delivered marks of what it owns (sent along by the leavers:
 * test/leave-to-leaver; seeds 76, 128 and 192 lost them to a successor seen dead).
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { mulberry32, settled } from './core-loop.ts'

const VNODES = 29
const NAMES = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6']

function trial (seed: number): string | null {
  const rnd = mulberry32(seed)
  const lat = new Map<string, number>()
  for (const a of NAMES) for (const b of NAMES) if (a < b) lat.set(`${a}${b}`, rnd() < 0.3 ? 5 + Math.floor(rnd() * 15) : 1 + Math.floor(rnd() * 2))
  const loop = settled(VNODES, { latency: (a, b) => lat.get(a < b ? `${a}${b}` : `${b}${a}`) ?? 1 }, NAMES)
  const leavers = ['p1', 'p2', 'p3', 'p4'].filter(() => rnd() < 0.7)
  const at = leavers.map((l) => ({ l, at: rnd() * 8 })).sort((a, b) => a.at - b.at)
  const id = loop.input('p0', (c) => c.broadcast(loop.now, Uint8Array.of(1)))
  const t0 = loop.now
  for (const e of at) { loop.run(Math.max(0, t0 + e.at - loop.now)); if (loop.core(e.l).state === 'running') loop.input(e.l, (c) => c.leave(loop.now)) }
  loop.run(10_000)
  const all = IntervalSet.range(0, VNODES)
  const up = loop.running()
  if (loop.violations.length > 0) return `seed ${seed}: ${loop.violations[0] as string}`
  let owned = IntervalSet.EMPTY
  for (const n of up) owned = owned.union(loop.core(n).ownedSet)
  if (!owned.equals(all)) return `seed ${seed}: running peers own ${owned.toString()}`
  let got = IntervalSet.EMPTY
  for (const d of loop.deliveries(id)) {
    if (got.intersects(d.out.vnodes)) return `seed ${seed}: ${d.out.vnodes.intersection(got).toString()} got the broadcast twice`
    got = got.union(d.out.vnodes)
  }
  if (!got.equals(all)) return `seed ${seed}: the broadcast reached ${got.toString()}`
  for (const n of up) {
    const c = loop.core(n)
    if (!c.streams.delivered.get(id).containsAll(c.ownedSet)) return `seed ${seed}: ${n} owns ${c.ownedSet.toString()}, marks ${c.streams.delivered.get(id).toString()}`
    for (let v = 0; v < VNODES; v++) { const o = c.view.ownerOf(v) as string; if (!up.includes(o) || !loop.core(o).ownedSet.has(v)) return `seed ${seed}: ${n}'s view names ${o} for ${v}` }
  }
  return null
}

describe('cascaded leaves over skewed links', () => {
  it('seeds 1..100, and 76, 128 and 192', () => {
    const bad: string[] = []
    for (const s of [...Array.from({ length: 100 }, (_, i) => i + 1), 128, 192]) { const r = trial(s); if (r !== null) bad.push(r) }
    expect(bad).toEqual([])
  })
})
