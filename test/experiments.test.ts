/**
 * The experiments of issue 5 (experiments/figures/) at their --quick size: each writes its
 * JSON (parameters, points, targets), its Markdown tables and SVG plots, treecast's
 * collectives complete, and the figures that compare with the baselines have every one of
 * them. gossipsub-compare is tested with the rest of experiments/gossipsub/. No wall-clock
 * assertion: the figures are virtual time.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BASELINES } from '../experiments/baselines/types.ts'
import { progressSink } from '../experiments/harness/progress.ts'
import { findExperiment } from '../experiments/harness/registry.ts'
import { commandLine, runExperiment } from '../experiments/harness/run.ts'
import { isTreeRoot } from '../overlay/tree-roots.ts'

const ROOT = new URL('..', import.meta.url).pathname

interface Output {
  experiment: string
  quick: boolean
  seed: number
  command: string
  parameters: Record<string, unknown>
  points: Array<Record<string, unknown>>
  tables: Array<{ title: string, columns: string[], rows: unknown[][] }>
  targets: Array<{ target: string, measured: string, met: boolean }>
  plots: string[]
}

let dir: string
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'treecast-experiments-')) })
afterAll(() => { rmSync(dir, { recursive: true, force: true }) })

/** Runs one experiment quick and checks what every experiment must write. */
async function runQuick (name: string): Promise<Output> {
  const exp = findExperiment(name)
  if (exp === undefined) throw new Error(`no experiment ${name}`)
  const out = join(dir, name)
  await runExperiment(exp, { quick: true, seed: 1, outDir: out, progress: progressSink({ silent: true }), print: false })
  const json = JSON.parse(readFileSync(join(out, `${name}.json`), 'utf8')) as Output
  expect(json.experiment).toBe(name)
  expect(json.quick).toBe(true)
  expect(json.seed).toBe(1)
  expect(json.command).toContain(`npm run experiment -- ${name} --quick --seed 1`)
  expect(Object.keys(json.parameters).length).toBeGreaterThan(0)
  expect(json.points.length).toBeGreaterThan(0)
  expect(Array.isArray(json.targets)).toBe(true)
  const sound = json.targets.find((t) => t.target.includes('free of invariant violations'))
  expect(sound?.measured).toBe('none')
  expect(sound?.met).toBe(true)
  expect(json.tables.length).toBeGreaterThan(0)
  for (const t of json.tables) {
    expect(t.rows.length).toBeGreaterThan(0)
    for (const row of t.rows) expect(row.length).toBe(t.columns.length)
  }
  expect(json.plots.length).toBeGreaterThan(0)
  for (const svg of json.plots) {
    const text = readFileSync(join(out, svg), 'utf8')
    expect(text.startsWith('<svg')).toBe(true)
    expect(text).toContain('</svg>')
  }
  const md = readFileSync(join(out, `${name}.md`), 'utf8')
  expect(md).toContain('|---|')
  return json
}

/** The distinct values of `key` among the points. */
function distinct (points: ReadonlyArray<Record<string, unknown>>, key: string): Set<unknown> {
  return new Set(points.map((p) => p[key]))
}

