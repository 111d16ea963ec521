/**
 * Swarm test: random scenarios (test/swarm.ts) for seeds 1..N, each run in the simulator
 * and held to the invariants: no violation, no lost or duplicate delivery, every broadcast
 * complete, every reduction complete and correct, no exception.
 *
 * A failing seed's scenario is written to out/swarm-<seed>.json and the failure message
 * gives the command that replays it. Environment knobs:
 *   SWARM_SEEDS=2000   run seeds 1..2000 instead of the default
 *   SWARM_FROM=4001    start at that seed instead of 1 (with SWARM_SEEDS: that many seeds)
 *   SWARM_SEED=42      run only seed 42
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { Simulation } from '../experiments/sim/simulation.ts'
import { randomScenario, swarmProblems, type SwarmOptions } from './swarm.ts'

/** About 25 s on a 2-core machine (70-90 ms per seed). */
const DEFAULT_SEEDS = 300
/** Seeds of the striped family by default. */
const STRIPED_SEEDS = 100
/** Seeds of the tree-root family (overlay/tree-roots.ts) by default. */
const TREE_ROOT_SEEDS = 100
/** Seeds of the download-on-demand family (`probeDownloadOnDemand`) by default. */
const ON_DEMAND_SEEDS = 100
/** Seeds of the quick-restart family by default. */
const RESTART_SEEDS = 100
/** Seeds of the point-to-point family by default. */
const SEND_SEEDS = 100
/** Seeds of the family whose first root leaves by default. */
const ROOT_LEAVES_SEEDS = 100
const OUT = new URL('../out/', import.meta.url)

/*
 * Seeds that fail deterministically because of a known, documented limitation (README,
 * "Known limits"). They run as `it.fails`: when a fix makes one pass, vitest reports it,
 * and its entry goes. None at present: seed 112 (concurrent restarts, two owners for a
 * moment) passes since crash take-overs wait for agreement (overlay/pending-claims.ts).
 */
const KNOWN_FAILURES: ReadonlyMap<number, string> = new Map<number, string>([])

function checkSeed (seed: number, opts: SwarmOptions = {}, tag = ''): void {
  const scenario = randomScenario(seed, opts)
  let issues: string[]
  try {
    issues = swarmProblems(new Simulation(scenario, seed).run())
  } catch (err) {
    issues = [`exception: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`]
  }
  if (issues.length === 0) return
  mkdirSync(fileURLToPath(OUT), { recursive: true })
  writeFileSync(fileURLToPath(new URL(`swarm${tag}-${seed}.json`, OUT)), JSON.stringify(scenario, null, 2) + '\n')
  const shown = issues.slice(0, 12)
  if (issues.length > shown.length) shown.push(`... ${issues.length - shown.length} more`)
  expect.fail(`swarm${tag} seed ${seed} failed (${issues.length} problems)\n  ${shown.join('\n  ')}\nreplay: npm run --silent sim -- out/swarm${tag}-${seed}.json`)
}

function seeds (defaultCount = DEFAULT_SEEDS): number[] {
  const only = process.env.SWARM_SEED
  if (only !== undefined && only !== '') return [Number(only)]
  const n = Number(process.env.SWARM_SEEDS ?? defaultCount)
  const from = Number(process.env.SWARM_FROM ?? 1)
  return Array.from({ length: n }, (_, i) => i + from)
}

describe('swarm: random scenarios keep the invariants', () => {
  for (const seed of seeds()) {
    const known = KNOWN_FAILURES.get(seed)
    if (known === undefined) it(`seed ${seed}`, () => checkSeed(seed))
    else it.fails(`seed ${seed} (BUG: ${known})`, () => checkSeed(seed))
  }
})

/**
 * The same with long broadcasts only (256 KB to 2 MB, on the bandwidth tree) over 3 or 4
 * clusters, so most are striped (overlay/stripes.ts): stripes share one transfer's custody
 * and delivered sets while peers leave, crash, join and hand their virtual nodes over.
 */
describe('swarm, striped broadcasts: random scenarios keep the invariants', () => {
  for (const seed of seeds(STRIPED_SEEDS)) {
    it(`seed ${seed}`, () => checkSeed(seed, { clusters: 3 + (seed % 2), broadcastBytes: [256 * 1024, 2 * 1024 * 1024] }, '-striped'))
  }
})

