/**
 * Small building blocks of the core: the timer queue, the de-duplication cache and the
 * option resolution (reduction operations: test/reduce-ops.test.ts).
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { TimerQueue, type TimerKind } from '../overlay/timer-queue.ts'
import { DedupeCache } from '../overlay/dedupe-cache.ts'
import * as config from '../overlay/config.ts'
import { MAX_TIME_OPTION_MS, resolveCoreConfig, type CoreConfig, type CoreInit } from '../overlay/config.ts'
import { InvalidConfigError } from '../overlay/errors.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { Message } from '../overlay/messages.ts'
import { coreThatDeclaredBDead } from './core-loop.ts'

describe('TimerQueue', () => {
  it('is empty at first', () => {
    const q = new TimerQueue()
    expect(q.nextAt()).toBeUndefined()
    expect(q.popDue(1e9)).toBeUndefined()
    expect(q.size).toBe(0)
  })

  it('pops in time order, only what is due', () => {
    const q = new TimerQueue()
    q.add(30, 'probe', 'c')
    q.add(10, 'reduce', 'a')
    q.add(20, 'gc', 'b')
    expect(q.nextAt()).toBe(10)
    expect(q.popDue(5)).toBeUndefined()
    expect(q.popDue(20)?.key).toBe('a')
    expect(q.popDue(20)?.key).toBe('b')
    expect(q.popDue(20)).toBeUndefined()
    expect(q.nextAt()).toBe(30)
    expect(q.popDue(30)).toMatchObject({ at: 30, kind: 'probe', key: 'c' })
    expect(q.size).toBe(0)
  })

  it('equal times pop in insertion order; the key defaults to empty', () => {
    const q = new TimerQueue()
    const kinds: TimerKind[] = ['probe', 'liveness', 'reduce', 'leave', 'park', 'gc', 'lock']
    kinds.forEach((k) => q.add(7, k))
    q.add(3, 'lock', 'first')
    expect(q.popDue(7)?.key).toBe('first')
    const out: TimerKind[] = []
    for (let e = q.popDue(7); e !== undefined; e = q.popDue(7)) { out.push(e.kind); expect(e.key).toBe('') }
    expect(out).toEqual(kinds)
  })

  it('property: nextAt is always the earliest deadline left, under adds and pops mixed', () => {
    const step = fc.oneof(fc.integer({ min: 0, max: 50 }).map((at) => ({ add: at })), fc.integer({ min: 0, max: 50 }).map((now) => ({ pop: now })))
    fc.assert(fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
      const q = new TimerQueue()
      const left: number[] = []
      for (const st of steps) {
        if ('add' in st) { q.add(st.add, 'gc'); left.push(st.add) } else {
          const e = q.popDue(st.pop)
          if (e !== undefined) left.splice(left.indexOf(e.at), 1)
        }
        expect(q.nextAt()).toBe(left.length === 0 ? undefined : Math.min(...left))
        expect(q.size).toBe(left.length)
      }
    }), { numRuns: 200 })
  })

  it('property: pops every entry, ordered by (at, insertion)', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 200 }), (ats) => {
      const q = new TimerQueue()
      ats.forEach((at, i) => q.add(at, 'gc', String(i)))
      expect(q.size).toBe(ats.length)
      const want = ats.map((at, i) => ({ at, i })).sort((a, b) => a.at - b.at || a.i - b.i).map((e) => String(e.i))
      const got: string[] = []
      for (let e = q.popDue(Infinity); e !== undefined; e = q.popDue(Infinity)) got.push(e.key)
      expect(got).toEqual(want)
    }), { numRuns: 200 })
  })

  it('property: interleaved adds and pops stay ordered', () => {
    const arbOp = fc.oneof(fc.record({ add: fc.integer({ min: 0, max: 50 }) }), fc.record({ pop: fc.integer({ min: 0, max: 50 }) }))
    fc.assert(fc.property(fc.array(arbOp, { maxLength: 150 }), (ops) => {
      const q = new TimerQueue()
      const model: Array<{ at: number, seq: number }> = []
      let seq = 0
      for (const op of ops) {
        if ('add' in op) { q.add(op.add, 'reduce', String(seq)); model.push({ at: op.add, seq: seq++ }); continue }
        model.sort((a, b) => a.at - b.at || a.seq - b.seq)
        const head = model[0]
        const e = q.popDue(op.pop)
        if (head === undefined || head.at > op.pop) { expect(e).toBeUndefined(); continue }
        model.shift()
        expect(e?.key).toBe(String(head.seq))
      }
      expect(q.size).toBe(model.length)
    }), { numRuns: 200 })
  })
})

describe('DedupeCache', () => {
  it('unknown streams have an empty set; set replaces', () => {
    const c = new DedupeCache(4)
    expect(c.get('x').isEmpty).toBe(true)
    c.set('x', IntervalSet.of(1))
    c.set('x', IntervalSet.of(1, 2))
    expect(c.get('x').equals(IntervalSet.of(1, 2))).toBe(true)
    expect(c.size).toBe(1)
    expect(c.evicted).toBe(0)
  })

  it('evicts the oldest inserted stream first; updating an entry does not refresh it', () => {
    const c = new DedupeCache(3)
    c.set('a', IntervalSet.of(1))
    c.set('b', IntervalSet.of(2))
    c.set('c', IntervalSet.of(3))
    c.set('a', IntervalSet.of(1, 5)) // update, not a new entry: no eviction, order unchanged
    expect(c.size).toBe(3)
    expect(c.evicted).toBe(0)
    c.set('d', IntervalSet.of(4))
    expect(c.get('a').isEmpty).toBe(true) // 'a' was the oldest
    expect([...c.entries()].map(([k]) => k)).toEqual(['b', 'c', 'd'])
    c.set('e', IntervalSet.of(5))
    expect([...c.entries()].map(([k]) => k)).toEqual(['c', 'd', 'e'])
    expect(c.evicted).toBe(2)
    expect(c.get('e').equals(IntervalSet.of(5))).toBe(true)
  })

  it('property: never holds more than its capacity and keeps the most recently inserted ids', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 8 }), fc.array(fc.nat(15), { maxLength: 60 }), (cap, ids) => {
      const c = new DedupeCache(cap)
      const order: string[] = []
      for (const i of ids) {
        const id = `s${i}`
        c.set(id, IntervalSet.of(i))
        if (!order.includes(id)) { order.push(id); if (order.length > cap) order.shift() }
        expect(c.size).toBeLessThanOrEqual(cap)
      }
      expect([...c.entries()].map(([k]) => k)).toEqual(order)
    }), { numRuns: 200 })
  })
})

describe('resolveCoreConfig', () => {
  /** Expects `init` to throw InvalidConfigError whose message names `field`. */
  const expectBad = (init: Record<string, unknown>, field: string): void => {
    let err: unknown
    try { resolveCoreConfig(init as CoreInit) } catch (e) { err = e }
    expect(err, `${field} = ${String(init[field])}`).toBeInstanceOf(InvalidConfigError)
    expect((err as Error).name).toBe('InvalidConfigError')
    expect((err as Error).message).toContain(field)
  }

  /** DEFAULT_FAILURE_DETECTION_TIMEOUT_MS -> failureDetectionTimeoutMs */
  const fieldOf = (constant: string): string => constant.slice('DEFAULT_'.length).toLowerCase().replace(/_([a-z])/g, (_m, ch: string) => ch.toUpperCase())
  const defaults = Object.entries(config).filter(([k, v]) => k.startsWith('DEFAULT_') && typeof v === 'number') as Array<[string, number]>

  it('defaults match the DEFAULT_ constants, one constant per numeric field', () => {
    const c = resolveCoreConfig() as unknown as Record<string, unknown>
    expect(defaults.length).toBeGreaterThanOrEqual(20)
    for (const [name, value] of defaults) expect(c[fieldOf(name)], name).toBe(value)
    const numeric = Object.keys(c).filter((k) => typeof c[k] === 'number').sort()
    expect(numeric).toEqual(defaults.map(([name]) => fieldOf(name)).sort())
    expect(c.joinPolicy).toBe('contact')
    expect(resolveCoreConfig({})).toEqual(c)
  })

  it('every numeric field rejects negative, NaN and non-number values, naming the field', () => {
    for (const [name] of defaults) {
      const field = fieldOf(name)
      for (const v of [-1, NaN, -Infinity, '7', true]) expectBad({ [field]: v }, field)
    }
  })

  it('every time option (…Ms) rejects more than 2^31 - 1 ms (setTimeout\'s limit, about 24.8 days) and takes that much', () => {
    const times = defaults.map(([name]) => fieldOf(name)).filter((f) => f.endsWith('Ms'))
    expect(times.length).toBeGreaterThanOrEqual(15)
    for (const field of times) {
      expectBad({ [field]: MAX_TIME_OPTION_MS + 1 }, field)
      expect((resolveCoreConfig({ [field]: MAX_TIME_OPTION_MS }) as unknown as Record<string, number>)[field]).toBe(MAX_TIME_OPTION_MS)
    }
  })

  it('the defaults are the documented numbers (003 and the @default tags)', () => {
    const c = resolveCoreConfig()
    expect(c.probeBytes).toBe(131072)
    expect(c.probeExtraCount).toBe(10)
    expect(c.switchPointBytes).toBe(262144)
    expect(c.chunkBytes).toBe(65536)
    expect(c.maxPayloadBytes).toBe(2 ** 30)
    expect(c.maxReduceLength).toBe(16777216)
    expect(c.steadyProbeIntervalMs).toBe(0)
    expect(c.probeNearLane).toBe(true)
    expect(c.probeBandwidthReuseMs).toBe(10000)
    expect(c.probeNearLaneGapMs).toBe(10)
    expect(c.probeDetour).toBe(false)
  })

  it('rejects an option it does not know (a misspelt one would be ignored and its default used)', () => {
    expectBad({ probeBytez: 5 }, 'probeBytez')
    expect(() => resolveCoreConfig({ probeBytes: undefined })).not.toThrow()
  })

  it('probeDetour must be a boolean', () => {
    for (const v of [1, 'yes']) expectBad({ probeDetour: v as unknown as boolean }, 'probeDetour')
    expect(resolveCoreConfig({ probeDetour: true }).probeDetour).toBe(true)
  })

  it('given values are kept', () => {
    const init: CoreInit = { chunkBytes: 4, probeExtraCount: 0, reduceTimeoutMinMs: 0, joinPolicy: 'most-loaded', maxHops: 3, steadyProbeIntervalMs: 100 }
    const c = resolveCoreConfig(init)
    expect(c).toMatchObject(init)
    expect(c.probeBytes).toBe(config.DEFAULT_PROBE_BYTES)
  })

  const positive: Array<keyof CoreConfig> = ['probeBytes', 'probeTimeoutMs', 'switchPointBytes', 'chunkBytes',
    'reduceTimeoutFactor', 'reduceRetryMs', 'reduceMaxDurationMs', 'failureDetectionTimeoutMs', 'lockTimeoutMs',
    'leaveTimeoutMs', 'maxPayloadBytes', 'dedupeCapacity', 'maxActiveTransfers', 'transferIdleMs', 'maxHops',
    'maxReduceLength', 'parkRetryMs']
  const nonNegative: Array<keyof CoreConfig> = ['probeExtraCount', 'reduceTimeoutMinMs', 'steadyProbeIntervalMs', 'tieTolerance']

  it.each(positive)('%s must be a finite number > 0', (field) => {
    for (const v of [0, -1, NaN, Infinity, -Infinity, '5', true]) expectBad({ [field]: v }, field)
    // The smallest accepted value.
    expect(() => resolveCoreConfig({ [field]: 1 })).not.toThrow()
  })

  it.each(nonNegative)('%s must be a finite number >= 0', (field) => {
    for (const v of [-1, -0.5, NaN, Infinity]) expectBad({ [field]: v }, field)
    expect(resolveCoreConfig({ [field]: 0 })[field]).toBe(0)
  })

  it('integer-only fields', () => {
    expectBad({ probeExtraCount: 1.5 }, 'probeExtraCount')
    expectBad({ chunkBytes: 100.5 }, 'chunkBytes')
    expectBad({ chunkBytes: 1024 * 1024 + 1 }, 'chunkBytes')
    expectBad({ maxReduceLength: 2.5 }, 'maxReduceLength')
    expectBad({ maxReduceLength: 2 ** 27 + 1 }, 'maxReduceLength')
    expect(resolveCoreConfig({ maxReduceLength: 2 ** 27 }).maxReduceLength).toBe(2 ** 27)
    expect(resolveCoreConfig({ chunkBytes: 1024 * 1024 }).chunkBytes).toBe(1024 * 1024)
  })

  it('tieTolerance must be below 1', () => {
    expectBad({ tieTolerance: 1 }, 'tieTolerance')
    expectBad({ tieTolerance: 3 }, 'tieTolerance')
    expect(resolveCoreConfig({ tieTolerance: 0.99 }).tieTolerance).toBe(0.99)
  })

  it('joinPolicy must be contact or most-loaded', () => {
    expectBad({ joinPolicy: 'random' }, 'joinPolicy')
    expectBad({ joinPolicy: '' }, 'joinPolicy')
    expect(resolveCoreConfig({ joinPolicy: 'most-loaded' }).joinPolicy).toBe('most-loaded')
  })

  it('non-number values of the non-negative fields are rejected', () => {
    for (const field of nonNegative) for (const v of ['3', true, {}, []]) expectBad({ [field]: v }, field)
  })
})

