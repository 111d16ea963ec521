/**
 * overlay/strangers.ts: what a peer keeps of messages from senders no member announced.
 * A stranger may send any ids; nothing of it may stay here, and no id it names may be
 * sent to (on the real node a send dials).
 */
import { describe, expect, it } from 'vitest'
import { TreecastCore } from '../overlay/core.ts'
import { MAX_STRANGER_DISOWNS } from '../overlay/strangers.ts'
import { MAX_CHECK_PATH, type TreeOp } from '../trees/tree-ops.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { Message } from '../overlay/messages.ts'
import type { Output } from '../overlay/outputs.ts'
import { mulberry32 } from './core-loop.ts'

const SET = IntervalSet.range(0, 2)

function core (): TreecastCore {
  const c = new TreecastCore({ self: 'a', random: mulberry32(3) })
  c.bootstrap(0, 16, ['a', 'b', 'c'])
  c.takeOutputs()
  return c
}

const sends = (out: Output[]): Array<{ to: string, message: Message }> => out.flatMap((o) => (o.type === 'send' ? [{ to: o.to, message: o.message }] : []))

describe('messages from strangers', () => {
  it('an adopt or a reach is disowned at once, once per tree, and leaves no child or unanswered entry', () => {
    const c = core()
    const ops: TreeOp[] = [
      { op: 'adopt', kind: 'lat', root: 'a', reach: SET, bw: 0 },
      { op: 'reach', kind: 'lat', root: 'a', reach: SET },
      { op: 'reach', kind: 'bw', root: 'b', reach: SET },
      { op: 'check', kind: 'lat', root: 'a', id: 1, origin: 'somewhere-else', dist: 0, path: [] }
    ]
    c.handle(1, 'zz', { t: 'tree', ops })
    expect(sends(c.takeOutputs())).toEqual([{ to: 'zz', message: { t: 'tree', ops: [{ op: 'disown', kind: 'lat', root: 'a' }, { op: 'disown', kind: 'bw', root: 'b' }] } }])
    for (const kind of ['lat', 'bw'] as const) {
      for (const root of ['a', 'b', 'c']) {
        const st = c.trees.get(kind, root)
        expect(st?.children.has('zz') ?? false).toBe(false)
        expect([...(st?.unanswered.values() ?? [])]).not.toContain('zz')
        expect(st?.locks.size ?? 0).toBe(0)
      }
    }
    expect(c.stats.rejected['stranger-tree']).toBe(1)
  })

  it('a disown is answered with a detach (its sender waits for it, holding the tree no leaf), once per tree', () => {
    // A peer that restarted, heard of by a parent that disowns it before the new incarnation
    // knows that parent: dropped, the disown left the parent waiting for ever (tree fuzz, seed 92).
    const c = core()
    const ops: TreeOp[] = [{ op: 'disown', kind: 'lat', root: 'b' }, { op: 'disown', kind: 'lat', root: 'b' }, { op: 'disown', kind: 'bw', root: 'b' }]
    c.handle(1, 'zz', { t: 'tree', ops })
    expect(sends(c.takeOutputs())).toEqual([{ to: 'zz', message: { t: 'tree', ops: [{ op: 'detach', kind: 'lat', root: 'b' }, { op: 'detach', kind: 'bw', root: 'b' }] } }])
    for (const kind of ['lat', 'bw'] as const) expect(c.trees.get(kind, 'b')?.parent ?? null).toBeNull()
  })

  it('disowns at most MAX_STRANGER_DISOWNS trees for one message', () => {
    const c = core()
    const ops: TreeOp[] = Array.from({ length: 3 * MAX_STRANGER_DISOWNS }, (_, i) => ({ op: 'adopt', kind: 'lat', root: `r${i}`, reach: SET, bw: 0 }))
    c.handle(1, 'zz', { t: 'tree', ops })
    const out = sends(c.takeOutputs())
    expect(out).toHaveLength(1)
    expect((out[0]?.message as unknown as { ops: TreeOp[] }).ops).toHaveLength(MAX_STRANGER_DISOWNS)
  })

  it('resend, reduce-ack and pull are dropped and counted: no route, no liveness watch, no contribution', () => {
    let contributed = 0
    const c = new TreecastCore({ self: 'a', random: mulberry32(3), contribute: (_id, start) => { contributed++; return new Float64Array(start.length) } })
    c.bootstrap(0, 16, ['a', 'b', 'c'])
    c.takeOutputs()
    c.handle(1, 'zz', { t: 'resend', id: 'a/0.1' })
    c.handle(1, 'zz', { t: 'reduce-ack', id: 'a/0.1', root: 'a', part: SET })
    c.handle(1, 'zz', { t: 'pull', id: 'x', root: 'a', op: 'sum', length: 4, want: IntervalSet.range(0, 16), hops: 0 })
    expect(c.takeOutputs()).toEqual([])
    expect(contributed).toBe(0)
    expect(c.stats.rejected).toMatchObject({ 'stranger-resend': 1, 'stranger-reduce-ack': 1, 'stranger-pull': 1 })
    // Nothing watches zz: however long it stays silent, nobody pings it or declares it dead.
    for (let t = 2; t < 120_000; t += 500) c.handleTimeout(t)
    expect(sends(c.takeOutputs()).filter((s) => s.to === 'zz')).toEqual([])
  })

  it('pings and probes are answered, but a stranger is not measured as a near peer', () => {
    const c = core()
    // A probe's request names the nonce of its ping (overlay/probing.ts).
    c.handle(1, 'zz', { t: 'ping', nonce: 7 })
    c.handle(1.5, 'zz', { t: 'probe-req', nonce: 7, light: true })
    expect(sends(c.takeOutputs()).map((s) => [s.to, s.message.t])).toEqual([['zz', 'pong'], ['zz', 'probe-rep']])
    expect((c as unknown as { probing: { rttOf: (p: string) => number | undefined } }).probing.rttOf('zz')).toBeUndefined()
    // A member's probe is measured as before.
    c.handle(2, 'b', { t: 'ping', nonce: 9 })
    c.handle(2.5, 'b', { t: 'probe-req', nonce: 9, light: true })
    expect((c as unknown as { probing: { rttOf: (p: string) => number | undefined } }).probing.rttOf('b')).toBe(0.5)
  })

  it("a member's tree operations are handled as before", () => {
    const c = core()
    c.handle(1, 'b', { t: 'tree', ops: [{ op: 'adopt', kind: 'lat', root: 'a', reach: SET, bw: 0 }] })
    expect(c.trees.get('lat', 'a')?.children.has('b')).toBe(true)
    expect(c.stats.rejected['stranger-tree']).toBeUndefined()
  })
})

describe('check results', () => {
  it('unlock only the live members on their path, and a path longer than a check can grow is ignored', () => {
    const c = core()
    const result = (path: string[]): Message => ({ t: 'tree', ops: [{ op: 'result', kind: 'lat', root: 'b', id: 99, ok: false, dist: 0, path }] })
    c.handle(1, 'b', result(['b', 'nobody', 'c']))
    const unlocked = sends(c.takeOutputs()).flatMap((s) => (s.message.t === 'tree' ? s.message.ops.filter((o) => o.op === 'unlock').map(() => s.to) : []))
    expect(unlocked.sort()).toEqual(['b', 'c'])
    c.handle(2, 'b', result(Array.from({ length: MAX_CHECK_PATH + 1 }, () => 'c')))
    expect(sends(c.takeOutputs())).toEqual([])
  })
})
