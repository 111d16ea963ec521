/**
 * A peer that rejoins under the same id may still be the parent of peers that have not yet
 * handled its older incarnation's death or leave: it uses full checks for a while
 * (core.onWelcome), as a short check through such an old child can close a cycle
 * (test/tree-restarts.test.ts).
 */
import { describe, expect, it } from 'vitest'
import { TreecastCore } from '../overlay/core.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { MemberFact, TreeOp } from '../overlay/messages.ts'

function rejoined (before: MemberFact['status']): TreeOp[] {
  const a = new TreecastCore({ self: 'a', random: () => 0.5 })
  a.join(0, 'b', { incarnation: 1 })
  a.takeOutputs()
  a.handle(1, 'b', {
    t: 'facts',
    vnodeCount: 8,
    members: [{ peer: 'a', incarnation: 0, status: before }, { peer: 'b', incarnation: 0, status: 'alive' }, { peer: 'c', incarnation: 0, status: 'alive' }],
    records: [{ ranges: IntervalSet.range(0, 8), owner: 'b', version: 1 }],
    welcome: true
  })
  a.takeOutputs()
  // a probed c: c looks good in b's trees; a is a leaf there.
  a.trees.judge(2, 'c', 1, 1e9, [{ root: 'b', dist: 0, est: 1e12, latChildren: 0, bwChildren: 0 }])
  a.handleTimeout(2)
  return a.takeOutputs().flatMap((o) => (o.type === 'send' && o.to === 'c' && o.message.t === 'tree' ? o.message.ops : []))
}

describe('a rejoin under the same id', () => {
  it.each(['dead', 'left'] as const)('after its old incarnation %s: full checks first (old children may still point to it)', (before) => {
    const checks = rejoined(before).filter((op) => op.op === 'check')
    expect(checks.length).toBeGreaterThan(0)
    for (const op of checks) expect(op.op === 'check' && op.short === true).toBe(false)
  })
})
