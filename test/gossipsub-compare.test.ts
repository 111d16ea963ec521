/**
 * gossipsub-compare in quick mode (8 real libp2p peers in 4 emulated clusters, both systems
 * on the same hosts): both systems deliver, every size has points, the over-limit gossipsub
 * message is reported rather than crashing the run, and treecast's byte count covers at
 * least one copy per receiver. No wall-clock assertion: the machine is shared and loaded.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { installLibp2pGuard } from '../node/libp2p-guard.ts'
import { gossipsubCompare } from '../experiments/gossipsub/compare.ts'
import { GOSSIPSUB_DEFAULT_MAX_RPC_BYTES } from '../experiments/gossipsub/config.ts'
import type { ExperimentResult } from '../experiments/harness/types.ts'
import type { Point } from '../experiments/gossipsub/points.ts'

describe('gossipsub-compare --quick', () => {
  let result: ExperimentResult
  let points: Point[]
  const outDir = mkdtempSync(join(tmpdir(), 'gossipsub-compare-'))

  beforeAll(async () => {
    installLibp2pGuard()
    result = await gossipsubCompare.run({
      quick: true,
      seed: 7,
      outDir,
      progress: () => ({ tick: () => {}, done: () => {} }),
      log: () => {}
    })
    points = result.points as Point[]
  }, 150_000)

  afterAll(() => { rmSync(outDir, { recursive: true, force: true }) })

  it('both systems deliver every 1 KB message to every other peer', () => {
    for (const system of ['treecast', 'gossipsub']) {
      const ps = points.filter((p) => p.system === system && p.size === '1 KB' && p.phase === 'measure')
      expect(ps.length).toBeGreaterThan(0)
      for (const p of ps) {
        expect(p.delivered, `${system} 1 KB #${p.seq}`).toBe(p.expected)
        expect(p.completeness).toBe(1)
        expect(p.arrivalsMs.every((x) => x !== null && x >= 0)).toBe(true)
      }
    }
  })

  it('has points for every size and system, with percentiles and traffic', () => {
    for (const size of ['1 KB', '128 KB', '1 MB']) {
      for (const system of ['treecast', 'gossipsub']) {
        const ps = points.filter((p) => p.system === system && p.size === size && p.phase === 'measure')
        expect(ps.length, `${system} ${size}`).toBeGreaterThan(0)
        for (const p of ps) {
          expect(p.peers).toBeGreaterThanOrEqual(8)
          expect(p.expected).toBe(p.peers - 1)
          expect(p.bytesSent).toBeGreaterThan(0)
          expect(p.writes).toBeGreaterThan(0)
        }
      }
    }
    expect(result.tables.map((t) => t.title).join('\n')).toMatch(/latency[\s\S]*Completion[\s\S]*bytes[\s\S]*completeness/i)
    expect(result.plots.map((p) => p.id).sort()).toEqual(['completion', 'latency-cdf'])
    expect(result.targets.length).toBeGreaterThanOrEqual(4)
    for (const t of result.targets) expect(typeof t.met).toBe('boolean')
  })

  it('treecast sends at least one copy of the payload per receiver', () => {
    for (const p of points.filter((q) => q.system === 'treecast' && q.phase === 'measure')) {
      expect(p.bytesSent, `treecast ${p.size} #${p.seq}`).toBeGreaterThan(p.bytes * (p.peers - 1))
    }
  })

  it('reports a gossipsub message past the size limit instead of crashing', () => {
    const over = points.filter((p) => p.system === 'gossipsub' && p.bytes >= GOSSIPSUB_DEFAULT_MAX_RPC_BYTES)
    expect(over.length).toBeGreaterThan(0)
    for (const p of over) {
      // gossipsub refuses it at the publisher, silently: publish resolves with no recipients.
      expect(p.publishError).toBeNull()
      expect(p.publishRecipients).toBe(0)
      expect(p.delivered).toBe(0)
      expect(p.completionMs).toBeNull()
    }
    expect(result.tables.some((t) => t.title.includes('size limit'))).toBe(true)
    // Both systems still deliver afterwards.
    const after = points.filter((p) => p.phase === 'after-limit')
    expect(after.length).toBeGreaterThan(0)
    for (const p of after) expect(p.delivered, `${p.system} after the limit #${p.seq}`).toBe(p.expected)
  })
})