describe('messages from a peer declared dead', () => {
  it('are dropped, and the sender is told it is dead (at most once a second)', () => {
    const a = coreThatDeclaredBDead()
    expect(a.members.statusOf('b')).toBe('dead')
    a.handle(2, 'b', { t: 'ping', nonce: 7 })
    const out = a.takeOutputs()
    expect(out.some((o) => o.type === 'send' && o.message.t === 'pong')).toBe(false)
    const told = out.filter((o) => o.type === 'send' && o.to === 'b' && o.message.t === 'facts')
    expect(told).toHaveLength(1)
    const msg = (told[0] as unknown as { message: { members: Array<{ peer: string, status: string }> } }).message
    expect(msg.members).toEqual([expect.objectContaining({ peer: 'b', status: 'dead' })])
    expect(a.stats.rejected['from-dead-member']).toBe(1)
    a.handle(500, 'b', { t: 'ping', nonce: 8 })
    expect(a.takeOutputs().filter((o) => o.type === 'send' && o.to === 'b')).toHaveLength(0)
    a.handle(1500, 'b', { t: 'ping', nonce: 9 })
    expect(a.takeOutputs().filter((o) => o.type === 'send' && o.to === 'b')).toHaveLength(1)
  })
})

describe('a peer declared dead that reconnects', () => {
  it('is told it is dead; a live one is not', () => {
    const a = coreThatDeclaredBDead()
    a.peerConnected(2, 'c')
    expect(a.takeOutputs().filter((o) => o.type === 'send')).toHaveLength(0)
    a.peerConnected(3, 'b')
    const told = a.takeOutputs().filter((o) => o.type === 'send' && o.to === 'b' && o.message.t === 'facts')
    expect(told).toHaveLength(1)
  })
})

