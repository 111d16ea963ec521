/**
 * Distances and estimates reach every child, new ones included (003 §IV-B: dist(p,root)
 * is the sum of the RTTs along the tree, and every peer keeps it).
 */
import { describe, expect, it } from 'vitest'
import { TreeNet } from './tree-net.ts'

describe('TreeTable: a new child learns its distance', () => {
  it('even when its parent\'s distance changed between answering the check and the adoption', () => {
    const net = new TreeNet(['r', 'm', 'a', 'x', 'b'])
    // r <- m <- a <- x (10 ms links); b under r, 30 ms away.
    net.build('r', [['m', 'r'], ['a', 'm'], ['x', 'a']], 10)
    net.build('r', [['b', 'r']], 30)
    expect(net.t('a').get('lat', 'r')?.metric).toBe(20)
    // b (a leaf) probes a, 3 ms away, and asks it alone (a short check).
    expect(net.judge('b', 'a', 3, 1e6)).toBe(1)
    net.deliverAll('b>a')
    // a answered with its distance, 20 ms. Now m measures r again: 50 ms.
    expect(net.judge('m', 'r', 50, 1e6)).toBe(0)
    net.drain()
    expect(net.parentOf('b', 'lat', 'r')).toBe('a')
    expect(net.t('a').get('lat', 'r')?.metric).toBe(60)
    expect(net.t('x').get('lat', 'r')?.metric).toBe(70)
    // b's distance is a's plus the RTT to a, not what a answered before its change.
    expect(net.t('b').get('lat', 'r')?.metric).toBe(63)
  })
})
