/**
 * `npm run bench -- [name...]`: simulator benchmarks (wall time, CPU time of the process
 * with its garbage-collector threads, memory, simulated outcomes), printed as a table. Figures go to BENCHMARKS.md with this command; nothing
 * here is asserted by the tests (this machine is noisy).
 *
 * - churn-160: experiments/scenarios/paper-churn-160.json (003 Fig. 9 schedule)
 * - cold-160: 160 peers in 4 clusters from a cold start, until trees are stable
 * - trees: experiments/scenarios/stable-64.json, seeds 1-3, with 003's exact parent rules
 *   (tieTolerance 0) and with the default tie-break: broadcast times and wide-area edges
 * - scale-N: N peers in 4 clusters, cold start, then 1-byte broadcasts from random roots
 *   every 5 ms (N from --peers, default 100; --broadcasts, default 1000; --tree-root-stride,
 *   default 1: every peer roots trees, as in 003; s > 1: about N/s do, overlay/tree-roots.ts;
 *   --no-download-on-demand: every probe downloads, as in 003 and before the twenty-first
 *   round, trees/download-wanted.ts; --core '{...}': any other core options, as JSON;
 *   --threads n: the simulator on n worker threads, experiments/sim/parallel/)
 *
 * Each run shows the virtual time done on stderr on a terminal (--progress: on a pipe too).
 */
import { readFileSync } from 'node:fs'
import { Command, InvalidArgumentError } from 'commander'
import { resolveCoreConfig, type CoreInit } from '../overlay/config.ts'
import { parseScenario, type Scenario } from './sim/scenario.ts'
import { Simulation } from './sim/simulation.ts'
import { ParallelSimulation } from './sim/parallel/parallel-simulation.ts'
import { stderrSimProgress } from './harness/sim-progress.ts'

interface Row { name: string, wallS: number, cpuS: number, heapMB: number, simulatedS: number, firstStableS: number | null, repairs: string, broadcasts: string, meanBroadcastMs: string, violations: number }

async function run (name: string, scenario: Scenario, showProgress: boolean, threads = 1): Promise<Row> {
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  const progress = stderrSimProgress(`${name}: virtual s`, showProgress)
  let r
  // On threads: the process's CPU time includes the workers'; the heap is theirs, summed.
  let heapBytes: number | undefined
  try {
    if (threads > 1) {
      const sim = new ParallelSimulation(scenario, scenario.seed, threads)
      r = await sim.run(progress.onProgress)
      heapBytes = sim.stats.heapUsedBytes.reduce((a, b) => a + b, 0)
      const st = sim.stats
      console.error(`${name}: ${st.windows} windows, ${st.crossings} crossings, partitions busy ${st.busyMs.map((b) => (b / 1000).toFixed(1)).join(' and ')} s, critical path ${(st.criticalMs / 1000).toFixed(1)} s`)
    } else r = new Simulation(scenario).run(progress.onProgress)
  } finally { progress.done() }
  const wallS = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  const heapMB = (heapBytes ?? process.memoryUsage().heapUsed) / 1e6
  const done = r.broadcasts.filter((b) => b.durationMs !== null)
  const mean = done.length === 0 ? 'n/a' : (done.reduce((n, b) => n + (b.durationMs ?? 0), 0) / done.length).toFixed(2)
  return {
    name,
    wallS,
    cpuS: (cpu.user + cpu.system) / 1e6,
    heapMB,
    simulatedS: r.simulatedMs / 1000,
    firstStableS: r.stability.firstStableMs === null ? null : r.stability.firstStableMs / 1000,
    repairs: r.stability.repairs.map((x) => `${x.event}@${x.atMs / 1000}s: ${x.interrupted ? 'interrupted' : `trees ${x.treesRepairedAfterMs === null ? 'never' : (x.treesRepairedAfterMs / 1000).toFixed(2) + 's'}, leavers gone ${x.stableAfterMs === null ? 'never' : (x.stableAfterMs / 1000).toFixed(2) + 's'}`}`).join('; ') || '-',
    broadcasts: `${r.totals.broadcastsComplete}/${r.totals.broadcasts} complete, ${r.totals.lostDeliveries} lost, ${r.totals.duplicates} dup`,
    meanBroadcastMs: mean,
    violations: r.violations.length
  }
}

function coldStart (peers: number, broadcasts: number, core: CoreInit = {}): Scenario {
  // Four clusters as even as can be (the first ones one larger): the same as before for multiples of 4.
  const clusters = [0, 1, 2, 3].map((i) => ({ name: `c${i}`, peers: Math.floor(peers / 4) + (i < peers % 4 ? 1 : 0) }))
  const schedule: Scenario['schedule'] = []
  if (broadcasts > 0) schedule.push({ at: 30_000, do: 'broadcast', root: 'random', bytes: 1, every: 5, count: broadcasts })
  return { name: `scale-${peers}`, seed: 1, topology: { clusters, intraRttMs: 0.3, interRttMs: 6 }, until: 30_000 + 5 * broadcasts + 100, schedule, ...(Object.keys(core).length > 0 ? { core } : {}) }
}

