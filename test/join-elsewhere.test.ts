/**
 * A join sent to a contact that is leaving (overlay/join-attempt.ts): the contact names the
 * peer its ranges go to, and the joiner joins there at once instead of waiting for its
 * host's join timeout (the node's `joinTimeoutMs`, 30 s). Message loop: test/core-loop.ts.
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { successorOf } from '../virtual-nodes/assignment.ts'
import { TreecastCore } from '../overlay/core.ts'
import { JoinAttempt, joinElsewhereTarget, MAX_JOIN_REDIRECTS } from '../overlay/join-attempt.ts'
import { Membership } from '../overlay/membership.ts'
import type { Message } from '../overlay/messages.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { expectExactlyOnce, PEERS5, settled, type Loop } from './core-loop.ts'

/** Once the trees settle, a broadcast from `root` reaches each of the 23 virtual nodes once, and no invariant broke. */
function settledBroadcastOnce (loop: Loop, root: PeerId): void {
  loop.runUntil(() => loop.stable(), 10_000, 'stable after the joins and leaves')
  const id = loop.input(root, (c) => c.broadcast(loop.now, Uint8Array.of(7)))
  loop.runUntil(() => loop.outputs('broadcast-done', root).length > 0, 2000, 'broadcast-done')
  expectExactlyOnce(loop, id, 23)
  loop.ok()
}

describe('join through a leaving contact', () => {
  it('the contact sends the joiner to its successor, who welcomes it; no virtual node has two owners', () => {
    const loop = settled()
    const j = loop.create('p9')
    // p2 starts leaving and p9's join reaches it while it drains.
    loop.input('p2', (c) => c.leave(loop.now))
    loop.input('p9', (c) => c.join(loop.now, 'p2'))
    expect(j.joiningThrough).toBe('p2')
    const target = successorOf('p2', PEERS5)
    loop.runUntil(() => j.joiningThrough === target, 100, 'redirect')
    loop.runUntil(() => j.state === 'running' && !j.ownedSet.isEmpty, 2000, 'join')
    expect(j.joiningThrough).toBeUndefined()
    expect(loop.outputs('joined', 'p9').length).toBe(1)
    expect(loop.sent.filter((m) => m.message.t === 'join-elsewhere').map((m) => [m.from, m.to, (m.message as Extract<Message, { t: 'join-elsewhere' }>).to])).toEqual([['p2', 'p9', target]])
    expect(loop.sent.filter((m) => m.message.t === 'join').map((m) => m.to)).toEqual(['p2', target])
    expect(loop.core('p2').stats.rejected['join-while-not-running']).toBeUndefined()
    loop.runUntil(() => loop.core('p2').state === 'left', 2000, 'p2 left')
    settledBroadcastOnce(loop, 'p9')
  })

  it('a rejoiner asking for its old ranges through a leaving contact gets exactly those', () => {
    // p4's messages are faster than the others': its join reaches p1 before p1's hand-off is acknowledged.
    const loop = settled(23, { latency: (a, b) => a === 'p4' || b === 'p4' ? 1 : 2 })
    const old = loop.core('p4').ownedSet
    loop.input('p4', (c) => c.leave(loop.now))
    loop.runUntil(() => loop.core('p4').state === 'left', 2000, 'p4 left')
    loop.run(50)
    loop.gracefullyGone.delete('p4')
    const back = loop.create('p4')
    loop.input('p1', (c) => c.leave(loop.now))
    loop.input('p4', (c) => c.join(loop.now, 'p1', { want: old, incarnation: 1 }))
    loop.runUntil(() => back.ownedSet.equals(old), 2000, 'old ranges back')
    expect(loop.sent.some((m) => m.message.t === 'join-elsewhere' && m.from === 'p1' && m.to === 'p4')).toBe(true)
    loop.run(200)
    loop.ok()
  })

  it('a chain of leaving contacts: each sends the joiner on, and it joins at the end', () => {
    const loop = settled()
    const j = loop.create('p9')
    // p1 leaves towards p2, which leaves towards p3: p9 is sent from p1 to p2 to p3.
    loop.input('p1', (c) => c.leave(loop.now))
    loop.input('p2', (c) => c.leave(loop.now))
    loop.input('p9', (c) => c.join(loop.now, 'p1'))
    loop.runUntil(() => j.state === 'running' && !j.ownedSet.isEmpty, 3000, 'join')
    const hops = loop.sent.filter((m) => m.message.t === 'join').map((m) => m.to)
    expect(hops[0]).toBe('p1')
    expect(hops.length).toBeGreaterThanOrEqual(2)
    expect(hops.at(-1)).not.toBe('p1')
    expect(hops.at(-1)).not.toBe('p2')
    loop.runUntil(() => loop.core('p1').state === 'left' && loop.core('p2').state === 'left', 3000, 'leavers gone')
    settledBroadcastOnce(loop, 'p0')
  })

  it('the last member leaving cannot send a joiner anywhere: the join goes unanswered', () => {
    const loop = settled(4, {}, ['p0'])
    loop.create('p9')
    loop.input('p0', (c) => c.leave(loop.now))
    loop.input('p9', (c) => c.join(loop.now, 'p0'))
    loop.run(100)
    expect(loop.core('p9').state).toBe('joining')
    expect(loop.sent.some((m) => m.message.t === 'join-elsewhere')).toBe(false)
  })
})

