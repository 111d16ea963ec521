/**
 * An adoption that arrives after this peer dropped the tree (its root died): the unlock of
 * the adopter's check, sent just before it, freed the last lock there, and the disown sent
 * back was held nowhere, so a tree remade for that root (the root rejoins under its name)
 * counted as a leaf while the adopter still pointed here, and could attach under one of
 * its descendants with a short check: a cycle (trees/tree-table.ts header).
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { TreeTable } from '../trees/tree-table.ts'
import { isLeaf, type TreeState } from '../trees/tree-state.ts'
import type { TreeOp } from '../trees/tree-ops.ts'

describe('an adopt for a tree this peer no longer holds', () => {
  it('is disowned, and a tree remade for the root is no leaf until the adopter detaches', () => {
    const sent: Array<{ to: string, op: TreeOp }> = []
    const t = new TreeTable({ self: 'y', owned: () => IntervalSet.range(0, 4), isAlive: () => true, sendOp: (to, op) => { sent.push({ to, op }) }, parentChanged: () => {} }, 1000, 0, 0)
    t.ensureRoot('r')
    t.removeRoot('r')
    t.handleOp(1, 'x', { op: 'unlock', kind: 'lat', root: 'r', id: 7, origin: 'x' })
    t.handleOp(1, 'x', { op: 'adopt', kind: 'lat', root: 'r', reach: IntervalSet.range(4, 8), bw: 0 })
    expect(sent).toContainEqual({ to: 'x', op: { op: 'disown', kind: 'lat', root: 'r' } })
    t.ensureRoot('r')
    expect(isLeaf(t.get('lat', 'r') as TreeState)).toBe(false)
    t.handleOp(2, 'x', { op: 'detach', kind: 'lat', root: 'r' })
    expect(isLeaf(t.get('lat', 'r') as TreeState)).toBe(true)
  })
})
