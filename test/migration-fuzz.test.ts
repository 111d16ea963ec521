/**
 * Ownership migrations under churn, on the core loop (test/core-loop.ts): random per seed,
 * 5-8 founding peers, 17-46 virtual nodes, either join policy, 2-5 migration patterns at
 * random times within 30 ms among six 1-byte broadcasts from random running peers and one
 * reduction: bursts of joins through one contact (which may leave just after), two joins
 * through two contacts at once, a leave whose successor crashes just after, crashes and
 * leaves followed by a rejoin (a new incarnation) asking for the old ranges, sometimes
 * restarted twice within a few milliseconds through two contacts, mostly before the crash
 * is noticed, and a leave followed by a rejoin asking for a wide range (several owners by
 * then) through a contact that may leave at once. A joiner still joining after 2 s (its
 * contact crashed before the welcome) gives up, as the node's joinTimeoutMs does.
 * Checked: one owner per virtual node at every instant (the loop), every broadcast whose
 * root did not crash at every virtual node once per lineage, the reduction exact, and once
 * quiet, every virtual node owned by one running peer that every running peer's view names.
 *
 * Seeds 1688, 1838 and 2085 once failed: a joiner whose contact crashed or left just after
 * the welcome missed a hand-off record fanned out while its sender had not heard of the
 * joiner, and its view named the previous owner for good (overlay/join-announce.ts `gone`).
 *
 *   MIGRATION_TRIALS=500 MIGRATION_FROM=1 npx vitest run test/migration-fuzz.test.ts
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { successorOf } from '../virtual-nodes/assignment.ts'
import { mulberry32, settled, type Loop } from './core-loop.ts'

const FROM = Number(process.env.MIGRATION_FROM ?? 1)
const TRIALS = Number(process.env.MIGRATION_TRIALS ?? 40)
/** The current trial's trace (see `trial`). */
let dbg: ((loop: Loop, msg: string) => void) | undefined

/** Peers crashed so far in the current trial, with when (a broadcast whose root crashed may be lost). */
const crashes: Array<{ name: string, at: number }> = []

/** Crash of `name`'s current core: its in-flight messages are lost, the others see the close of that incarnation after 20 ms. */
function crash (loop: Loop, name: string): void {
  dbg?.(loop, `crash ${name}`)
  crashes.push({ name, at: loop.now })
  const inc = (loop.core(name) as unknown as { incarnation: number }).incarnation
  loop.down.add(name)
  loop.schedule(loop.now + 20, () => { for (const n of loop.cores.keys()) if (n !== name && !loop.down.has(n)) loop.input(n, (c) => c.peerDown(loop.now, name, inc)) })
}

/** `name` comes back as incarnation `inc` through `contact`, asking for `want`. */
function restart (loop: Loop, name: string, contact: string, inc: number, want: IntervalSet | undefined): void {
  dbg?.(loop, `restart ${name} inc ${inc} via ${contact} want ${want?.toString() ?? '-'}`)
  loop.down.delete(name)
  loop.gracefullyGone.delete(name)
  loop.cores.delete(name)
  loop.create(name)
  loop.input(name, (c) => c.join(loop.now, contact, { incarnation: inc, ...(want !== undefined && !want.isEmpty ? { want } : {}) }))
  giveUpJoin(loop, name)
}

/** As the node does (joinTimeoutMs, shorter here): a core still joining after 2 s (its contact crashed before the welcome) is dropped, its connections closed. */
function giveUpJoin (loop: Loop, name: string): void {
  const core = loop.core(name)
  loop.schedule(loop.now + 2000, () => { if (loop.cores.get(name) === core && core.state === 'joining' && !loop.down.has(name)) { dbg?.(loop, `join of ${name} given up`); crash(loop, name) } })
}

/** A new peer `name` joins through `contact`. */
function join (loop: Loop, name: string, contact: string): void {
  loop.create(name)
  loop.input(name, (c) => c.join(loop.now, contact))
  giveUpJoin(loop, name)
}

