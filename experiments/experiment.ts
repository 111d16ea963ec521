/**
 * `npm run experiment -- <name> [--quick] [--seed N] [--out DIR]`: runs one experiment of
 * issue 5 (experiments/harness/registry.ts), shows its progress, writes
 * `<out>/<name>.json`, `<name>.md` and SVG plots, and prints its tables.
 *
 * Exit codes: 0 done, 1 the experiment threw, 2 unknown experiment or bad option.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander'
import { EXPERIMENTS, findExperiment } from './harness/registry.ts'
import { runExperiment } from './harness/run.ts'

const USAGE_ERROR = 2
const DEFAULT_OUT_DIR = 'out/experiments'
const DEFAULT_SEED = 1

function listing (): string {
  const width = Math.max(...EXPERIMENTS.map((e) => e.name.length))
  return EXPERIMENTS.map((e) => `  ${e.name.padEnd(width)}  ${e.description}`).join('\n')
}

function nonNegativeInt (flag: string) {
  return (value: string): number => {
    const n = Number(value)
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError(`${flag} must be a non-negative integer, got '${value}'`)
    return n
  }
}

function positiveInt (flag: string) {
  const parse = nonNegativeInt(flag)
  return (value: string): number => {
    const n = parse(value)
    if (n < 1) throw new InvalidArgumentError(`${flag} must be at least 1, got '${value}'`)
    return n
  }
}

interface Opts { quick?: boolean, seed: number, out: string, maxPeers?: number, steadyProbeMs?: number, oneLane?: boolean, news?: boolean, detour?: boolean, downloadOnDemand?: boolean, treeRootStride?: number, bwTieDepth?: number, list?: boolean }

const program = new Command()
  .name('npm run experiment --')
  .description('Runs one experiment of issue 5 on the simulator (or on real peers for gossipsub-compare).')
  .argument('[name]', 'the experiment to run (see the list below)')
  .option('--quick', 'reduced size (what the test suite runs)')
  .addOption(new Option('--seed <n>', 'seed of every random choice').argParser(nonNegativeInt('--seed')).default(DEFAULT_SEED))
  .option('--out <dir>', 'output directory', DEFAULT_OUT_DIR)
  .addOption(new Option('--max-peers <n>', 'largest peer count for size sweeps (scale); larger sizes are reported as not run').argParser(nonNegativeInt('--max-peers')))
  .addOption(new Option('--steady-probe-ms <ms>', 'simulated treecast peers also probe a random peer every <ms> (core steadyProbeIntervalMs; default off, as in 003)').argParser(nonNegativeInt('--steady-probe-ms')))
  .option('--one-lane', "simulated treecast peers probe as 003 does: one probe at a time, each with its download (core probeNearLane false, probeBandwidthReuseMs 0, probeDownloadOnDemand false; default: a near lane beside the main one, and light probes of peers measured in the last 10 s)")
  .option('--no-news', 'simulated treecast peers send no tree news (core treeNewsGapMs 0; default: a peer whose tree got much better tells its near peers, who probe it)')
  .option('--no-download-on-demand', 'simulated treecast peers download on every probe, as in 003 (core probeDownloadOnDemand false; default: only when the bandwidth could change a tree, trees/download-wanted.ts, since the twenty-first round)')
  .option('--detour', 'simulated treecast peers probe the root of each latency tree they reach through a detour once a burst ends (core probeDetour; default off)')
  .addOption(new Option('--tree-root-stride <s>', 'simulated treecast peers keep trees for about one peer in <s> only (core treeRootStride, overlay/tree-roots.ts; default 1: every peer roots trees, as in 003; a collective reduction rooted elsewhere then fails)').argParser(positiveInt('--tree-root-stride')))
  .addOption(new Option('--bw-tie-depth <hops>', 'simulated treecast peers move on a bandwidth-tree tie under a candidate at least <hops> nearer the root (core bwTieDepthHops, trees/depth-tie.ts; default 0: never, as in 003)').argParser(nonNegativeInt('--bw-tie-depth')))
  .option('--list', 'list the experiments and exit')
  .addHelpText('after', `\nExperiments:\n${listing()}\n`)
  .exitOverride()
  .showHelpAfterError(false)

async function main (): Promise<number> {
  try {
    program.parse()
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : USAGE_ERROR
    throw err
  }
  const opts = program.opts<Opts>()
  const name = program.args[0]
  if (opts.list === true) {
    console.log(listing())
    return 0
  }
  if (name === undefined) {
    console.error(`error: name an experiment\n\n${program.helpInformation()}\nExperiments:\n${listing()}`)
    return USAGE_ERROR
  }
  const exp = findExperiment(name)
  if (exp === undefined) {
    console.error(`error: unknown experiment '${name}'; the experiments are:\n${listing()}`)
    return USAGE_ERROR
  }
  const core = {
    ...(opts.steadyProbeMs !== undefined ? { steadyProbeIntervalMs: opts.steadyProbeMs } : {}),
    ...(opts.oneLane === true ? { probeNearLane: false, probeBandwidthReuseMs: 0, probeDownloadOnDemand: false } : {}),
    ...(opts.news === false ? { treeNewsGapMs: 0 } : {}),
    ...(opts.detour === true ? { probeDetour: true } : {}),
    ...(opts.downloadOnDemand === false ? { probeDownloadOnDemand: false } : {}),
    ...(opts.treeRootStride !== undefined ? { treeRootStride: opts.treeRootStride } : {}),
    ...(opts.bwTieDepth !== undefined ? { bwTieDepthHops: opts.bwTieDepth } : {})
  }
  try {
    await runExperiment(exp, {
      quick: opts.quick === true,
      seed: opts.seed,
      outDir: opts.out,
      ...(opts.maxPeers !== undefined ? { maxPeers: opts.maxPeers } : {}),
      ...(Object.keys(core).length > 0 ? { core } : {})
    })
    return 0
  } catch (err) {
    console.error(`experiment ${name} failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`)
    return 1
  }
}

process.exitCode = await main()