describe('many peers leaving at once', () => {
  const left = (peer: string) => ({ t: 'facts' as const, vnodeCount: 8, members: [{ peer, incarnation: 0, status: 'left' as const }], records: [], welcome: false })
  const sends = (outs: Array<{ type: string }>, t: string): Array<{ to: string, message: { t: string } }> =>
    outs.filter((o) => o.type === 'send' && (o as unknown as { message: { t: string } }).message.t === t) as unknown as Array<{ to: string, message: { t: string } }>

  it('a leaver sends data for a leaving owner to it, then re-routes when its connection closes; hand-offs go to a live successor', async () => {
    const { TreecastCore } = await import('../overlay/core.ts')
    const b = new TreecastCore({ self: 'b', random: () => 0.5 })
    b.bootstrap(0, 8, ['a', 'b', 'c', 'd'])
    expect(b.ownedSet.toString()).toBe('{[2,4)}')
    // A two-chunk broadcast reaches b, for b's own virtual nodes: b holds it while it leaves.
    b.handle(1, 'a', { t: 'chunk', stream: 1, index: 0, data: new Uint8Array(1), open: { id: 'a/0.1', origin: 'a', mode: 'lat', header: IntervalSet.range(2, 4), chunkCount: 2, totalBytes: 2, fallback: false, hops: 1 } })
    b.takeOutputs()
    b.leave(2)
    let out = b.takeOutputs()
    expect(sends(out, 'handoff').map((o) => o.to)).toEqual(['c'])
    expect(sends(out, 'chunk').map((o) => o.to)).toEqual(['c'])
    // c leaves too: b's view still names it (no later record reaches a leaver), and the
    // rest of the broadcast is sent there rather than parked.
    b.handle(3, 'c', left('c'))
    b.handle(4, 'a', { t: 'chunk', stream: 1, index: 1, data: new Uint8Array(1) })
    out = b.takeOutputs()
    expect(sends(out, 'chunk').map((o) => o.to)).toEqual(['c'])
    expect(b.state).toBe('leaving')
    // Ranges handed to b now go to a successor alive now (d), not to c.
    b.handle(5, 'a', { t: 'handoff', record: { ranges: IntervalSet.range(0, 2), owner: 'b', version: 1000, ownerIncarnation: 0 }, delivered: [] })
    out = b.takeOutputs()
    expect(sends(out, 'handoff').map((o) => o.to)).toEqual(['d'])
    // c's connection closes without an acknowledgement: what b sent it goes to c's successor.
    b.peerDown(6, 'c')
    out = b.takeOutputs()
    expect(sends(out, 'chunk').map((o) => o.to)).toEqual(['d', 'd'])
    expect(b.view.ownerOf(2)).toBe('d')
  })

  it('an orphan re-homed to a peer that turns out to be leaving is re-homed again', async () => {
    const { TreecastCore } = await import('../overlay/core.ts')
    const a = new TreecastCore({ self: 'a', random: () => 0.5 })
    a.bootstrap(0, 6, ['a', 'b', 'c'])
    // b left and is gone with [2,4) still recorded as its own here (its hand-off record was
    // lost): the successor rule gives it to c, which is not told.
    a.handle(1, 'b', { ...left('b'), vnodeCount: 6 })
    a.peerDown(2, 'b')
    expect(a.view.ownerOf(2)).toBe('c')
    // c turns out to be leaving: it would never claim [2,4). a re-homes it, to itself here.
    a.handle(3, 'c', { ...left('c'), vnodeCount: 6 })
    expect(a.view.ownerOf(2)).toBe('a')
    expect(a.ownedSet.toString()).toBe('{[0,4)}')
    // c's own ranges are c's to hand over: untouched.
    expect(a.view.ownerOf(4)).toBe('c')
  })
})