describe('join-elsewhere from the wrong peer or at the wrong time', () => {
  const core = (): TreecastCore => {
    const c = new TreecastCore({ self: 'p9', random: () => 0.5 })
    c.join(0, 'p1')
    c.takeOutputs()
    return c
  }

  it('only the current contact can redirect, never to the joiner itself, and at most MAX_JOIN_REDIRECTS times', () => {
    const c = core()
    c.handle(1, 'p5', { t: 'join-elsewhere', to: 'p2' })
    expect(c.stats.rejected['join-elsewhere-not-from-contact']).toBe(1)
    c.handle(1, 'p1', { t: 'join-elsewhere', to: 'p9' })
    expect(c.stats.rejected['join-elsewhere-bad-target']).toBe(1)
    expect(c.joiningThrough).toBe('p1')
    expect(c.takeOutputs()).toEqual([])
    let from = 'p1'
    for (let i = 0; i < MAX_JOIN_REDIRECTS; i++) {
      const to = `q${i}`
      c.handle(2 + i, from, { t: 'join-elsewhere', to })
      expect(c.joiningThrough).toBe(to)
      // The same join (incarnation and all) goes to the new contact.
      expect(c.takeOutputs()).toEqual([{ type: 'send', to, message: { t: 'join', incarnation: 0 } }])
      from = to
    }
    c.handle(20, from, { t: 'join-elsewhere', to: 'p3' })
    expect(c.stats.rejected['join-redirect-limit']).toBe(1)
    expect(c.joiningThrough).toBe(from)
    // A welcome from an earlier contact is not taken.
    c.handle(21, 'p1', { t: 'facts', vnodeCount: 4, members: [{ peer: 'p1', incarnation: 0, status: 'alive' }], records: [{ ranges: IntervalSet.range(0, 4), owner: 'p1', version: 0 }], welcome: true })
    expect(c.state).toBe('joining')
    expect(c.stats.rejected['welcome-not-from-contact']).toBe(1)
  })

  it('the contact going down before its welcome: join-failed, once, and only for the current contact', () => {
    const c = core()
    c.peerDown(2, 'p5')
    expect(c.takeOutputs()).toEqual([])
    c.peerDown(3, 'p1')
    expect(c.takeOutputs()).toEqual([{ type: 'join-failed', contact: 'p1' }])
    c.peerDown(4, 'p1') // a second notice of the same close
    expect(c.takeOutputs()).toEqual([])
    expect(c.state).toBe('joining') // the driver gives it up (the node drops the core)
    // Redirected meanwhile: the old contact's close says nothing about the new one.
    const d = core()
    d.handle(1, 'p1', { t: 'join-elsewhere', to: 'p2' })
    d.takeOutputs()
    d.peerDown(2, 'p1')
    expect(d.takeOutputs()).toEqual([])
    d.peerDown(3, 'p2')
    expect(d.takeOutputs()).toEqual([{ type: 'join-failed', contact: 'p2' }])
  })

  it('a member that is not joining counts a join-elsewhere as a rejection and changes nothing', () => {
    const loop = settled()
    loop.input('p0', (c) => c.handle(loop.now, 'p1', { t: 'join-elsewhere', to: 'p2' }))
    expect(loop.core('p0').stats.rejected['join-elsewhere-not-joining']).toBe(1)
    expect(loop.core('p0').joiningThrough).toBeUndefined()
    loop.ok()
  })

  it('JoinAttempt and the target rule on their own', () => {
    const a = new JoinAttempt('p1', { t: 'join', incarnation: 3 })
    expect(a.redirect('p9', 'p1', 'p1')).toBe('join-elsewhere-bad-target')
    expect(a.redirect('p9', 'p1', 'p2')).toBe(true)
    expect(a.contact).toBe('p2')
    expect(a.redirects).toBe(1)
    const m = new Membership()
    for (const p of ['p1', 'p2', 'p3', 'p9']) m.apply({ peer: p, incarnation: 0, status: 'alive' })
    m.apply({ peer: 'p1', incarnation: 0, status: 'left' })
    expect(joinElsewhereTarget('p1', 'p9', 'p3', m)).toBe('p3')
    // The hand-off target gone or the joiner itself: the successor among the others.
    m.apply({ peer: 'p3', incarnation: 0, status: 'dead' })
    expect(joinElsewhereTarget('p1', 'p9', 'p3', m)).toBe('p2')
    expect(joinElsewhereTarget('p1', 'p2', 'p2', m)).toBe('p9')
    m.apply({ peer: 'p2', incarnation: 0, status: 'dead' })
    expect(joinElsewhereTarget('p1', 'p9', undefined, m)).toBeUndefined()
  })
})