/** Tree quality on stable-64 with and without the tie-break. */
function trees (): void {
  const base = parseScenario(JSON.parse(readFileSync(new URL('./scenarios/stable-64.json', import.meta.url), 'utf8')))
  console.log('| tieTolerance | seed | first stable s | 1 B broadcast ms | 4 MB broadcast s | reduction ms | wide-area edges lat / bw (root p0000) |')
  console.log('|---|---|---|---|---|---|---|')
  for (const tol of [0, 0.05]) {
    for (const seed of [1, 2, 3]) {
      const sim = new Simulation({ ...base, core: { ...(base.core ?? {}), tieTolerance: tol } }, seed)
      const r = sim.run()
      const sh = sim.treeShape('p0000')
      const ms = (x: number | null | undefined): string => x == null ? 'n/a' : x.toFixed(2)
      console.log(`| ${tol} | ${seed} | ${ms((r.stability.firstStableMs ?? NaN) / 1000)} | ${ms(r.broadcasts[0]?.durationMs)} | ${ms((r.broadcasts[1]?.durationMs ?? NaN) / 1000)} | ${ms(r.reductions[0]?.durationMs)} | ${sh.lat?.wanEdges} / ${sh.bw?.wanEdges} |`)
    }
  }
}

const BENCHMARKS = ['churn-160', 'cold-160', 'trees', 'scale']

/** A commander parser for an integer option in `min`..`max`. */
const integer = (min: number, max: number) => (v: string): string => {
  const n = Number(v)
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be an integer in ${min}..${max}`)
  return v
}

/** `--core`: a JSON object of core options, checked as the core checks them. */
function coreOption (v: string): string {
  let o: unknown
  try { o = JSON.parse(v) } catch { throw new InvalidArgumentError('must be a JSON object') }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new InvalidArgumentError('must be a JSON object')
  try { resolveCoreConfig(o as CoreInit) } catch (err) { throw new InvalidArgumentError((err as Error).message) }
  return v
}

const program = new Command()
  .name('bench')
  .argument('[names...]', `${BENCHMARKS.join(', ')} (default: all)`)
  .option('--peers <n>', 'peers for the scale benchmark (in four clusters)', integer(4, 100_000), '100')
  .option('--broadcasts <n>', 'broadcasts for the scale benchmark', integer(0, 10_000_000), '1000')
  .option('--tree-root-stride <s>', 'scale benchmark: about peers/s peers root trees (1: all)', integer(1, 1_000_000), '1')
  .option('--no-download-on-demand', 'scale benchmark: every probe downloads (003; the default before the twenty-first round)')
  .option('--core <json>', 'scale benchmark: more core options (JSON object)', coreOption, '{}')
  .option('--threads <n>', 'scale and cold-160: the simulator on n worker threads (experiments/sim/parallel/)', integer(1, 64), '1')
  .option('--progress', 'show each run\'s virtual time done on stderr (default: on a terminal)')
  .option('--no-progress', 'no progress on stderr')
  .action(async (names: string[], opts: { peers: string, broadcasts: string, treeRootStride: string, downloadOnDemand: boolean, core: string, threads: string, progress?: boolean }) => {
    const unknown = names.find((n) => !BENCHMARKS.includes(n))
    if (unknown !== undefined) program.error(`bench: unknown benchmark '${unknown}' (${BENCHMARKS.join(', ')})`)
    const core: CoreInit = { ...(opts.treeRootStride === '1' ? {} : { treeRootStride: Number(opts.treeRootStride) }), ...(opts.downloadOnDemand ? {} : { probeDownloadOnDemand: false }), ...(JSON.parse(opts.core) as CoreInit) }
    const threads = Number(opts.threads)
    const onThreads = threads > 1 ? ` on ${threads} threads` : ''
    const scaleName = `scale-${opts.peers}${opts.treeRootStride === '1' ? '' : `-stride-${opts.treeRootStride}`}${opts.downloadOnDemand ? '' : '-every-download'}${opts.core === '{}' ? '' : ` ${opts.core}`}${onThreads}`
    const all = names.length === 0 ? BENCHMARKS : names
    const show = opts.progress ?? process.stderr.isTTY === true
    const rows: Row[] = []
    for (const name of all) {
      // churn-160 and trees stay on one thread (a run on threads takes no joins or leaves yet).
      if (name === 'churn-160') rows.push(await run(name, parseScenario(JSON.parse(readFileSync(new URL('./scenarios/paper-churn-160.json', import.meta.url), 'utf8'))), show))
      else if (name === 'cold-160') rows.push(await run(name + onThreads, { ...coldStart(160, 0), until: 15_000 }, show, threads))
      else if (name === 'trees') { trees(); continue }
      else if (name === 'scale') rows.push(await run(scaleName, coldStart(Number(opts.peers), Number(opts.broadcasts), core), show, threads))
      else throw new Error(`unknown benchmark ${name}`)
      console.error(`done: ${name}`)
    }
    if (rows.length === 0) return
    console.log('| benchmark | wall s | CPU s | heap MB | simulated s | first stable s | repairs | broadcasts | mean broadcast ms | violations |')
    console.log('|---|---|---|---|---|---|---|---|---|---|')
    for (const r of rows) {
      console.log(`| ${r.name} | ${r.wallS.toFixed(1)} | ${r.cpuS.toFixed(1)} | ${r.heapMB.toFixed(0)} | ${r.simulatedS.toFixed(1)} | ${r.firstStableS?.toFixed(2) ?? 'never'} | ${r.repairs} | ${r.broadcasts} | ${r.meanBroadcastMs} | ${r.violations} |`)
    }
  })

await program.parseAsync()