describe('Liveness', () => {
  it('pings an awaited peer silent past the timeout, declares it dead after a second silence, and forgets silence on any message', async () => {
    const { Liveness } = await import('../overlay/liveness.ts')
    const pinged: string[] = []
    const dead: string[] = []
    const timers: number[] = []
    let awaited = ['a', 'b']
    const l = new Liveness({ awaited: () => awaited, ping: (p) => pinged.push(p), declareDead: (_now, p) => dead.push(p), setTimer: (at) => timers.push(at) }, 100)
    l.arm(0, true)
    l.arm(0, true) // armed once
    expect(timers).toEqual([50])
    l.check(50) // first look: silence starts counting now
    l.heard(120, 'a')
    l.check(160) // b silent 110 ms: pinged; a heard 40 ms ago
    expect(pinged).toEqual(['b'])
    l.check(200)
    expect(dead).toEqual([])
    l.check(270) // b pinged 110 ms ago and still silent
    expect(dead).toEqual(['b'])
    awaited = []
    l.arm(270, false)
    expect(timers).toEqual([50])
  })
})

describe('Liveness with the times kept by its host (the core keeps them in its member list)', () => {
  it('reads and writes the host\'s times for the peers it keeps, and keeps its own for the others', async () => {
    const { Liveness } = await import('../overlay/liveness.ts')
    const { Membership } = await import('../overlay/membership.ts')
    const members = new Membership()
    members.apply({ peer: 'a', incarnation: 0, status: 'alive' })
    const pinged: string[] = []
    const dead: string[] = []
    const l = new Liveness({
      awaited: () => ['a', 'stranger'],
      ping: (p) => pinged.push(p),
      declareDead: (_now, p) => dead.push(p),
      setTimer: () => {},
      heardAt: (p) => members.heardAt(p),
      setHeardAt: (p, now) => members.setHeardAt(p, now)
    }, 100)
    expect(members.heardAt('a')).toBeUndefined()
    l.check(50) // silence starts counting: 'a' on its entry, 'stranger' here
    expect(members.heardAt('a')).toBe(50)
    expect(l.tracked).toBe(1)
    members.noteHeard('a', 120) // what the core does for every message
    members.noteHeard('stranger', 120) // nothing kept for a non-member
    expect(members.heardAt('stranger')).toBeUndefined()
    l.heard(120, 'a', true)
    l.check(160)
    expect(pinged).toEqual(['stranger'])
    members.apply({ peer: 'a', incarnation: 1, status: 'alive' }) // a new incarnation keeps the time
    expect(members.heardAt('a')).toBe(120)
    l.check(230) // 'a' silent 110 ms: pinged; 'stranger' pinged 70 ms ago
    expect(pinged).toEqual(['stranger', 'a'])
    l.check(270)
    expect(dead).toEqual(['stranger'])
  })
})