/**
 * The same with a `treeRootStride` of 3 (overlay/tree-roots.ts): about a third of the peers
 * root trees, the others' broadcasts and reductions start mid-tree in a tree root's trees
 * and go up as well as down, and some runs have no live tree root (everything then goes
 * point-to-point). Long broadcasts in every other seed.
 */
describe('swarm, a third of the peers root trees: random scenarios keep the invariants', () => {
  for (const seed of seeds(TREE_ROOT_SEEDS)) {
    it(`seed ${seed}`, () => checkSeed(seed, { treeRootStride: 3, ...(seed % 2 === 0 ? { broadcastBytes: [256 * 1024, 2 * 1024 * 1024] } : {}) }, '-roots'))
  }
})

/**
 * The same with `probeDownloadOnDemand` (trees/download-wanted.ts): most probes judge the
 * latency trees alone, and bandwidth trees change only on probes that downloaded. Long
 * broadcasts in every other seed, a third of the peers rooting trees in every third, and
 * the depth tie-break of bandwidth trees (`bwTieDepthHops` 2, trees/depth-tie.ts) in every
 * odd one.
 */
describe('swarm, probes download on demand: random scenarios keep the invariants', () => {
  for (const seed of seeds(ON_DEMAND_SEEDS)) {
    it(`seed ${seed}`, () => checkSeed(seed, { core: { probeDownloadOnDemand: true, ...(seed % 2 === 1 ? { bwTieDepthHops: 2 } : {}) }, ...(seed % 3 === 0 ? { treeRootStride: 3 } : {}), ...(seed % 2 === 0 ? { broadcastBytes: [256 * 1024, 2 * 1024 * 1024] } : {}) }, '-on-demand'))
  }
})

/**
 * The same with every crash followed by the crashed peers' restart 1 to 800 ms later, often
 * before anyone noticed: peers hear of the new incarnation before, after or instead of the
 * old one's death, and the new one may have been adopted, or adopted others, in the trees
 * meanwhile (test/tree-restarts, swarm-striped-8673). Long broadcasts in every other seed.
 */
describe('swarm, quick restarts: random scenarios keep the invariants', () => {
  for (const seed of seeds(RESTART_SEEDS)) {
    it(`seed ${seed}`, () => checkSeed(seed, { restartWithinMs: 800, ...(seed % 2 === 0 ? { broadcastBytes: [256 * 1024, 2 * 1024 * 1024] } : {}) }, '-restarts'))
  }
})

/**
 * The same with runs of point-to-point messages (`sendTo`) from the roots, to random virtual
 * nodes or all to one, while its owner joins, leaves, crashes or hands it over: each must
 * reach the owner at delivery time exactly once (per lineage) and none may be lost. Quick
 * restarts in every third seed, a third of the peers rooting trees in every fourth.
 */
describe('swarm, point-to-point messages: random scenarios keep the invariants', () => {
  for (const seed of seeds(SEND_SEEDS)) {
    it(`seed ${seed}`, () => checkSeed(seed, { sendRuns: 4 + (seed % 5), ...(seed % 3 === 0 ? { restartWithinMs: 800 } : {}), ...(seed % 4 === 0 ? { treeRootStride: 3 } : {}) }, '-sends'))
  }
})

/**
 * The root of the first broadcast leaves gracefully 0 to 1.5 s after starting it (in the
 * other families roots never go): it drains its broadcasts before it goes, so each must
 * still be acknowledged at its root, and no leave may wait for its timeout. Striped in every
 * other seed, a third of the peers rooting trees in every third. It found a leaving origin
 * that starving peers never asked for every chunk, and one that took a rejoined peer's
 * question for its dead incarnation's (test/stream-review).
 */
describe('swarm, a root leaves mid-broadcast: random scenarios keep the invariants', () => {
  for (const seed of seeds(ROOT_LEAVES_SEEDS)) {
    it(`seed ${seed}`, () => checkSeed(seed, { rootLeaves: true, ...(seed % 2 === 0 ? { clusters: 3 + (seed % 4 === 0 ? 1 : 0), broadcastBytes: [256 * 1024, 2 * 1024 * 1024] } : {}), ...(seed % 3 === 0 ? { treeRootStride: 3 } : {}) }, '-root-leaves'))
  }
})
