/**
 * Seeded fuzz of the tree tables under concurrent parent changes, stale probe replies,
 * crashes, unnoticed restarts, leaves, joins and virtual nodes moving (test/tree-fuzz-net.ts):
 * never a cycle; once quiet every live peer has a parent in every tree, parents and children
 * agree, reach sets are the subtrees' ownership, distances match the parents', no lock is
 * held and no tree waits for an answer. More seeds: TREE_FUZZ_SEEDS=1000.
 */
import { describe, expect, it } from 'vitest'
import { FuzzFailure, runTreeFuzz, type FuzzOptions } from './tree-fuzz-net.ts'

const SEEDS = Number(process.env['TREE_FUZZ_SEEDS'] ?? 100)

/** Ops an incarnation sent before it crashed are delivered even where a newer one is known, as in the simulator. */
const BASE: FuzzOptions = { noUnanswered: true }
const FAMILIES: Array<[string, FuzzOptions]> = [
  ['stale replies', { ...BASE, staleReplies: 0.6 }],
  ['cluster entries, a child limit, slow time', { ...BASE, staleReplies: 0.5, farRttMs: 10, bwMaxChildren: 2, timeStepMs: 40 }],
  ['true replies, distances checked', { ...BASE, strict: true, staleReplies: 0, peers: 9, steps: 600 }],
  ['short locks', { ...BASE, staleReplies: 0.5, lockTimeoutMs: 20, timeStepMs: 15 }],
  ['tree roots one peer in three', { ...BASE, staleReplies: 0.5, treeRootStride: 3, farRttMs: 10, peers: 9 }]
]

describe('tree fuzz', () => {
  for (const [name, opts] of FAMILIES) {
    it(`${name}: ${SEEDS} seeds`, () => {
      let commits = 0
      for (let seed = 1; seed <= SEEDS; seed++) {
        try {
          commits += runTreeFuzz(seed, opts).commits
        } catch (err) {
          if (err instanceof FuzzFailure) throw new Error(`${err.message}\nreproduce with runTreeFuzz(${seed}, ${JSON.stringify(opts)})`)
          throw err
        }
      }
      // Not vacuous: parents changed many times.
      expect(commits).toBeGreaterThan(SEEDS * 20)
    })
  }
})