describe('experiments at --quick size', () => {
  it('fig6-latency: arrival at every peer for treecast and every baseline', async () => {
    const r = await runQuick('fig6-latency')
    const impls = distinct(r.points, 'impl')
    for (const b of ['treecast', ...BASELINES]) expect(impls).toContain(b)
    const peers = r.parameters.peers as number
    const summaries = r.points.filter((p) => p.impl === 'treecast' && p.kind === 'summary')
    expect(summaries.length).toBe((r.parameters.roots as string[]).length)
    for (const s of summaries) expect(s.missing).toBe(0)
    const arrivals = r.points.filter((p) => p.impl === 'treecast' && p.kind === undefined)
    expect(arrivals.length).toBe(peers * summaries.length)
    for (const a of arrivals) expect(a.arrivalMs).toBeTypeOf('number')
    expect(r.targets.length).toBe(3)
  })

  it('fig7-bandwidth: every size for treecast, every baseline and the min cut', async () => {
    const r = await runQuick('fig7-bandwidth')
    const sizes = r.parameters.sizes as number[]
    for (const s of ['treecast', 'treecast-bw', ...BASELINES, 'min-cut']) {
      const got = r.points.filter((p) => p.series === s)
      expect(got.map((p) => p.bytes)).toEqual(sizes)
      for (const p of got) expect(p.bandwidthMBps).toBeGreaterThan(0)
    }
    for (const p of r.points.filter((x) => x.series === 'treecast')) expect(p.missing).toBe(0)
    expect(r.targets.length).toBe(3)
  })

  it('fig8-reduction: every length for treecast (started and collective) and every baseline, treecast results correct', async () => {
    const r = await runQuick('fig8-reduction')
    const lengths = r.parameters.lengths as number[]
    for (const s of ['treecast', 'treecast-collective', ...BASELINES]) {
      const got = r.points.filter((p) => p.impl === s)
      expect(got.map((p) => p.elements)).toEqual(lengths)
      for (const p of got) expect(p.timeMs).toBeGreaterThan(0)
    }
    for (const p of r.points.filter((x) => x.impl === 'treecast' || x.impl === 'treecast-collective')) expect(p.correct).toBe(true)
    expect(r.parameters.elementBytes).toBe(8)
    expect(r.targets.length).toBe(3)
  })

  it('fig9-churn: back-to-back broadcasts lose nothing through the leave and the rejoin', async () => {
    const r = await runQuick('fig9-churn')
    const broadcasts = r.points.filter((p) => p.kind === 'broadcast')
    expect(broadcasts.length).toBeGreaterThan(3)
    for (const b of broadcasts) { expect(b.missing).toBe(0); expect(b.duplicates).toBe(0) }
    const peers = r.parameters.peers as number
    expect(new Set(broadcasts.map((b) => b.peersRunning))).toEqual(new Set([peers, peers / 2]))
    const changes = r.targets.filter((t) => t.target.includes('after the'))
    expect(changes.map((t) => t.target.match(/after the (\w+)/)?.[1])).toEqual(['leave', 'join'])
    expect(r.targets[0]?.target).toContain('cold start')
  })

  it('scale: every quick size runs in both series and both broadcasts reach every peer', async () => {
    const r = await runQuick('scale')
    const ran = r.points.filter((p) => p.status === 'run')
    const sizes = r.parameters.sizes as number[]
    expect(ran.filter((p) => p.series === 'per root').map((p) => p.peers)).toEqual(sizes)
    // With about 32 tree roots (overlay/tree-roots.ts): fewer roots than peers, and p0000's broadcasts went through one unless it is one.
    const rooted = ran.filter((p) => p.series === 'tree roots')
    expect(rooted.map((p) => p.peers)).toEqual(sizes)
    for (const p of rooted) {
      expect(p.treeRootStride).toBeGreaterThan(1)
      expect(p.treeRoots).toBeLessThan(p.peers as number)
      expect(p.treeRoots).toBeGreaterThan(0)
      if (!isTreeRoot('p0000', p.treeRootStride as number)) expect(p.treeRoot).not.toBe('p0000')
    }
    for (const p of ran) {
      expect(p.shortDelivered).toBe(p.peers)
      expect(p.longDelivered).toBe(p.peers)
      expect(p.shortRatio).toBeGreaterThanOrEqual(1)
      expect(p.longRatio).toBeGreaterThanOrEqual(1)
    }
  })
})

describe('the command line recorded with a run', () => {
  it('names every core option the CLI can set, so the run replays with the same options', () => {
    const core = { steadyProbeIntervalMs: 500, probeNearLane: false, probeBandwidthReuseMs: 0, treeNewsGapMs: 0, probeDetour: true, probeDownloadOnDemand: false, treeRootStride: 16 }
    expect(commandLine('scale', false, 2, 'out/x', 500, core)).toBe('npm run experiment -- scale --seed 2 --out out/x --max-peers 500 --steady-probe-ms 500 --one-lane --no-news --detour --no-download-on-demand --tree-root-stride 16')
    expect(commandLine('fig6-latency', true, 1, 'out/y')).toBe('npm run experiment -- fig6-latency --quick --seed 1 --out out/y')
  })
})

describe('npm run experiment', () => {
  const cli = (...args: string[]): ReturnType<typeof spawnSync> =>
    spawnSync(process.execPath, ['--import', './bin/ts-loader.mjs', join(ROOT, 'experiments/experiment.ts'), ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 })

  it('exits 2 with the list of experiments on an unknown name', () => {
    const r = cli('no-such-figure')
    expect(r.status).toBe(2)
    expect(r.stderr).toContain("unknown experiment 'no-such-figure'")
    for (const name of ['fig6-latency', 'fig7-bandwidth', 'fig8-reduction', 'fig9-churn', 'scale', 'gossipsub-compare']) expect(r.stderr).toContain(name)
  })

  it('exits 2 on a bad option', () => {
    const r = cli('fig6-latency', '--seed', 'x')
    expect(r.status).toBe(2)
    expect(r.stderr).toContain('--seed')
  })
})
