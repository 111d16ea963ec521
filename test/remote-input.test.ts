/**
 * Remote input that is well-typed but wrong must be dropped and counted, never throw and
 * never grow state without bound.
 */
import { describe, expect, it } from 'vitest'
import { TreecastCore } from '../overlay/core.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { ChunkMessage, Message } from '../overlay/messages.ts'
import { MAX_INCOMING_PER_TRANSFER } from '../overlay/streams.ts'
import { MAX_LOCKS_PER_TREE } from '../trees/tree-table.ts'

function core (): TreecastCore {
  const c = new TreecastCore({ self: 'a', random: () => 0.5, contribute: (_id, start) => new Float64Array(start.length).fill(1) })
  c.bootstrap(0, 16, ['a', 'b'])
  c.takeOutputs()
  return c
}

function open (stream: number, extra: Partial<NonNullable<ChunkMessage['open']>> = {}, data = new Uint8Array(4)): Message {
  return {
    t: 'chunk',
    stream,
    index: 0,
    data,
    open: { id: 'b/0.1', origin: 'b', mode: 'lat', header: IntervalSet.range(0, 8), chunkCount: 2, totalBytes: 8, fallback: false, hops: 0, ...extra }
  }
}

describe('remote input', () => {
  it('a reduction start or a pull naming an unknown operation is rejected, not passed to the application', () => {
    const c = core()
    expect(() => c.handle(1, 'b', open(1, { id: 'b/0.9', reduce: { op: 'nope', rootVnode: 8, length: 1 }, chunkCount: 1, totalBytes: 0 }, new Uint8Array(0)))).not.toThrow()
    expect(c.stats.rejected['unknown-op']).toBe(1)
    expect(() => c.handle(2, 'b', { t: 'pull', id: 'b/0.9', root: 'b', op: 'nope', length: 1, want: IntervalSet.range(0, 8), hops: 0 })).not.toThrow()
    expect(c.stats.rejected['bad-pull']).toBe(1)
  })

  it('chunks carrying more bytes than the stream announced are rejected', () => {
    const c = core()
    c.handle(1, 'b', open(1, {}, new Uint8Array(6)))
    c.handle(2, 'b', { t: 'chunk', stream: 1, index: 1, data: new Uint8Array(6) })
    expect(c.stats.rejected['payload-overrun']).toBe(1)
    expect(c.takeOutputs().some((o) => o.type === 'deliver')).toBe(false)
  })

  it('one collective accepts a bounded number of incoming streams', () => {
    const c = core()
    for (let s = 1; s <= MAX_INCOMING_PER_TRANSFER + 10; s++) c.handle(s, 'b', open(s))
    expect(c.stats.rejected['too-many-streams']).toBe(10)
  })

  it('a peer lets a bounded number of parent-change checks lock it per tree', () => {
    const c = core()
    // Give 'a' a parent in b's latency tree so that checks are forwarded (and lock).
    const st = c.trees.get('lat', 'b')
    if (st !== undefined) st.parent = 'b'
    // A check whose origin is no live member here locks nothing (it would never answer).
    c.handle(1, 'b', { t: 'tree', ops: [{ op: 'check', kind: 'lat', root: 'b', id: 999, origin: 'x1', dist: 0, path: [] }] })
    expect(st?.locks.size).toBe(0)
    for (let id = 1; id <= MAX_LOCKS_PER_TREE + 5; id++) {
      c.handle(1, 'b', { t: 'tree', ops: [{ op: 'check', kind: 'lat', root: 'b', id, origin: 'b', dist: 0, path: [] }] })
    }
    expect(st?.locks.size).toBe(MAX_LOCKS_PER_TREE)
    const results = c.takeOutputs().flatMap((o) => (o.type === 'send' && o.message.t === 'tree' ? o.message.ops : [])).filter((op) => op.op === 'result')
    expect(results).toHaveLength(6)
  })
})
