/**
 * fast-check arbitraries of wire messages (overlay/messages.ts), every one valid for the
 * codec. The default world is wide (any peer name, any virtual node, any number), for the
 * codec's properties (test/codec.test.ts); a narrow one (a few peer names, a few virtual
 * nodes, small numbers) makes messages that hit a running core's real state
 * (test/core-fuzz.test.ts).
 */
import fc from 'fast-check'
import { IntervalSet, type Range } from '../virtual-nodes/interval-set.ts'
import { DEFAULT_CODEC_LIMITS } from '../overlay/codec.ts'
import type { FactsMessage, Message, ProbeTreeEntry, StreamOpen, TreeOp } from '../overlay/messages.ts'
import { MAX_STRIPES } from '../overlay/stripes.ts'
import { MAX_REDUCE_SEGMENTS } from '../overlay/reduction-state.ts'
import { MAX_TREE_ENTRIES } from '../trees/tree-entries.ts'
import { CLUSTER_TAG_SIZE } from '../overlay/cluster-tag.ts'

/** A segment size for `length` elements that keeps to MAX_REDUCE_SEGMENTS segments (the codec refuses more). */
function fewSegments (length: number, segment: number): number {
  return Math.max(segment, Math.ceil(length / MAX_REDUCE_SEGMENTS))
}

/** The values messages are made of. */
export interface MessageWorld {
  /** Peer ids. @default any string of 1-20 characters, or `p<n>` */
  peer?: fc.Arbitrary<string>
  /** Collective ids. @default any string, or `<peer>/<n>` */
  id?: fc.Arbitrary<string>
  /** Virtual node sets. @default up to 8 ranges anywhere in 0..2^31 */
  set?: fc.Arbitrary<IntervalSet>
  /** Stream numbers, versions, incarnations. @default up to 1000, or any safe natural */
  count?: fc.Arbitrary<number>
  /** Check ids and nonces. @default any safe integer */
  safeInt?: fc.Arbitrary<number>
  /** Collective reduction ids (no '/'). @default any string of 1-40 characters without '/' */
  collId?: fc.Arbitrary<string>
}

const noNegZero = (x: number): number => (x === 0 ? 0 : x)
const wideSet = fc.array(
  fc.tuple(fc.nat(2 ** 31 - 1), fc.oneof(fc.nat(50), fc.nat(2 ** 31))).map(([s, len]): Range => [s, Math.min(s + len, 2 ** 31)]),
  { maxLength: 8 }
).map((rs) => IntervalSet.fromRanges(rs))