/** One random trial; null when it passed, else what went wrong. `debug` is told each event as it runs. */
export function trial (seed: number, debug?: (loop: Loop, msg: string) => void): string | null {
  dbg = debug
  crashes.length = 0
  const rnd = mulberry32(seed)
  const vnodes = 17 + Math.floor(rnd() * 30)
  const names = Array.from({ length: 5 + Math.floor(rnd() * 4) }, (_, i) => `p${i}`)
  const mostLoaded = rnd() < 0.3
  const loop = settled(vnodes, mostLoaded ? { config: { joinPolicy: 'most-loaded' } } : {}, names)
  const t0 = loop.now
  const incs = new Map<string, number>()
  const ids: string[] = []
  const roots = new Map<string, { root: string, at: number }>()
  let joiners = 0
  const usable = (): string[] => loop.running().filter((n) => loop.core(n).state === 'running')
  const busy = new Set<string>()
  const plan: Array<{ at: number, run: () => void }> = []
  const changes = 2 + Math.floor(rnd() * 4)
  for (let k = 0; k < changes; k++) {
    const kind = Math.floor(rnd() * 7)
    const at = rnd() * 30
    const d1 = rnd()
    const d2 = rnd()
    const d3 = rnd()
    const who = rnd()
    plan.push({
      at,
      run: () => {
        const up = usable().filter((n) => !busy.has(n))
        if (up.length < 4) return
        const x = up[Math.floor(who * up.length)] as string
        debug?.(loop, `event ${kind} at ${x}`)
        switch (kind) {
          case 0: { // joins through one contact, the contact may leave just after
            const n = 1 + Math.floor(d1 * 3)
            for (let i = 0; i < n; i++) join(loop, `j${joiners++}`, x)
            if (d2 < 0.5) { busy.add(x); loop.schedule(loop.now + d3 * 4, () => { if (!loop.down.has(x) && loop.core(x).state === 'running') loop.input(x, (c) => c.leave(loop.now)) }) }
            break
          }
          case 1: { // a leave whose successor crashes just after
            const succ = successorOf(x, up)
            if (succ === undefined) return
            busy.add(x); busy.add(succ)
            loop.input(x, (c) => c.leave(loop.now))
            loop.schedule(loop.now + d1 * 6, () => { if (!loop.down.has(succ)) crash(loop, succ) })
            break
          }
          case 2: case 3: { // a crash, then a rejoin asking for the old ranges (sometimes twice, fast)
            const old = loop.core(x).ownedSet
            busy.add(x)
            crash(loop, x)
            const inc = (incs.get(x) ?? 0) + 1
            incs.set(x, inc + 1)
            loop.schedule(loop.now + 1 + d1 * (kind === 2 ? 10 : 60), () => {
              const cs = usable().filter((n) => n !== x)
              if (cs.length === 0) return
              restart(loop, x, cs[Math.floor(d2 * cs.length)] as string, inc, old)
              if (d3 < 0.5) {
                loop.schedule(loop.now + d3 * 6, () => {
                  const cs2 = usable().filter((n) => n !== x)
                  crash(loop, x)
                  restart(loop, x, cs2[Math.floor(d1 * cs2.length)] as string, inc + 1, old)
                })
              }
            })
            break
          }
          case 4: { // a leave, then a rejoin asking for the old ranges
            const old = loop.core(x).ownedSet
            busy.add(x)
            loop.input(x, (c) => c.leave(loop.now))
            const inc = (incs.get(x) ?? 0) + 1
            incs.set(x, inc)
            loop.schedule(loop.now + 5 + d1 * 100, () => {
              if (loop.core(x).state !== 'left') return
              const cs = usable().filter((n) => n !== x)
              restart(loop, x, cs[Math.floor(d2 * cs.length)] as string, inc, old)
            })
            break
          }
          case 6: { // a leave, then a rejoin asking for a wide range (several owners by then), through a peer that may leave at once
            const lo = Math.floor(d1 * vnodes / 2)
            const want = IntervalSet.range(lo, Math.min(vnodes, lo + 1 + Math.floor(d2 * vnodes / 2)))
            busy.add(x)
            loop.input(x, (c) => c.leave(loop.now))
            const inc = (incs.get(x) ?? 0) + 1
            incs.set(x, inc)
            loop.schedule(loop.now + 2 + d3 * 30, () => {
              if (loop.core(x).state !== 'left') return
              const cs = usable().filter((n) => n !== x && !busy.has(n))
              if (cs.length < 4) return
              const contact = cs[Math.floor(d2 * cs.length)] as string
              restart(loop, x, contact, inc, want)
              if (d1 < 0.3) { busy.add(contact); loop.input(contact, (c) => c.leave(loop.now)) }
            })
            break
          }
          default: { // two joins through two contacts at once
            const y = up[Math.floor(d1 * up.length)] as string
            for (const c of [x, y]) join(loop, `j${joiners++}`, c)
          }
        }
      }
    })
  }
  for (let b = 0; b < 6; b++) {
    const at = b * 8 + rnd() * 8
    const r = rnd()
    plan.push({ at, run: () => { const up = usable(); if (up.length === 0) return; const root = up[Math.floor(r * up.length)] as string; const id = loop.input(root, (c) => c.broadcast(loop.now, Uint8Array.of(b))); ids.push(id); roots.set(id, { root, at: loop.now }); debug?.(loop, `broadcast ${id}`) } })
  }
  const redRoot = names[Math.floor(rnd() * names.length)] as string
  const redAt = rnd() * 30
  let redId: string | undefined
  busy.add(redRoot)
  plan.push({ at: redAt, run: () => { redId = loop.input(redRoot, (c) => c.reduce(loop.now, { op: 'sum', length: 2 })); debug?.(loop, `reduce ${redId} at ${redRoot}`) } })
  for (const e of plan.sort((a, b) => a.at - b.at)) { loop.run(Math.max(0, t0 + e.at - loop.now)); e.run() }
  // Broadcasts whose root crashed after starting them may be lost: not counted. A planned crash may come up to 67 ms
  // after the last planned event (a restart's second crash), so this is asked as the loop runs (seeds 8088 and 33354
  // counted a broadcast its root crashed in the same millisecond); later crashes (joins given up) excuse nothing.
  const planEnd = loop.now
  const lost = (id: string): boolean => { const r = roots.get(id); return crashes.some((c) => c.name === r?.root && c.at >= r.at && c.at <= planEnd + 100) }
  const all = IntervalSet.range(0, vnodes)
  const reached = (id: string): IntervalSet => loop.deliveries(id).reduce((s, d) => s.union(d.out.vnodes), IntervalSet.EMPTY)
  try {
    loop.runUntil(() => ids.every((id) => lost(id) || reached(id).equals(all)) && loop.outputs('reduced').length + loop.outputs('reduce-failed').length > 0, 15_000, 'every broadcast everywhere, the reduction')
  } catch (e) { return `seed ${seed}: ${String(e)}: ${ids.filter((id) => !lost(id)).map((id) => `${id} ${reached(id).toString()}`).join(', ')}` }
  loop.run(15_000)
  const kept = ids.filter((id) => !lost(id))
  ids.length = 0
  ids.push(...kept)
  if (loop.violations.length > 0) return `seed ${seed}: ${loop.violations[0] as string}`
  const red = loop.outputs('reduced')[0]?.out
  if (red?.type !== 'reduced' || red.id !== redId) return `seed ${seed}: the reduction failed`
  if (red.value[0] !== vnodes * (vnodes + 1) / 2 || red.value[1] !== vnodes) return `seed ${seed}: reduction ${red.value[0] ?? '?'},${red.value[1] ?? '?'} for ${vnodes} virtual nodes`
  const epoch = new Map<number, number>()
  const deliveredIn = new Map<string, { epoch: number, peer: string, at: number }>()
  for (const l of loop.log) {
    if (l.out.type === 'ownership' && l.out.reason === 'takeover') for (const v of l.out.added.values()) epoch.set(v, (epoch.get(v) ?? 0) + 1)
    if (l.out.type !== 'deliver' || !ids.includes(l.out.id)) continue
    for (const v of l.out.vnodes.values()) {
      const key = `${l.out.id}@${v}`
      const prev = deliveredIn.get(key)
      const e = epoch.get(v) ?? 0
      if (prev !== undefined && prev.epoch === e) return `seed ${seed}: ${l.out.id} at virtual node ${v}: at ${prev.peer} (t=${prev.at}) and again at ${l.peer} (t=${l.at}) in one lineage`
      deliveredIn.set(key, { epoch: e, peer: l.peer, at: l.at })
    }
  }
  const up = loop.running()
  let covered = IntervalSet.EMPTY
  for (const n of up) covered = covered.union(loop.core(n).ownedSet)
  if (!covered.equals(all)) return `seed ${seed}: running peers own ${covered.toString()} of ${all.toString()} once quiet`
  for (const n of up) {
    for (const m of up) {
      const own = loop.core(m).ownedSet
      for (const v of own.values()) if (loop.core(n).view.ownerOf(v) !== m) return `seed ${seed}: ${n}'s view names ${loop.core(n).view.ownerOf(v) ?? '?'} for ${v}, owned by ${m}`
    }
  }
  return null
}

