/**
 * overlay/tree-outbox.ts: tree operations leave batched per neighbour at the end of an
 * input, operations to this peer are handled here, and reach/metric updates wait for the
 * `treeUpdateDelayMs` timer (armed once) unless the delay is 0.
 */
import { describe, expect, it } from 'vitest'
import type { TreeTable } from '../trees/tree-table.ts'
import type { Message, TreeOp } from '../overlay/messages.ts'
import { TreeOutbox } from '../overlay/tree-outbox.ts'

const detach = (root: string): TreeOp => ({ op: 'detach', kind: 'lat', root })

function harness (delayMs: number): { outbox: TreeOutbox, sent: Array<{ to: string, msg: Message }>, timers: number[], fake: { flushes: number, dirty: boolean, handled: Array<{ from: string, op: TreeOp }> } } {
  const sent: Array<{ to: string, msg: Message }> = []
  const timers: number[] = []
  const fake = { flushes: 0, dirty: false, handled: [] as Array<{ from: string, op: TreeOp }> }
  const trees = {
    flush: () => { fake.flushes++; fake.dirty = false },
    get hasDirty () { return fake.dirty },
    // An op to oneself may queue more (here: one to peer c, once).
    handleOp: (_now: number, from: string, op: TreeOp) => { fake.handled.push({ from, op }); if (op.root === 'r1') outbox.add('c', detach('r2')) }
  } as unknown as TreeTable
  const outbox: TreeOutbox = new TreeOutbox({ self: 'me', trees, send: (to, msg) => sent.push({ to, msg }), setTimer: (at) => timers.push(at) }, delayMs)
  return { outbox, sent, timers, fake }
}

describe('TreeOutbox', () => {
  it('sends one tree message per neighbour with its operations in order, and handles its own', () => {
    const { outbox, sent, fake } = harness(0)
    outbox.add('a', detach('x'))
    outbox.add('b', detach('y'))
    outbox.add('a', detach('z'))
    outbox.add('me', detach('r1'))
    outbox.flush(10)
    expect(sent).toEqual([
      { to: 'a', msg: { t: 'tree', ops: [detach('x'), detach('z')] } },
      { to: 'b', msg: { t: 'tree', ops: [detach('y')] } },
      { to: 'c', msg: { t: 'tree', ops: [detach('r2')] } }
    ])
    expect(fake.handled).toEqual([{ from: 'me', op: detach('r1') }])
    expect(fake.flushes).toBe(2) // delay 0: updates go with every round
    outbox.flush(11)
    expect(sent).toHaveLength(3)
  })

  it('with a delay, arms the timer once while updates wait, and sends them when it fires', () => {
    const { outbox, timers, fake } = harness(5)
    outbox.flush(1)
    expect(timers).toEqual([]) // nothing dirty
    fake.dirty = true
    outbox.flush(2)
    outbox.flush(3)
    expect(timers).toEqual([7])
    expect(fake.flushes).toBe(0)
    outbox.onTimer()
    expect(fake.flushes).toBe(1)
    fake.dirty = true
    outbox.flush(9)
    expect(timers).toEqual([7, 14])
  })
})
