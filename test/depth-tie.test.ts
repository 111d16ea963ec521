/**
 * The depth tie-break of bandwidth trees (trees/depth-tie.ts, core option bwTieDepthHops):
 * a tie moves a peer under a candidate at least that many hops nearer the root, never to a
 * candidate the bandwidth rule would leave again, and depths travel down in metric updates.
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { bwMetricsDue, depthTiePrefers, depthUnder, metricDepth } from '../trees/depth-tie.ts'
import { newTreeState, type TreeState } from '../trees/tree-state.ts'
import { bandwidthPrefers } from '../trees/parent-rules.ts'
import type { ProbeTreeEntry } from '../trees/tree-ops.ts'
import { resolveCoreConfig } from '../overlay/config.ts'
import { InvalidConfigError } from '../overlay/errors.ts'
import { TreeNet } from './tree-net.ts'

const TOL = 0.05
const entry = (est: number, bwDepth?: number, bwChildren = 0): ProbeTreeEntry => ({ root: 'r', dist: 1, est, latChildren: 0, bwChildren, ...(bwDepth === undefined ? {} : { bwDepth }) })

/** A bandwidth tree of root r at `depth` hops under parent `q`, estimate `metric`. */
function at (depth: number, metric: number): TreeState {
  const st = newTreeState('bw', 'r', false, IntervalSet.EMPTY, undefined)
  st.parent = 'q'
  st.metric = metric
  st.depth = depth
  st.parentRttMs = 1
  return st
}

describe('depthTiePrefers', () => {
  it('moves a peer whose estimate ties under a candidate at least gain hops nearer the root', () => {
    expect(depthTiePrefers(at(5, 1e6), 1e6, 1, entry(1e6, 2), TOL, 2)).toBe(true) // 5 -> 3
    expect(depthTiePrefers(at(5, 1e6), 1e6, 1, entry(1e6, 3), TOL, 2)).toBe(false) // 5 -> 4: one hop only
    expect(depthTiePrefers(at(5, 1e6), 1e6, 1, entry(1e6, 3), TOL, 1)).toBe(true)
  })

  it('never to a candidate farther than the parent: no wide-area edge for a tie', () => {
    expect(depthTiePrefers(at(5, 1e6), 1e6, 1.05, entry(1e6, 0), TOL, 2)).toBe(true)
    expect(depthTiePrefers(at(5, 1e6), 1e6, 1.06, entry(1e6, 0), TOL, 2)).toBe(false)
    expect(depthTiePrefers(at(5, 1e6), 1e6, 20, entry(1e6, 0), TOL, 2)).toBe(false)
  })

  it('never to a candidate the bandwidth rule would leave again for the old parent', () => {
    const current = 1e6
    const lowest = current / (1 + TOL)
    expect(depthTiePrefers(at(9, current), lowest, 1, entry(lowest, 0), TOL, 2)).toBe(true)
    expect(bandwidthPrefers(true, lowest, current, Infinity, Infinity, TOL), 'the old parent does not win it back').toBe(false)
    expect(depthTiePrefers(at(9, current), lowest * 0.999, 1, entry(lowest, 0), TOL, 2)).toBe(false)
  })

  it('does nothing when off, without a parent, or when the candidate is not connected or did not say its depth', () => {
    expect(depthTiePrefers(at(9, 1e6), 1e6, 1, entry(1e6, 0), TOL, 0)).toBe(false)
    const orphan = at(9, 1e6)
    orphan.parent = null
    expect(depthTiePrefers(orphan, 1e6, 1, entry(1e6, 0), TOL, 2)).toBe(false)
    expect(depthTiePrefers(at(9, 1e6), 1e6, 1, entry(1e6, -1), TOL, 2)).toBe(false)
    expect(depthTiePrefers(at(9, 1e6), 1e6, 1, entry(1e6), TOL, 2)).toBe(false)
    expect(depthTiePrefers(at(9, 1e6), -1, 1, entry(-1, 0), TOL, 2)).toBe(false)
    expect(depthUnder(entry(1e6))).toBe(Infinity)
    expect(depthUnder(entry(1e6, 4))).toBe(5)
  })
})