describe('ownership migrations under churn', () => {
  it(`seeds ${FROM}..${FROM + TRIALS - 1}`, () => {
    const bad: string[] = []
    for (let s = FROM; s < FROM + TRIALS; s++) { const r = trial(s); if (r !== null) bad.push(r) }
    expect(bad).toEqual([])
  }, Math.max(120_000, TRIALS * 500))

  it('seeds 1688, 1838 and 2085 (a joiner whose contact crashed or left just after the welcome)', () => {
    expect([1688, 1838, 2085].map((s) => trial(s))).toEqual([null, null, null])
  })

  // Seed 3846: a peer left, its close reached a joiner before the "left" fact (so it was
  // suspected, then outdated by its next incarnation's join), and the joiner's broadcast
  // part to it was never sent again: [3,6) never got it.
  it('seed 3846 (a leaver\'s close seen before its leave, then its rejoin)', () => {
    expect(trial(3846)).toBeNull()
  })

  // Seed 3181: j0 restarted twice within 3 ms (via p6, then p0). p0, asked by p6 for a
  // share for j0's incarnation 1 (most-loaded), handed it [3,5) at v1000; that hand-off
  // reached incarnation 2, whose welcome from p0 carried p0's take-over of [3,5) at v2000,
  // so j0 re-claimed [3,5) at v3000 and told everyone. p2, learning of incarnation 2 from
  // p0 just before that record came, took incarnation 1's ranges over ([3,5) with [13,15):
  // v5000) and told p0 alone, whose own claim was pending. p0 passed it on to j0, which
  // yielded [3,5) to p0 telling p0 only: every other view named j0 at v3000 for good. A
  // peer that yields now tells every member the record that beat it (ownership-engine.ts
  // `spread`).
  it('seed 3181 (a yield to a take-over only one view guessed, after a double restart)', () => {
    expect(trial(3181)).toBeNull()
  })

  // Seed 7726: p0 handed [1,2) to j2, which had just left; p3 re-homed it to p0 (v1001).
  // p0 crashed: p3 took [0,2) over for p1 at v2001 and told p1 alone, while p1 claimed it
  // at v1000 (p0's hand-off record never reached it). j0, re-homing [1,2) from j2 to j3
  // (v1001) as j2's connection went, answered the claim with that; p1 settled and owned
  // [1,2) at v2001 without a word: j0 named j3 for good. A claim that settles under a newer
  // record than it stated now tells the members that record.
  it('seed 7726 (a claim settled under a newer guess than a member\'s, after a hand-off to a leaver)', () => {
    expect(trial(7726)).toBeNull()
  })

  // Seed 32579: j5 joined through j0, which handed it [11,12) and fanned that out before it
  // had heard of j2 (who joined through p4, which left at once); j5's welcome snapshot and
  // announcements missed j2 too, so j2 never heard of j5 or of the hand-off, and when j0
  // left, j2's view re-homed [11,12) to j1 for good. A recent joiner now tells each member
  // it learns of about itself and what it owns (overlay/join-announce.ts, learnt).
  it('seed 32579 (a joiner and a member that joined meanwhile, each unknown to the other\'s contact)', () => {
    expect(trial(32579)).toBeNull()
  })

  // Seed 30449: p4 forwarded a reduction's start to p2, which was leaving and passed it on to
  // the new owner; p2's acknowledgement came after its "left" fact, so p4 took it as a promise
  // of a partial, and when p2 came back as a new incarnation, p4 waited for that partial for
  // the whole of reduceMaxDurationMs. Acknowledgements from peers known gone are ignored now.
  it('seed 30449 (an acknowledgement that crossed its sender\'s leave, then its rejoin)', () => {
    expect(trial(30449)).toBeNull()
  })

  // Seed 32953: p5 crashed and restarted twice before the crash was noticed; p4 and p2,
  // learning of the restarts, took p5's [19,22) over for p6, which was leaving and never
  // heard of it. j0 got that record (p2's answer to its sync) before it knew p6 was leaving,
  // and p0's and p1's take-overs naming j0 itself tied with it and lost by peer id. p6's
  // close reached j0 before its "left" fact, so j0 waited on it as a suspect; p6 rejoined
  // before the grace ended, that close was dropped as stale, and j0 never re-homed what its
  // view still named p6#0 for: nobody owned [19,22). A "left" fact after the close, or a
  // rejoin before it, now handles the leaver as gone for good (test/leaver-close-order).
  it('seed 32953 (a leaver\'s close seen before its leave, then its rejoin, with a take-over guessed for it)', () => {
    expect(trial(32953)).toBeNull()
  })

  // Seed 9170: p4 handed [16,19) to p7 (just restarted) and crashed before the hand-off, and
  // its fan-out to p1, arrived; p5 (p4's successor, rejoined since) had the record from its
  // welcome, p7 and p1 did not. When p4 was found dead, p7 and p1 took [16,20) over for p5 at
  // v1000 and told p5, whose view named p7 at v1000, winning the tie: p5 stayed silent, p7
  // named p5, nobody owned [16,19). A record naming a peer that loses in its view is now
  // answered with what beat it.
  it('seed 9170 (a hand-off lost with its crashed sender, the successor\'s guess losing the tie to it)', () => {
    expect(trial(9170)).toBeNull()
  })

  // Seeds 8088 and 33354: a restarted peer broadcast, and the restart's second crash, in the same
  // millisecond but after the last planned event, lost it; the harness counted it all the same.
  it('seeds 8088 and 33354 (a broadcast whose root crashes just after the last planned event)', () => {
    expect([8088, 33354].map((s) => trial(s))).toEqual([null, null])
  })

  // Seed 39412: j0 crashed holding [3,5); p0 and j2 both claimed it at v2000, and orphan re-homes
  // (+1) of a leaver's guess gave views j2 v2001 and p0 v2001. Each claim settled naming the
  // other, so p0 and j2 handed [3,5) to each other ("lost" hand-offs that crossed). j2, whose view
  // named the sender p0 (its own hand-off's record), took p0's hand-off for one whose record lost a
  // tie and reclaimed [3,5) at v3001, owning it, while p0 owned it on j2's hand-off. A peer with its
  // own hand-off to the sender still unacknowledged there no longer reclaims.
  it('seed 39412 (two settled claims handing the same ranges to each other)', () => {
    expect(trial(39412)).toBeNull()
  })

  // Seed 50695: p4 crashed and restarted (incarnation 1); p3, leaving before it heard, handed [9,10) to p4#0, and p4#1 took
  // it. Views learning of the restart took p4#0's ranges over for p5 (v2000), which left just after. p4 applied that record
  // with p5 gone: the orphan re-home named p6 (v2001) but p4 kept [9,10), and p6's claim of it settled: two owners. A record
  // naming a peer gone that beats what this peer owns now yields it to the successor (test/orphan-yield).
  it('seed 50695 (a take-over of a restarted peer\'s old incarnation, its successor gone, beating what the new one was handed)', () => {
    expect(trial(50695)).toBeNull()
  })

  // Seed 64537: j0 left holding 10 (p2's hand-off, v1000). As its connection closed, views re-homed it (+1): p7, which had not
  // heard of j1 yet, to p0 (a guess told nobody), the rest and p2 (whose hand-off to j0 went unacknowledged) to j1, which owned
  // it and announced j1 v1001. That record tied with p7's guess and lost by peer id: p7 (and p3, welcomed by p7) named p0 for
  // good. A record losing to a guess of this view now tells the guessed successor, which claims it (test/guess-tie-told).
  it('seed 64537 (a leaver\'s range re-homed to different successors, the real owner\'s record losing the tie to a guess)', () => {
    expect(trial(64537)).toBeNull()
  })

  // Seed 72172 failed the same way before that fix ("j5's view names j2 for 15, owned by j1").
  it('seed 72172 (the same, among joiners)', () => {
    expect(trial(72172)).toBeNull()
  })

  // Seed 126787: p0 had sent its partial of reduction p5/0.1 up to p1, which crashed and rejoined; p4 crashed with p6's
  // partial (p6 had sent it to p4). The root re-routed [24,27) through p1's new incarnation, p1 through p0, p0 to p6, which
  // acknowledged as away, and p0, all sent up, acknowledged p1 normally: p1 waited for p0, and the root for p1, as long as
  // they lived (past the 15 s). A start that reaches a record all sent up is now acknowledged as away (test/reduction).
  it('seed 126787 (a reduction start re-routed to a peer that had sent all its partial up)', () => {
    expect(trial(126787)).toBeNull()
  })

  // Seed 146785: p5 left (its successor p6 crashed after acknowledging, the answer lost with it, so p5 drained on); p1 then handed [8,10)
  // to the joiner j0 (v1000), and nobody fans records out to a leaver: p5's view kept p1 v0. When p1 crashed, p5 took [5,10) over for
  // p2 at v1000 and told p2 alone, which had left too: p2 v1000 tied j0's record and won by peer id. p2, claiming nothing, passed it on to
  // its recent joiner j1, which re-homed it to p3 (v1001) and named p3 for good. A leaving contact now passes nothing on to its joiners
  // (test/join-announce). Seed 162383 is the same (p3's take-over of p2's [8,12) told to p5, passed on to j2, which named p6 for [10,12)).
  it('seeds 146785 and 162383 (a leaver\'s stale take-over told to a leaving successor, passed on to its joiner)', () => {
    expect([146785, 162383].map((s) => trial(s))).toEqual([null, null])
  })
})
