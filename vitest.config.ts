import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
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
    reporters: ['default']
  }
})