describe('depths down the tree', () => {
  it('a metric update carries the parent\'s depth; all children are told again when it changes, none when nothing did', () => {
    const st = at(3, 1e6)
    st.children.set('x', IntervalSet.EMPTY).set('y', IntervalSet.EMPTY)
    st.childBw.set('x', 4e6).set('y', 4e6)
    expect(bwMetricsDue(st, true).map(([to, op]) => [to, op.value, op.depth])).toEqual([['x', 1e6, 3], ['y', 1e6, 3]])
    expect(bwMetricsDue(st, true)).toEqual([])
    expect(metricDepth(st, { op: 'metric', kind: 'bw', root: 'r', value: 1e6, depth: 0 })).toBe(true)
    expect(st.depth).toBe(1)
    expect(metricDepth(st, { op: 'metric', kind: 'bw', root: 'r', value: 1e6, depth: 0 })).toBe(false)
    expect(bwMetricsDue(st, true).map(([to, op]) => [to, op.depth])).toEqual([['x', 1], ['y', 1]])
    // Off: no depth on the wire.
    st.metric = 5e5
    expect(bwMetricsDue(st, false).map(([, op]) => op)).toEqual([{ op: 'metric', kind: 'bw', root: 'r', value: 5e5 }, { op: 'metric', kind: 'bw', root: 'r', value: 5e5 }])
    // Unknown (Infinity) is never sent.
    st.depth = Infinity
    st.metric = 4e5
    expect(bwMetricsDue(st, true).map(([, op]) => op.depth)).toEqual([undefined, undefined])
  })

  it('a chain r-a-b-c-d-e straightens: d moves under r on a tie, and e learns its new depth', () => {
    const peers = ['r', 'a', 'b', 'c', 'd', 'e']
    const net = new TreeNet(peers, 1000, { bwMaxChildren: 2, bwTieDepthHops: 2 })
    net.build('r', [['a', 'r'], ['b', 'a'], ['c', 'b'], ['d', 'c'], ['e', 'd']], 100, 1e6)
    const depthOf = (p: string): number => net.t(p).get('bw', 'r')?.depth as number
    expect(peers.map(depthOf)).toEqual([0, 1, 2, 3, 4, 5])
    expect(net.t('d').get('bw', 'r')?.metric).toBe(1e6)
    expect(net.t('r').probeEntries().find((e) => e.root === 'r')?.bwDepth).toBe(0)
    // r has one child: at 2 MB/s d's estimate under it is min(r's, 2e6 / 2) = 1e6, a tie.
    expect(net.judge('d', 'r', 100, 2e6)).toBe(1)
    net.drain()
    expect(net.parentOf('d', 'bw', 'r')).toBe('r')
    expect(net.parentOf('d', 'lat', 'r'), 'the latency tree is judged by its own rule').toBe('c')
    expect(depthOf('d')).toBe(1)
    expect(depthOf('e')).toBe(2)
    expect(net.cycle('bw', 'r')).toBeUndefined()
  })

  it('off (bwTieDepthHops 0), the same chain stays and nothing carries a depth', () => {
    const net = new TreeNet(['r', 'a', 'b', 'c', 'd'], 1000, { bwMaxChildren: 2 })
    net.build('r', [['a', 'r'], ['b', 'a'], ['c', 'b'], ['d', 'c']], 100, 1e6)
    expect(net.judge('d', 'r', 100, 2e6)).toBe(0)
    expect(net.t('r').probeEntries().every((e) => e.bwDepth === undefined)).toBe(true)
    expect(net.sentOps('metric').every((s) => s.op.op === 'metric' && s.op.depth === undefined)).toBe(true)
  })
})

describe('bwTieDepthHops', () => {
  it('defaults to 0 (off, as in 003) and is refused unless an integer in 0..1024', () => {
    expect(resolveCoreConfig({}).bwTieDepthHops).toBe(0)
    expect(resolveCoreConfig({ bwTieDepthHops: 0 }).bwTieDepthHops).toBe(0)
    for (const bad of [-1, 1.5, 1025, Number.NaN]) expect(() => resolveCoreConfig({ bwTieDepthHops: bad })).toThrow(InvalidConfigError)
  })
})
