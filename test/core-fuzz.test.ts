/**
 * Remote input never crashes a peer (overlay/core.ts: "remote bad input never throws: it is
 * dropped and counted"). The codec's properties (test/codec.test.ts) show that any bytes
 * decode to a valid message or a WireError; here valid messages with arbitrary meaning, made
 * of the peers, virtual nodes, collective ids and stream numbers of a small running overlay
 * (test/arb-messages.ts), and copies of messages it really sent, are handed to its cores
 * from members and strangers while a broadcast and a reduction are under way, and the overlay runs on for seconds after. No
 * input, timer or later message may throw. Nothing is asserted about what the overlay then
 * delivers: a member may say anything (the overlay trusts its members), and a forged hand-off
 * or ownership fact really does move virtual nodes.
 */
import fc from 'fast-check'
import { describe, it } from 'vitest'
import { decodeMessage, encodeMessage } from '../overlay/codec.ts'
import { InvalidArgumentError } from '../overlay/errors.ts'
import type { CoreInit } from '../overlay/config.ts'
import type { Message } from '../overlay/messages.ts'
import { isTreeRoot } from '../overlay/tree-roots.ts'
import { IntervalSet, type Range } from '../virtual-nodes/interval-set.ts'
import { messageArbitrary } from './arb-messages.ts'
import { expectExactlyOnce, Loop } from './core-loop.ts'

/** Runs of the first property (`FUZZ_RUNS=2000 npx vitest run test/core-fuzz.test.ts` for a longer hunt). */
const RUNS = Number(process.env.FUZZ_RUNS ?? 60)
const PEERS = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5']
const VNODES = 24
const peer = fc.constantFrom(...PEERS, 'p6', 'stranger')
const world = {
  peer,
  // Collective ids as cores make them (`<peer>/<incarnation>.<n>`): p0/0.1 and p1/0.1 are the ones under way.
  id: fc.tuple(peer, fc.nat(1), fc.nat(4)).map(([p, inc, n]) => `${p}/${inc}.${n}`),
  // Mostly inside 0..VNODES-1, sometimes past it.
  set: fc.array(fc.tuple(fc.nat(VNODES + 4), fc.integer({ min: 1, max: 8 })).map(([s, n]): Range => [s, s + n]), { maxLength: 3 }).map((rs) => IntervalSet.fromRanges(rs)),
  count: fc.nat(40),
  collId: fc.constantFrom('c1', 'c2'),
  safeInt: fc.integer({ min: -2, max: 40 })
}
/**
 * A message to hand a core: a generated one, or (`replay`) a copy of one the overlay really
 * sent, the `replay`-th from the end, which brings live nonces, stream numbers, check ids and
 * collective ids (delivered again, to another peer, or as if from another).
 */
const injection = fc.record({ to: fc.constantFrom(...PEERS), from: peer, msg: messageArbitrary(world), gapMs: fc.nat(6), replay: fc.option(fc.nat(400), { freq: 2 }) })

/** The message `i` injects at this point of the run. */
function messageOf (loop: Loop, i: { msg: Message, replay: number | null }): Message {
  if (i.replay === null || loop.sent.length === 0) return i.msg
  return (loop.sent[Math.max(0, loop.sent.length - 1 - i.replay)] as { message: Message }).message
}

/** A settled 6-peer overlay with a 2 MB broadcast from p0 (about 200 ms), a reduction started at p1 and a collective one under way. */
function busyOverlay (config: CoreInit = {}, latency?: (a: string, b: string) => number): Loop {
  const loop = new Loop({ config, ...(latency !== undefined ? { latency } : {}) })
  loop.bootstrap(VNODES, PEERS)
  loop.runUntil(() => loop.stable(), 10_000, 'stable trees')
  loop.input('p0', (c) => c.broadcast(loop.now, new Uint8Array(2_000_000)))
  loop.input('p1', (c) => c.reduce(loop.now, { op: 'sum', length: 3 }))
  // A collective reduction every peer but p3 has called: it waits for p3 (callCollective).
  for (const p of PEERS) if (p !== 'p3') callCollective(loop, p, config)
  return loop
}

