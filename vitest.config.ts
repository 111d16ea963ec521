import { configDefaults, defineConfig } from 'vitest/config'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * Tests that run real libp2p peers, processes or emulated links on wall-clock time: they
 * run alone, one file at a time, after the rest (a simulation beside them on the two
 * cores would slow their event loops and stretch their timeouts).
 */
const REAL_TIME = [
  'test/node-*.test.ts',
  'test/daemon.test.ts',
  'test/daemon-lock.test.ts',
  'test/daemon-state.test.ts',
  'test/daemon-api.test.ts',
  'test/daemon-join-log.test.ts',
  'test/daemon-cli.test.ts',
  'test/hung-peer.test.ts',
  'test/multi-process.test.ts',
  'test/gossipsub-compare.test.ts',
  'test/wan-emulator.test.ts',
  'test/experiments.test.ts'
]

/**
 * The simulations that take minutes, longest first: started first, they run beside the
 * many short files instead of alone at the end (vitest orders by past durations, which a
 * fresh clone does not have, and then by file size).
 */
const LONGEST = ['paper-churn-160', 'paper-201', 'sim-swarm', 'sim-scenarios', 'stripes', 'paper-crash-64']

function rank (spec: TestSpecification): number {
  const i = LONGEST.findIndex((name) => spec.moduleId.endsWith(`/${name}.test.ts`))
  return i < 0 ? LONGEST.length : i
}

class LongestFirst extends BaseSequencer {
  override async sort (files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    return sorted.map((spec, i) => ({ spec, i })).sort((a, b) => rank(a.spec) - rank(b.spec) || a.i - b.i).map((x) => x.spec)
  }
}

export default defineConfig({
  test: {
    setupFiles: ['test/setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The simulator allocates many short-lived objects that outlive V8's default young
    // generation (16 MiB semi-spaces on Node 20; messages waiting in the event queue, tree
    // operations, probe replies): a 128 MiB semi-space cuts a 160-peer churn run from
    // 120 s to 83 s (BENCHMARKS.md). Same flag as the sim, bench and experiment scripts in
    // package.json.
    execArgv: ['--max-semi-space-size=128'],
    reporters: ['default'],
    sequence: { sequencer: LongestFirst },
    // Two groups, one after the other: the deterministic tests (simulations, the sans-IO
    // core, codecs, property tests) two files at a time on the two cores, then the
    // real-time ones alone. The whole suite took 9.2 min with one file at a time.
    projects: [
      {
        extends: true,
        test: { name: 'deterministic', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...REAL_TIME], maxWorkers: 2, sequence: { groupOrder: 0 } }
      },
      {
        extends: true,
        test: { name: 'real-time', include: REAL_TIME, maxWorkers: 1, sequence: { groupOrder: 1 } }
      }
    ]
  }
})
