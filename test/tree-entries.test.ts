/**
 * Cluster entries of bandwidth trees (trees/tree-entries.ts) as tree tables report them up
 * with their reach, and the bandwidth-tree fan-out limit (`bwMaxChildren`) that striped
 * broadcasts need (overlay/stripes.ts).
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { TreeNet } from './tree-net.ts'

const names = (entries: ReadonlyArray<{ peer: string }>): string[] => entries.map((e) => e.peer)

describe('cluster entries of a bandwidth tree', () => {
  it('a peer whose parent link is far reports itself, with its side\'s reach minus nested entries', () => {
    // r - a near; x under a far; y under x near; z under y far (a nested entry).
    const net = new TreeNet(['r', 'a', 'x', 'y', 'z'])
    net.farRttMs = 40
    net.ensureRoot('r')
    const attach = (child: string, parent: string, rtt: number): void => {
      expect(net.judge(child, parent, rtt, 1e6)).toBe(2)
      net.drain()
    }
    attach('a', 'r', 1)
    attach('x', 'a', 100)
    attach('y', 'x', 1)
    attach('z', 'y', 100)
    const own = (p: string): IntervalSet => net.owned.get(p) as IntervalSet
    const entries = net.t('r').stripeEntries()
    expect(names(entries)).toEqual(['x', 'z'])
    expect(entries[0]?.reach.equals(own('x').union(own('y'))), 'x: its side, without z\'s').toBe(true)
    expect(entries[1]?.reach.equals(own('z'))).toBe(true)
    // Latency trees carry none; a non-root's own tree of itself has none either.
    expect(net.log.filter((s) => s.op.op === 'reach' && s.op.kind === 'lat' && s.op.entries !== undefined)).toEqual([])
    expect(net.t('a').stripeEntries()).toEqual([])
    // What counts as far is judged again at each flush: above both links, no entries; back, both.
    net.farRttMs = 1000
    net.t('z').flush()
    net.t('x').flush()
    net.drain()
    expect(names(net.t('r').stripeEntries())).toEqual([])
    net.farRttMs = 40
    net.t('z').flush()
    net.t('x').flush()
    net.drain()
    expect(names(net.t('r').stripeEntries())).toEqual(['x', 'z'])
    // x's subtree goes: its entries with it.
    net.alive.delete('x')
    net.t('a').peerGone('x')
    net.t('a').flush()
    net.drain()
    expect(names(net.t('r').stripeEntries())).toEqual([])
  })
})

describe('bwMaxChildren', () => {
  it('a candidate with that many bandwidth-tree children is not judged for that tree; the latency tree still is', () => {
    const net = new TreeNet(['r', 'a', 'b', 'c'], 1000, { bwMaxChildren: 2 })
    net.build('r', [['a', 'r'], ['b', 'r']], 10, 1000)
    expect(net.t('r').get('bw', 'r')?.children.size).toBe(2)
    expect(net.judge('c', 'r', 10, 1e9)).toBe(1)
    net.drain()
    expect(net.parentOf('c', 'lat', 'r')).toBe('r')
    expect(net.parentOf('c', 'bw', 'r')).toBeNull()
    expect(net.judge('c', 'a', 10, 1e9)).toBe(1)
    net.drain()
    expect(net.parentOf('c', 'bw', 'r')).toBe('a')
  })

  it('a full candidate refuses checks, counting adoptions under way (judged before it filled up)', () => {
    const net = new TreeNet(['r', 'a', 'b', 'c'], 1000, { bwMaxChildren: 1 })
    net.ensureRoot('r')
    net.build('r', [['a', 'r']], 10, 1000)
    const entries = net.t('a').probeEntries()
    // b and c both judge a while it has no children: both checks go out, only one adoption.
    expect(net.judge('b', 'a', 10, 1e9, entries)).toBe(2)
    expect(net.judge('c', 'a', 10, 1e9, entries)).toBe(2)
    net.drain()
    const bwKids = [...(net.t('a').get('bw', 'r')?.children.keys() ?? [])]
    expect(bwKids).toHaveLength(1)
    expect(net.t('a').get('lat', 'r')?.children.size).toBe(2)
    expect(net.sentOps('result', { from: 'a' }).filter((s) => s.op.op === 'result' && s.op.kind === 'bw' && !s.op.ok)).toHaveLength(1)
  })
})