describe('PreJoinBuffer and a joining core', () => {
  it('keeps early messages within a count and a byte budget, and hands them back in order', async () => {
    const { PreJoinBuffer } = await import('../overlay/pre-join-buffer.ts')
    const { wireSize } = await import('../overlay/codec.ts')
    const chunk = (i: number): Message => ({ t: 'chunk', stream: i, index: 0, data: new Uint8Array(1000) })
    const size = wireSize(chunk(0))
    const b = new PreJoinBuffer(3, 10 * size)
    for (let i = 0; i < 3; i++) expect(b.push('x', chunk(i))).toBe(true)
    expect(b.push('x', chunk(3))).toBe(false) // count
    expect(b.drain().map((e) => (e.msg as Extract<Message, { t: 'chunk' }>).stream)).toEqual([0, 1, 2])
    expect(b.size).toBe(0)
    const small = new PreJoinBuffer(100, 2 * size + 1)
    expect(small.push('x', chunk(0))).toBe(true)
    expect(small.push('x', chunk(1))).toBe(true)
    expect(small.push('x', chunk(2))).toBe(false) // bytes
    expect(small.heldBytes).toBe(2 * size)
  })

  it('a joining core refuses early data past its byte budget and counts it, instead of holding gigabytes', async () => {
    const { MAX_PRE_JOIN_BYTES } = await import('../overlay/pre-join-buffer.ts')
    const { TreecastCore } = await import('../overlay/core.ts')
    const j = new TreecastCore({ self: 'j', random: () => 0.5 })
    j.join(0, 'a')
    const big: Message = { t: 'chunk', stream: 1, index: 0, data: new Uint8Array(1024 * 1024) }
    const n = Math.ceil(MAX_PRE_JOIN_BYTES / (1024 * 1024)) + 10
    for (let i = 0; i < n; i++) j.handle(1, 'a', big)
    expect(j.stats.rejected['pre-join-overflow']).toBeGreaterThanOrEqual(10)
    expect(j.stats.rejected['pre-join-overflow']).toBeLessThanOrEqual(11)
  })
})