/** `peer` calls collective reduction c1, rooted at the first tree root. */
function callCollective (loop: Loop, peer: string, config: CoreInit): void {
  const root = PEERS.find((p) => isTreeRoot(p, config.treeRootStride ?? 1)) as string
  loop.input(peer, (c) => { c.reduceCollective(loop.now, { id: 'c1', root, op: 'sum', length: 2 }) })
}

describe('arbitrary valid messages at running cores', () => {
  /** Three clusters (0.15 ms inside, 3 ms between): the 2 MB broadcast is striped (overlay/stripes.ts). */
  const clusters = (a: string, b: string): number => (Number(a.slice(1)) % 3 === Number(b.slice(1)) % 3 ? 0.15 : 3)
  it.each([
    ['every peer a tree root', {}, undefined],
    ['trees rooted at some peers only (treeRootStride 2)', { treeRootStride: 2 }, undefined],
    ['three clusters, a striped broadcast', {}, clusters]
  ])('never throw, now or later, from members or strangers: %s', (_name, config: CoreInit, latency) => {
    // Sometimes p3 crashes or leaves during the injections: hand-offs and take-overs run too.
    const churn = fc.option(fc.record({ after: fc.nat(39), kind: fc.constantFrom('crash' as const, 'leave' as const) }))
    fc.assert(fc.property(fc.array(injection, { minLength: 1, maxLength: 40 }), churn, (injections, change) => {
      // The property is that nothing throws: handle() here, or any input in the run after.
      const loop = busyOverlay(config, latency)
      for (const [n, i] of injections.entries()) {
        const { to, from, gapMs } = i
        loop.run(gapMs)
        if (change?.after === n && loop.core('p3').state === 'running') {
          if (change.kind === 'crash') loop.crash('p3')
          else loop.input('p3', (c) => { c.leave(loop.now) })
        }
        if (from === to || loop.down.has(to) || loop.core(to).state !== 'running') continue
        const wire: Message = decodeMessage(encodeMessage(messageOf(loop, i)))
        loop.input(to, (c) => c.handle(loop.now, from, wire))
      }
      if (!loop.down.has('p3') && loop.core('p3').state === 'running') {
        // A partial or pull for c1 with another shape came first, or facts said its root is
        // gone: the local call is refused by name, as it would be for any caller.
        try { callCollective(loop, 'p3', config) } catch (err) { if (!(err instanceof InvalidArgumentError && /cannot be called here|is not a live member/.test(err.message))) throw err }
      }
      loop.run(5_000)
    }), { numRuns: RUNS })
  })

  it('data, probe and tree messages from a stranger do not keep a broadcast from completing', () => {
    // Membership and ownership messages (facts, join, give, hand-offs) are left out: a peer
    // not known yet may send them rightly (a joiner others have not heard of), and they
    // are believed.
    const believed = new Set(['facts', 'join', 'give', 'handoff', 'handoff-ack', 'claim-ack'])
    const strangerInjection = injection.map((i) => ({ ...i, from: 'stranger' }))
    fc.assert(fc.property(fc.array(strangerInjection, { minLength: 1, maxLength: 30 }), (injections) => {
      const loop = busyOverlay()
      const id = loop.input('p2', (c) => c.broadcast(loop.now, new Uint8Array([7])))
      for (const i of injections) {
        loop.run(i.gapMs)
        const msg = messageOf(loop, i)
        if (believed.has(msg.t)) continue
        loop.input(i.to, (c) => c.handle(loop.now, 'stranger', decodeMessage(encodeMessage(msg))))
      }
      loop.run(5_000)
      expectExactlyOnce(loop, id, VNODES)
    }), { numRuns: Math.ceil(RUNS * 2 / 3) })
  })
})
