/**
 * The tree table (trees/tree-table.ts) when peers restart under the same id, or die, and
 * others hear of it late: messages carry no incarnation, so a new incarnation may attach in
 * trees under the old one's name. Every parent pointer must stay known to its parent (the
 * leaf rule), or a peer that looks like a leaf can close a cycle with a short check
 * (hand-wired network: test/tree-net.ts; the core's side at the end).
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { Message } from '../overlay/messages.ts'
import { TREE_KINDS } from '../trees/tree-kind.ts'
import { TreeNet, attractive } from './tree-net.ts'
import { coreThatDeclaredBDead } from './core-loop.ts'

describe('TreeTable: restarts and deaths heard of late', () => {
  it.each([false, true])('a peer that restarts before its crash is noticed, whose old children still point to it (full checks: %s; swarm-striped-8673)', (full) => {
    // r <- p <- c <- g, then p restarts: c still has p as its parent.
    const net = new TreeNet(['r', 'p', 'c', 'g'])
    const p = net.builtThenRestarted('r', [['p', 'r'], ['c', 'p'], ['g', 'c']], 'p', full)
    // A short check to its old child is refused there: the origin is its parent.
    net.move('p', 'c', 'r')
    for (const kind of TREE_KINDS) expect(net.parentOf('p', kind, 'r')).toBeNull()
    // To its old grandchild: a short check would be taken (g cannot see that p is its
    // ancestor) and close p -> g -> c -> p; the full check the core sends after such a
    // restart walks g -> c -> p and is refused.
    // (Without it the cycle closes, until c's next reach report to p is answered with a disown.)
    expect(p.judge(0, 'g', 1, 1e12, [attractive('r')])).toBe(2)
    expect(net.drainSawCycle('r')).toBe(!full)
  })

  it.each([false, true])('a peer that hears of a restart after the new incarnation became its child (told as a restart: %s; swarm-striped-8673)', (told) => {
    // r <- y and r <- a; x restarts unnoticed, attaches under y, and a moves under x.
    const net = new TreeNet(['r', 'y', 'x', 'a'])
    net.builtThenRestarted('r', [['y', 'r'], ['x', 'r'], ['a', 'r']], 'x', true)
    net.move('x', 'y', 'r')
    net.move('a', 'x', 'r')
    for (const kind of TREE_KINDS) expect(net.parentOf('a', kind, 'r')).toBe('x')
    // Only now does y hear that x restarted: x's old incarnation is dead.
    net.log.length = 0
    if (told) net.t('y').peerGone('x', { keepsCheck: () => false })
    else net.t('y').peerGone('x')
    // Told, y disowns x (and is no leaf until x answers). Dropping x silently left y a leaf
    // in its own eyes: its short check to a, which cannot see y above it, closed y -> a -> x -> y.
    expect(net.sentOps('disown').map((s) => `${s.from}>${s.to}`)).toEqual(told ? ['y>x', 'y>x'] : [])
    expect(net.t('y').judge(0, 'a', 1, 1e12, [attractive('r')])).toBe(2)
    expect(net.drainSawCycle('r')).toBe(!told)
    if (told) {
      for (const kind of TREE_KINDS) {
        expect(net.parentOf('x', kind, 'r')).toBeNull()
        expect(net.t('y').get(kind, 'r')?.unanswered.size).toBe(0)
      }
    }
  })

  it.each([false, true])('a peer that hears of a restart of its parent, the root itself, detaches from it (told as a restart: %s)', (told) => {
    // r restarts unnoticed, and z attaches right under the new r in r's own trees.
    const net = new TreeNet(['r', 'z'])
    net.restart('r', false)
    net.ensureRoot('r')
    expect(net.judge('z', 'r', 1, 1e6)).toBe(2)
    net.drain()
    for (const kind of TREE_KINDS) expect(net.t('r').get(kind, 'r')?.children.has('z')).toBe(true)
    // z hears of the restart: r's trees go (the old incarnation's), and come back empty.
    net.t('z').removeRoot('r')
    net.t('z').peerGone('r', told ? { keepsCheck: () => false } : 'dead')
    net.t('z').ensureRoot('r')
    net.drain()
    // Either way r drops z as a child (it once kept, unless told of a restart, a child that did not point to it).
    for (const kind of TREE_KINDS) expect(net.t('r').get(kind, 'r')?.children.has('z')).toBe(false)
  })

  it('a disown still unanswered when a restart is heard of is sent again, and held (review of 463bdcf)', () => {
    // x restarts unnoticed and attaches under y, c under x. Then r restarts: y drops r's
    // trees (disowning x, slowly) and remakes them. Then y hears that x restarted: the disown
    // in flight may have reached only x's old incarnation.
    const net = new TreeNet(['r', 'y', 'x', 'c'])
    net.build('r', [['y', 'r'], ['x', 'r'], ['c', 'r']], 10)
    net.restart('x', true)
    net.ensureRoot('r')
    expect(net.judge('x', 'y', 1, 1e12, [attractive('r')])).toBe(2)
    net.drain()
    expect(net.judge('c', 'x', 1, 1e12, [attractive('r')])).toBe(2)
    net.drain()
    const y = net.t('y')
    y.removeRoot('r')
    y.ensureRoot('r')
    net.log.length = 0
    y.peerGone('x', { keepsCheck: () => false })
    expect(net.sentOps('disown').map((s) => `${s.from}>${s.to}`)).toEqual(['y>x', 'y>x'])
    // Still no leaf: its check to c is a full one, and c's path runs through x to y.
    for (const kind of TREE_KINDS) expect(y.get(kind, 'r')?.unanswered.size).toBe(1)
    expect(y.judge(0, 'c', 1, 1e12, [attractive('r')])).toBe(2)
    y.flush()
    expect(net.sentOps('check').filter((s) => s.from === 'y').every((s) => s.op.op === 'check' && s.op.short !== true)).toBe(true)
    expect(net.drainSawCycle('r')).toBe(false)
    for (const kind of TREE_KINDS) expect(y.get(kind, 'r')?.unanswered.size).toBe(0)
  })

  it('a reach from a peer that is no child here is answered with a disown: it points here unknown to this peer', () => {
    const net = new TreeNet(['r', 'y', 'x'])
    net.build('r', [['y', 'r'], ['x', 'y']], 10)
    // y forgets x (say, as a dead incarnation's child) while x still points to y.
    net.t('y').peerGone('x')
    net.log.length = 0
    net.t('y').handleOp(0, 'x', { op: 'reach', kind: 'lat', root: 'r', reach: IntervalSet.range(20, 30) })
    expect(net.sentOps('disown').map((s) => `${s.from}>${s.to}:${s.op.kind}`)).toEqual(['y>x:lat'])
    // No leaf until x answers.
    expect(net.t('y').get('lat', 'r')?.unanswered.size).toBe(1)
    net.drain()
    expect(net.t('y').get('lat', 'r')?.unanswered.size).toBe(0)
    expect(net.parentOf('x', 'lat', 'r')).toBeNull()
    expect(net.parentOf('x', 'bw', 'r')).toBe('y')
  })

  it('a child dropped as dead is disowned: a new incarnation may have attached under the old one\'s name before the death was heard of', () => {
    const net = new TreeNet(['r', 'y', 'x'])
    net.build('r', [['y', 'r'], ['x', 'y']], 10)
    net.log.length = 0
    net.t('y').peerGone('x', 'dead')
    expect(net.sentOps('disown').map((s) => `${s.from}>${s.to}:${s.op.kind}`)).toEqual(['y>x:lat', 'y>x:bw'])
    // (Had x really died the disowns go nowhere; here it lives on, as a new incarnation would.)
    net.drain()
    for (const kind of TREE_KINDS) expect(net.parentOf('x', kind, 'r')).toBeNull()
    // A leaver is not disowned: it detached before it left.
    const net2 = new TreeNet(['r', 'y', 'x'])
    net2.build('r', [['y', 'r'], ['x', 'y']], 10)
    net2.log.length = 0
    net2.t('y').peerGone('x', 'left')
    expect(net2.sentOps('disown')).toEqual([])
  })

  it('a restarted peer keeps its own checks\' locks where its old incarnation is forgotten', () => {
    // x's old incarnation checked through y (lock id 7); the new one too (lock id 2^32 + 1).
    const net = new TreeNet(['r', 'y', 'x'])
    net.build('r', [['y', 'r']], 10)
    const y = net.t('y')
    y.handleOp(0, 'x', { op: 'check', kind: 'lat', root: 'r', id: 7, origin: 'x', dist: 0, path: [] })
    y.handleOp(0, 'x', { op: 'check', kind: 'lat', root: 'r', id: 2 ** 32 + 1, origin: 'x', dist: 0, path: [] })
    expect([...(y.get('lat', 'r')?.locks.keys() ?? [])].sort()).toEqual([`x#${2 ** 32 + 1}`, 'x#7'])
    y.peerGone('x', { keepsCheck: (id) => id > 2 ** 32 })
    expect([...(y.get('lat', 'r')?.locks.keys() ?? [])]).toEqual([`x#${2 ** 32 + 1}`])
    y.peerGone('x')
    expect(y.get('lat', 'r')?.locks.size).toBe(0)
  })
})

describe('tree ops from a peer declared dead', () => {
  it('one that names this peer its parent (adopt, reach) is disowned, every time: it may be a newer incarnation that attached before this peer heard of it', () => {
    const a = coreThatDeclaredBDead()
    const reach = IntervalSet.range(2, 4)
    const disownsTo = (at: number, msg: Message): unknown[] => {
      a.handle(at, 'b', msg)
      return a.takeOutputs().flatMap((o) => o.type === 'send' && o.to === 'b' && o.message.t === 'tree' ? o.message.ops : [])
    }
    expect(disownsTo(2, { t: 'tree', ops: [{ op: 'adopt', kind: 'lat', root: 'c', reach, bw: 0 }, { op: 'unlock', kind: 'lat', root: 'c', id: 9, origin: 'b' }, { op: 'reach', kind: 'bw', root: 'a', reach }] }))
      .toEqual([{ op: 'disown', kind: 'lat', root: 'c' }, { op: 'disown', kind: 'bw', root: 'a' }])
    // Not rate-limited like the death notice; ops that name no parent get none.
    expect(disownsTo(3, { t: 'tree', ops: [{ op: 'adopt', kind: 'bw', root: 'c', reach, bw: 1 }] })).toEqual([{ op: 'disown', kind: 'bw', root: 'c' }])
    expect(disownsTo(4, { t: 'tree', ops: [{ op: 'detach', kind: 'lat', root: 'c' }, { op: 'metric', kind: 'lat', root: 'c', value: 1 }] })).toEqual([])
    // A disown gets its answer, a detach (a newer incarnation may have disowned this peer before it heard of it).
    expect(disownsTo(5, { t: 'tree', ops: [{ op: 'disown', kind: 'bw', root: 'c' }] })).toEqual([{ op: 'detach', kind: 'bw', root: 'c' }])
    expect(a.stats.rejected['from-dead-member']).toBe(4)
  })
})

describe('TreeTable: a tree dropped for its root\'s death or restart', () => {
  it.each([false, true])('leaves no child behind at a parent that had remade it already (told as a restart: %s)', (told) => {
    // r <- y, r <- x. r restarts unnoticed; y hears of it first and remakes r's trees under
    // the new r; x, still on the old view, moves under y there.
    const net = new TreeNet(['r', 'y', 'x'])
    net.build('r', [['y', 'r'], ['x', 'r']], 10)
    net.restart('r', false)
    net.ensureRoot('r')
    net.t('y').removeRoot('r')
    net.t('y').peerGone('r', { keepsCheck: () => false })
    net.t('y').ensureRoot('r')
    expect(net.judge('y', 'r', 1, 1e6)).toBe(2)
    net.drain()
    net.move('x', 'y', 'r')
    for (const kind of TREE_KINDS) expect(net.parentOf('x', kind, 'r')).toBe('y')
    // Now x hears of it (as the old incarnation's death, or as the restart): r's trees go and come back empty.
    net.t('x').removeRoot('r')
    net.t('x').peerGone('r', told ? { keepsCheck: () => false } : 'dead')
    net.t('x').ensureRoot('r')
    net.drain()
    // y no longer counts x as its child, nor x's virtual nodes in its reach.
    for (const kind of TREE_KINDS) {
      expect(net.parentOf('x', kind, 'r')).toBeNull()
      expect(net.t('y').get(kind, 'r')?.children.has('x')).toBe(false)
      expect(net.t('y').reachOf(kind, 'r')?.equals(net.owned.get('y') as IntervalSet)).toBe(true)
    }
  })
})

describe('TreeTable: a parent heard of as gone', () => {
  it.each(['dead', 'left'] as const)('is told (detach) when its incarnation heard of as %s may be a newer one\'s that adopted this peer', (gone) => {
    // r <- a; a restarts unnoticed and attaches under r again; c, still on the old view of a, moves under the new a.
    const net = new TreeNet(['r', 'a', 'c'])
    net.build('r', [['a', 'r'], ['c', 'r']], 10)
    net.restart('a', true)
    net.ensureRoot('r')
    expect(net.judge('a', 'r', 1, 1e6)).toBe(2)
    net.drain()
    net.move('c', 'a', 'r')
    for (const kind of TREE_KINDS) expect(net.t('a').get(kind, 'r')?.children.has('c')).toBe(true)
    // c hears that a's old incarnation is gone (before it hears of the new one).
    net.t('c').removeRoot('a')
    net.t('c').peerGone('a', gone)
    net.drain()
    // The new a no longer holds c as a child (it never would: c will not send it a reach, and ignores its metrics).
    for (const kind of TREE_KINDS) {
      expect(net.parentOf('c', kind, 'r')).toBeNull()
      expect(net.t('a').get(kind, 'r')?.children.has('c')).toBe(false)
    }
  })
})
