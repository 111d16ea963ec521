/**
 * `npm run bench`: the benchmarks are not tests (wall times are noisy and never
 * asserted), but the command must run, print its table with every column, and refuse bad
 * input with exit code 1 and the option named.
 */
import { describe, expect, it } from 'vitest'
import { runScript } from './run-script.ts'

const BENCH = 'experiments/bench.ts'

describe('npm run bench', () => {
  it('runs a small scale benchmark and prints one row with every column, the simulated figures exact', async () => {
    const r = await runScript(BENCH, ['scale', '--peers', '8', '--broadcasts', '3', '--no-progress'], 60_000)
    expect(r.code, r.stderr).toBe(0)
    const lines = r.stdout.trim().split('\n')
    expect(lines[0]).toBe('| benchmark | wall s | CPU s | heap MB | simulated s | first stable s | repairs | broadcasts | mean broadcast ms | violations |')
    const cells = (lines[2] ?? '').split('|').slice(1, -1).map((c) => c.trim())
    expect(cells).toHaveLength(10)
    expect(cells[0]).toBe('scale-8')
    for (const i of [1, 2, 3]) expect(Number(cells[i])).toBeGreaterThan(0)
    // 30 s of cold start, 3 broadcasts 5 ms apart, 100 ms more (coldStart in bench.ts).
    expect(cells[4]).toBe('30.1')
    expect(cells[7]).toBe('3/3 complete, 0 lost, 0 dup')
    expect(cells[9]).toBe('0')
  })

  it('runs it on two threads too, saying so in the row and how the partitions went on stderr', async () => {
    const r = await runScript(BENCH, ['scale', '--peers', '8', '--broadcasts', '3', '--threads', '2', '--no-progress'], 60_000)
    expect(r.code, r.stderr).toBe(0)
    const cells = (r.stdout.trim().split('\n')[2] ?? '').split('|').slice(1, -1).map((c) => c.trim())
    expect(cells[0]).toBe('scale-8 on 2 threads')
    expect(cells[7]).toBe('3/3 complete, 0 lost, 0 dup')
    expect(cells[9]).toBe('0')
    expect(r.stderr).toMatch(/scale-8 on 2 threads: \d+ windows, \d+ crossings, partitions busy [\d.]+ and [\d.]+ s, critical path [\d.]+ s/)
  })

  it('refuses an unknown benchmark and a bad option, naming them', async () => {
    const unknown = await runScript(BENCH, ['no-such-bench'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain("unknown benchmark 'no-such-bench'")
    const bad = await runScript(BENCH, ['scale', '--peers', '2'])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('--peers')
  })
})