/** Valid messages of every type, made of `world`'s values. */
export function messageArbitrary (world: MessageWorld = {}): fc.Arbitrary<Message> {
  const arbPeer = world.peer ?? fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), fc.nat(9999).map((n) => `p${n}`))
  const arbId = world.id ?? fc.oneof(fc.string({ minLength: 1, maxLength: 40 }), fc.tuple(arbPeer, fc.nat()).map(([p, n]) => `${p}/${n}`))
  const arbSet = world.set ?? wideSet
  const arbCount = world.count ?? fc.oneof(fc.nat(1000), fc.maxSafeNat())
  const arbSafeInt = world.safeInt ?? fc.maxSafeInteger().map(noNegZero)
  const arbCollId = world.collId ?? fc.string({ minLength: 1, maxLength: 40 }).filter((id) => !id.includes('/'))

  const arbOpName = fc.constantFrom('sum', 'max', 'min', 'prod')
  const arbNonNegative = fc.double({ min: 0, noNaN: true, noDefaultInfinity: true }).map(noNegZero)
  const arbMetric = fc.oneof(fc.constant(-1), fc.double({ min: 0, max: 1e12, noNaN: true }).map(noNegZero))
  const arbKind = fc.constantFrom('lat' as const, 'bw' as const)
  const arbRecord = fc.record({ ranges: arbSet, owner: arbPeer, version: arbCount })
  const arbPath = fc.array(arbPeer, { maxLength: 6 })
  const arbEntry = fc.record({ peer: arbPeer, reach: arbSet, near: fc.array(arbPeer, { minLength: 1, maxLength: CLUSTER_TAG_SIZE }) }, { requiredKeys: ['peer', 'reach'] })
  const arbEntries = fc.array(arbEntry, { minLength: 1, maxLength: MAX_TREE_ENTRIES })

  const arbTreeOp: fc.Arbitrary<TreeOp> = fc.oneof(
    fc.record({ op: fc.constant('check' as const), kind: arbKind, root: arbPeer, id: arbSafeInt, origin: arbPeer, dist: arbNonNegative, path: arbPath, short: fc.constant(true as const) }, { requiredKeys: ['op', 'kind', 'root', 'id', 'origin', 'dist', 'path'] }),
    fc.record({ op: fc.constant('result' as const), kind: arbKind, root: arbPeer, id: arbSafeInt, ok: fc.boolean(), dist: arbNonNegative, path: arbPath }),
    fc.record({ op: fc.constant('adopt' as const), kind: arbKind, root: arbPeer, reach: arbSet, bw: fc.double({ min: 0, max: 1e12, noNaN: true }), entries: arbEntries }, { requiredKeys: ['op', 'kind', 'root', 'reach', 'bw'] }),
    fc.record({ op: fc.constantFrom('detach' as const, 'disown' as const), kind: arbKind, root: arbPeer }),
    fc.record({ op: fc.constant('unlock' as const), kind: arbKind, root: arbPeer, id: arbSafeInt, origin: arbPeer }),
    fc.record({ op: fc.constant('reach' as const), kind: arbKind, root: arbPeer, reach: arbSet, entries: arbEntries }, { requiredKeys: ['op', 'kind', 'root', 'reach'] }),
    fc.record({ op: fc.constant('metric' as const), kind: arbKind, root: arbPeer, value: arbNonNegative, depth: arbCount }, { requiredKeys: ['op', 'kind', 'root', 'value'] })
  )

  const arbOpen: fc.Arbitrary<StreamOpen> = fc.record({
    id: arbId,
    origin: arbPeer,
    mode: fc.constantFrom('lat' as const, 'bw' as const, 'direct' as const),
    header: arbSet,
    chunkCount: fc.integer({ min: 1, max: 1_000_000 }),
    totalBytes: arbCount,
    fallback: fc.boolean(),
    reduce: fc.record({ op: arbOpName, rootVnode: fc.nat(2 ** 31 - 1), length: fc.nat(DEFAULT_CODEC_LIMITS.maxMessageBytes / 8), segment: fc.integer({ min: 1, max: DEFAULT_CODEC_LIMITS.maxMessageBytes / 8 }) }, { requiredKeys: ['op', 'rootVnode', 'length'] })
      .map((r) => (r.segment === undefined ? r : { ...r, segment: fewSegments(r.length, r.segment) })),
    hops: fc.nat(64),
    combine: fc.record({ to: arbPeer, extra: arbSet }, { requiredKeys: ['extra'] }),
    stripes: fc.integer({ min: 2, max: MAX_STRIPES }),
    stripe: fc.nat(MAX_STRIPES - 1),
    relay: fc.array(fc.record({ to: arbPeer, header: arbSet, relay: fc.array(fc.record({ to: arbPeer, header: arbSet }), { maxLength: MAX_STRIPES }) }, { requiredKeys: ['to', 'header'] }), { maxLength: MAX_STRIPES })
  }, { requiredKeys: ['id', 'origin', 'mode', 'header', 'chunkCount', 'totalBytes', 'fallback', 'hops'] })
    // A combining plan only comes with a reduction start.
    .map((o) => (o.reduce === undefined && o.combine !== undefined ? (({ combine: _, ...rest }) => rest)(o) : o))
    // A stripe (and relays) only with a stripe count, below it.
    .map((o) => {
      const { stripes, stripe, relay, ...rest } = o
      if (stripes === undefined) return rest
      return { ...rest, stripes, ...(stripe !== undefined ? { stripe: stripe % stripes } : {}), ...(relay !== undefined ? { relay } : {}) }
    })

  const arbProbeEntry: fc.Arbitrary<ProbeTreeEntry> = fc.record({
    root: arbPeer, dist: arbMetric, est: arbMetric, latChildren: fc.nat(100), bwChildren: fc.nat(100)
  })

  return fc.oneof(
    fc.record({ t: fc.constant('join' as const), incarnation: arbCount, want: arbSet, of: fc.integer({ min: 1, max: 2 ** 31 }) }, { requiredKeys: ['t', 'incarnation'] }),
    fc.record({
      t: fc.constant('facts' as const),
      vnodeCount: fc.nat(2 ** 31),
      members: fc.array(fc.record({ peer: arbPeer, incarnation: arbCount, status: fc.constantFrom('alive' as const, 'left' as const, 'dead' as const) }), { maxLength: 8 }),
      records: fc.array(arbRecord, { maxLength: 8 }),
      welcome: fc.boolean()
    }).chain((m) => fc.constantFrom<FactsMessage>(m, { ...m, claim: true })),
    fc.record({ t: fc.constant('give' as const), to: arbPeer, ranges: arbSet, share: fc.constant(true as const) }, { requiredKeys: ['t', 'to', 'ranges'] }),
    fc.record({ t: fc.constant('join-elsewhere' as const), to: arbPeer }),
    fc.record({ t: fc.constant('handoff' as const), record: arbRecord, delivered: fc.array(fc.record({ streamId: arbId, vnodes: arbSet }), { maxLength: 5 }) }).chain((m) => fc.constantFrom<Message>(m, { ...m, lost: true })),
    fc.record({ t: fc.constantFrom('handoff-ack' as const, 'claim-ack' as const), version: arbCount, ranges: arbSet }),
    fc.record({ t: fc.constantFrom('ping' as const, 'pong' as const, 'probe-req' as const), nonce: arbSafeInt }),
    fc.record({
      t: fc.constant('probe-rep' as const),
      nonce: arbSafeInt,
      // Depths (trees/depth-tie.ts) for every entry or none: the wire carries them as one list beside the entries.
      trees: fc.oneof(fc.array(arbProbeEntry, { maxLength: 6 }), fc.array(fc.tuple(arbProbeEntry, fc.integer({ min: -1, max: 1000 })).map(([e, bwDepth]) => ({ ...e, bwDepth })), { maxLength: 6 })),
      padding: fc.nat(3000),
      near: fc.array(fc.record({ peer: arbPeer, rttMs: fc.double({ min: 0, max: 1e6, noNaN: true }) }), { maxLength: 8 })
    }, { requiredKeys: ['t', 'nonce', 'trees', 'padding'] }),
    fc.record({ t: fc.constant('tree' as const), ops: fc.array(arbTreeOp, { maxLength: 8 }) }),
    fc.record({ t: fc.constant('chunk' as const), stream: arbCount, index: fc.nat(1_000_000), data: fc.uint8Array({ maxLength: 300 }), open: arbOpen }, { requiredKeys: ['t', 'stream', 'index', 'data'] })
      .map((m) => (m.open !== undefined && m.index >= m.open.chunkCount ? { ...m, index: m.open.chunkCount - 1 } : m)),
    fc.record({ t: fc.constant('ack' as const), stream: arbCount, away: fc.constant(true as const) }, { requiredKeys: ['t', 'stream'] }),
    fc.record({ t: fc.constant('hold' as const), stream: arbCount, ageMs: arbCount }),
    fc.record({ t: fc.constant('partial' as const), id: arbId, root: arbPeer, op: arbOpName, covered: arbSet, value: fc.float64Array({ maxLength: 40 }), seg: fc.nat(1000), coll: fc.record({ length: fc.integer({ min: 1, max: 100_000 }), segment: fc.integer({ min: 1, max: 100_000 }) }, { requiredKeys: ['length'] })
      .map((c) => (c.segment === undefined ? c : { ...c, segment: fewSegments(c.length, c.segment) })), cid: arbCollId }, { requiredKeys: ['t', 'id', 'root', 'op', 'covered', 'value', 'cid'] })
      .map(({ cid, ...m }) => (m.coll === undefined ? m : { ...m, id: cid })),
    fc.record({ t: fc.constant('pull' as const), id: arbId, root: arbPeer, op: arbOpName, length: fc.nat(100_000), want: arbSet, hops: fc.nat(64), coll: fc.constant(true as const), cid: arbCollId }, { requiredKeys: ['t', 'id', 'root', 'op', 'length', 'want', 'hops', 'cid'] })
      .map(({ cid, ...m }) => (m.coll === undefined ? m : { ...m, id: cid })),
    fc.tuple(fc.integer({ min: 1, max: 100_000 }), fc.integer({ min: 1, max: 100_000 }), arbId, arbPeer, arbSet).map(([length, size, id, root, want]) => {
      const segment = fewSegments(length, size)
      return { t: 'pull' as const, id, root, op: 'sum', length, want, hops: 0, seg: Math.ceil(length / segment) - 1, segment }
    }),
    fc.record({ t: fc.constant('reduce-ack' as const), id: arbId, root: arbPeer, part: arbSet }),
    fc.record({ t: fc.constant('resend' as const), id: arbId }),
    fc.record({ t: fc.constant('entries-req' as const), id: arbId }),
    fc.record({ t: fc.constant('entries-rep' as const), id: arbId, entries: fc.array(arbEntry, { maxLength: MAX_TREE_ENTRIES }) })
  )
}
