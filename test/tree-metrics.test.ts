/**
 * Distances and estimates reach every child, new ones included (003 §IV-B: dist(p,root)
 * is the sum of the RTTs along the tree, and every peer keeps it).
 */
import { describe, expect, it } from 'vitest'
import { TreeNet } from './tree-net.ts'
import { decodeMessage, encodeMessage } from '../overlay/codec.ts'
import type { Message, TreeOp } from '../overlay/messages.ts'
import { WireError } from '../overlay/wire-errors.ts'

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

describe('distances and rates on the wire are never negative', () => {
  it('a tree op carrying one is rejected: taken, it made the receiver\'s probe replies undecodable (and its children\'s, who add their RTT to it)', () => {
    const net = new TreeNet(['r', 'a', 'b'])
    net.build('r', [['a', 'r'], ['b', 'a']], 10)
    // What a negative distance from a parent did: a's probe replies carried -40, which every prober rejects.
    net.t('a').handleOp(0, 'r', { op: 'metric', kind: 'lat', root: 'r', value: -50 })
    const reply: Message = { t: 'probe-rep', nonce: 1, trees: net.t('a').probeEntries(), padding: 0 }
    expect(() => decodeMessage(encodeMessage(reply))).toThrow(WireError)
    // So the wire refuses such ops, as it refuses such probe replies.
    const ops: TreeOp[] = [
      { op: 'metric', kind: 'lat', root: 'r', value: -50 },
      { op: 'metric', kind: 'bw', root: 'r', value: -1 },
      { op: 'result', kind: 'lat', root: 'r', id: 1, ok: true, dist: -3, path: [] },
      { op: 'check', kind: 'lat', root: 'r', id: 1, origin: 'b', dist: -3, path: [] }
    ]
    for (const op of ops) {
      expect(() => decodeMessage(encodeMessage({ t: 'tree', ops: [op] }))).toThrow(WireError)
      const zero = (op.op === 'metric' ? { ...op, value: 0 } : { ...op, dist: 0 }) as TreeOp
      expect(decodeMessage(encodeMessage({ t: 'tree', ops: [zero] }))).toBeDefined()
    }
  })
})
