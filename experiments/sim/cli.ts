/**
 * `npm run --silent sim -- <scenario.json> [--seed N] [--threads N] [--json] [--progress]`: runs a
 * scenario in the simulator (with --threads N > 1, on N worker threads:
 * experiments/sim/parallel/) and prints a human summary, or with --json only the JSON report. Progress (virtual
 * seconds done) goes to stderr on a terminal, or on a pipe with --progress. Exits 1 when
 * an invariant was violated (the summary then says how to replay the run), 2 on a bad
 * scenario file or bad usage. A file without a `seed` needs --seed.
 */
import { readFileSync } from 'node:fs'
import { basename } from 'node:path'
import { Command, InvalidArgumentError, Option } from 'commander'
import { InvalidScenarioError, parseScenario } from './scenario.ts'
import { Simulation } from './simulation.ts'
import { ParallelSimulation } from './parallel/parallel-simulation.ts'
import { summarize } from './report.ts'
import { runLive } from '../net/run-live.ts'
import { stderrSimProgress } from '../harness/sim-progress.ts'

const program = new Command()
  // Bad usage exits 2, as a bad scenario file does (commander's own default is 1).
  .exitOverride((err) => { process.exit(err.exitCode === 0 ? 0 : 2) })
  .name('sim')
  .description('Run a treecast scenario in the deterministic simulator')
  .argument('<scenario>', 'scenario JSON file (format: experiments/README.md)')
  .option('--seed <n>', 'override the scenario seed', (v) => {
    const n = Number(v)
    if (!Number.isInteger(n)) throw new InvalidArgumentError('seed must be an integer')
    return n
  })
  .option('--threads <n>', 'run on n worker threads, whole clusters each (experiments/README.md, "Runs on threads"; a run is then a function of scenario, seed and n)', (v) => {
    const n = Number(v)
    if (!Number.isInteger(n) || n < 1 || n > 64) throw new InvalidArgumentError('threads must be an integer in 1..64')
    return n
  }, 1)
  .option('--json', 'print only the JSON report')
  .option('--progress', 'show the virtual time done on stderr (default: on a terminal)')
  .option('--no-progress', 'no progress on stderr')
  .addOption(new Option('--network <kind>', 'sim: the deterministic simulator; libp2p: real peers in this process over TCP with emulated wide-area links, in real time').choices(['sim', 'libp2p']).default('sim'))
  .action(async (file: string, opts: { seed?: number, threads: number, json?: boolean, progress?: boolean, network: 'sim' | 'libp2p' }) => {
    if (opts.threads > 1 && opts.network !== 'sim') { console.error('sim: --threads is for the simulator (--network sim)'); process.exit(2) }
    let scenario
    try {
      const raw: unknown = JSON.parse(readFileSync(file, 'utf8'))
      // A file without a seed runs with --seed's.
      if (opts.seed !== undefined && typeof raw === 'object' && raw !== null && !Array.isArray(raw) && !('seed' in raw)) (raw as Record<string, unknown>).seed = opts.seed
      scenario = parseScenario(raw)
    } catch (err) {
      console.error(`sim: ${file}: ${(err as Error).message}`)
      process.exit(2)
    }
    const seed = opts.seed ?? scenario.seed
    const started = performance.now()
    let report
    const progress = stderrSimProgress(`${basename(file)}, seed ${seed}: virtual s`, opts.network === 'sim' && (opts.progress ?? process.stderr.isTTY === true))
    try {
      report = opts.network === 'libp2p'
        ? await runLive(scenario, seed, opts.json === true ? undefined : (line) => { console.log(line) })
        : opts.threads > 1
          ? await new ParallelSimulation(scenario, seed, opts.threads).run(progress.onProgress)
          : new Simulation(scenario, seed).run(progress.onProgress)
    } catch (err) {
      progress.done()
      // What only the run can find wrong (a join with nobody left to join through).
      if (err instanceof InvalidScenarioError) {
        console.error(`sim: ${file}: ${err.message}`)
        process.exit(2)
      }
      // A run that threw (a bug): its seed and how to replay it, as for a broken invariant.
      console.error(`sim: ${file}: ${String(err)}`)
      console.error((err as Error).cause instanceof Error ? ((err as Error).cause as Error).stack : (err as Error).stack)
      console.error(`reproduce with: npm run --silent sim -- ${file} --seed ${seed}${opts.threads > 1 ? ` --threads ${opts.threads}` : ''}${opts.network === 'libp2p' ? ' --network libp2p' : ''}`)
      process.exit(1)
    }
    progress.done()
    report.replay = `npm run --silent sim -- ${file} --seed ${seed}${opts.threads > 1 ? ` --threads ${opts.threads}` : ''}${opts.network === 'libp2p' ? ' --network libp2p' : ''}`
    const wallMs = performance.now() - started
    if (opts.json === true) process.stdout.write(JSON.stringify(report, null, 2) + '\n')
    else console.log(summarize(report, wallMs, opts.network === 'libp2p'))
    if (report.violations.length > 0) {
      if (opts.json === true) console.error(`sim: ${report.violations.length} invariant violations in ${basename(file)}; reproduce with: ${report.replay}`)
      process.exitCode = 1
    }
  })

await program.parseAsync()
