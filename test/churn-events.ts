/**
 * Random membership changes for the core loop's churn tests (test/broadcast-churn,
 * test/reduction-churn): what they draw, in the order they draw it, is part of every seed.
 */
import type { Loop } from './core-loop.ts'

/** Something to do at `at` ms after the start. */
export interface TimedEvent { readonly at: number, readonly run: () => void }

/**
 * 1-4 changes among `others`: joins through one of them, leaves, crashes (each peer leaves
 * or crashes at most once), at random times in [0, spreadMs).
 */
export function churnEvents (loop: Loop, rnd: () => number, others: readonly string[], spreadMs: number): TimedEvent[] {
  const events: TimedEvent[] = []
  const used = new Set<string>()
  let joiners = 0
  const changes = 1 + Math.floor(rnd() * 4)
  for (let k = 0; k < changes; k++) {
    const kind = rnd()
    const victim = others[Math.floor(rnd() * others.length)] as string
    const at = rnd() * spreadMs
    if (kind < 0.33) {
      events.push({
        at,
        run: () => {
          const j = `j${joiners++}`
          const core = loop.create(j)
          loop.input(j, (c) => c.join(loop.now, victim))
          // As the node does (joinTimeoutMs, 30 s; shorter here): a joiner still joining after 2 s (its contact crashed before the welcome) drops its core and connections.
          loop.schedule(loop.now + 2000, () => { if (loop.cores.get(j) === core && core.state === 'joining' && !loop.down.has(j)) loop.crash(j) })
        }
      })
    } else if (!used.has(victim)) {
      used.add(victim)
      if (kind < 0.66) events.push({ at, run: () => { if (!loop.down.has(victim) && loop.core(victim).state === 'running') loop.input(victim, (c) => c.leave(loop.now)) } })
      else events.push({ at, run: () => { loop.crash(victim) } })
    }
  }
  return events
}

/** Runs `events` in time order, each `at` ms after `t0`. */
export function runEvents (loop: Loop, events: readonly TimedEvent[], t0: number): void {
  for (const e of [...events].sort((a, b) => a.at - b.at)) { loop.run(Math.max(0, t0 + e.at - loop.now)); e.run() }
}

/** The seeds a churn test runs: `CHURN_FROM` (1) on, `CHURN_TRIALS` (60) of them. */
export const CHURN_SEEDS = { from: Number(process.env.CHURN_FROM ?? 1), count: Number(process.env.CHURN_TRIALS ?? 60) }

/** The label of {@link CHURN_SEEDS} in a test's name. */
export const churnSeedsLabel = `seeds ${CHURN_SEEDS.from}..${CHURN_SEEDS.from + CHURN_SEEDS.count - 1}`

/** What `trial` says went wrong at each of {@link CHURN_SEEDS} (null: passed). */
export function churnFailures (trial: (seed: number) => string | null): string[] {
  const bad: string[] = []
  for (let s = CHURN_SEEDS.from; s < CHURN_SEEDS.from + CHURN_SEEDS.count; s++) { const r = trial(s); if (r !== null) bad.push(r) }
  return bad
}
