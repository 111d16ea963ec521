import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { encode as cborEncode } from 'cborg'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { Range } from '../virtual-nodes/interval-set.ts'
import { DEFAULT_CODEC_LIMITS, decodeMessage, encodeMessage, wireSize } from '../overlay/codec.ts'
import type { CodecLimits } from '../overlay/codec.ts'
import { REJECT_REASONS, WireError } from '../overlay/wire-errors.ts'
import type { RejectReason } from '../overlay/wire-errors.ts'
import { WIRE_VERSION } from '../overlay/messages.ts'
import type { FactsMessage, Message, MessageType, ProbeTreeEntry, StreamOpen, TreeOp } from '../overlay/messages.ts'
import { MAX_NEAR_HINTS } from '../overlay/near-peers.ts'
import { MAX_STRIPES } from '../overlay/stripes.ts'
import { MAX_TREE_ENTRIES } from '../trees/tree-entries.ts'

/** Comparable form: interval sets and byte arrays become plain data. */
function norm (x: unknown): unknown {
  if (x instanceof IntervalSet) return { set: x.toJSON() }
  if (x instanceof Float64Array) return { f64: Array.from(x) }
  if (x instanceof Uint8Array) return { bytes: Array.from(x) }
  if (Array.isArray(x)) return x.map(norm)
  if (typeof x === 'object' && x !== null) return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, norm(v)]))
  return x
}

function roundTrip (msg: Message, limits?: CodecLimits): Message {
  const decoded = decodeMessage(encodeMessage(msg), limits)
  expect(norm(decoded)).toEqual(norm(msg))
  return decoded
}

/** Decodes `bytes`, asserting that any failure is a WireError with a known reason. */
function tryDecode (bytes: Uint8Array, limits?: CodecLimits): Message | WireError {
  try {
    return decodeMessage(bytes, limits)
  } catch (err) {
    expect(err).toBeInstanceOf(WireError)
    expect(REJECT_REASONS).toContain((err as WireError).reason)
    // A programming error inside the codec must not hide behind a 'malformed' rejection.
    const cause = (err as WireError).cause
    expect(cause instanceof TypeError || cause instanceof ReferenceError).toBe(false)
    return err as WireError
  }
}

function rejects (bytes: Uint8Array, reason: RejectReason, limits?: CodecLimits): WireError {
  const result = tryDecode(bytes, limits)
  expect(result).toBeInstanceOf(WireError)
  expect((result as WireError).reason).toBe(reason)
  return result as WireError
}

const raw = (fields: Record<string, unknown>): Uint8Array => cborEncode({ v: WIRE_VERSION, ...fields })

const S1 = IntervalSet.fromRanges([[0, 10], [20, 25], [1000, 4096]])
const S2 = IntervalSet.of(7)
const BIG = IntervalSet.fromRanges(Array.from({ length: 500 }, (_, i): Range => [i * 100, i * 100 + 37]))

const OPS: { [K in TreeOp['op']]: Extract<TreeOp, { op: K }> } = {
  check: { op: 'check', kind: 'lat', root: 'p1', id: 42, origin: 'p7', dist: 12.75, path: ['p1', 'p3', 'p7'] },
  result: { op: 'result', kind: 'bw', root: 'p1', id: -3, ok: false, dist: 1.5e9, path: [] },
  adopt: { op: 'adopt', kind: 'bw', root: 'p2', reach: S1, bw: 12_500_000, entries: [{ peer: 'p4', reach: S2 }] },
  detach: { op: 'detach', kind: 'bw', root: 'p2' },
  disown: { op: 'disown', kind: 'lat', root: 'p3' },
  unlock: { op: 'unlock', kind: 'lat', root: 'p2', id: 0, origin: 'p9' },
  reach: { op: 'reach', kind: 'bw', root: 'p2', reach: IntervalSet.EMPTY, entries: [{ peer: 'p5', reach: S1 }, { peer: 'p6', reach: IntervalSet.EMPTY }] },
  metric: { op: 'metric', kind: 'lat', root: 'p2', value: -0.125 }
}

const OPEN: StreamOpen = {
  id: 'p1/17', origin: 'p1', mode: 'bw', header: S1, chunkCount: 4, totalBytes: 200_000, fallback: true,
  reduce: { op: 'sum', rootVnode: 1234, length: 4096 }, hops: 3, combine: { to: 'p7', extra: S2 }
}
/** A striped broadcast's stream (overlay/stripes.ts): stripe 1 of 3, relaying two parts. */
const STRIPED_OPEN: StreamOpen = {
  id: 'p1/18', origin: 'p1', mode: 'bw', header: S1, chunkCount: 64, totalBytes: 4 << 20, fallback: false, hops: 1,
  stripes: 3, stripe: 1, relay: [{ to: 'p8', header: S2 }, { to: 'p9', header: IntervalSet.EMPTY }]
}

const EXAMPLES: { [T in MessageType]: Extract<Message, { t: T }> } = {
  join: { t: 'join', incarnation: 3, want: S1 },
  facts: {
    t: 'facts',
    vnodeCount: 65536,
    members: [{ peer: 'p1', incarnation: 0, status: 'alive' }, { peer: 'p2', incarnation: 9, status: 'left' }, { peer: 'p3', incarnation: 1, status: 'dead' }],
    records: [{ ranges: S1, owner: 'p1', version: 12 }, { ranges: S2, owner: 'p2', version: 0 }],
    welcome: true
  },
  give: { t: 'give', to: 'p4', ranges: S2 },
  handoff: {
    t: 'handoff',
    record: { ranges: S1, owner: 'p5', version: 8 },
    delivered: [{ streamId: 'p1/3', vnodes: S2 }, { streamId: 'p2/0', vnodes: IntervalSet.range(0, 5) }],
    lost: true
  },
  'handoff-ack': { t: 'handoff-ack', version: 8, ranges: S1 },
  'claim-ack': { t: 'claim-ack', version: 2012, ranges: S2 },
  ping: { t: 'ping', nonce: 1 },
  pong: { t: 'pong', nonce: 2 ** 40 },
  'probe-req': { t: 'probe-req', nonce: 77, light: true },
  sync: { t: 'sync' },
  offer: { t: 'offer' },
  'probe-rep': {
    t: 'probe-rep',
    nonce: 77,
    trees: [
      { root: 'p1', dist: 23.5, est: 1.25e7, latChildren: 2, bwChildren: 0 },
      { root: 'p2', dist: -1, est: -1, latChildren: 0, bwChildren: 5 }
    ],
    padding: 1000,
    near: [{ peer: 'p3', rttMs: 0.31 }, { peer: 'p4', rttMs: 0 }]
  },
  tree: { t: 'tree', ops: Object.values(OPS) },
  chunk: { t: 'chunk', stream: 5, index: 0, data: new Uint8Array([1, 2, 3, 255]), open: OPEN },
  ack: { t: 'ack', stream: 5 },
  partial: { t: 'partial', id: 'p1/17', root: 'p1', op: 'sum', covered: S1, value: new Float64Array([1.5, -2, NaN, Infinity, 0]) },
  pull: { t: 'pull', id: 'p1/17', root: 'p1', op: 'max', length: 4096, want: S2, hops: 0 },
  'reduce-ack': { t: 'reduce-ack', id: 'p1/17', root: 'p1', part: S1 },
  resend: { t: 'resend', id: 'p1/18' }
}

describe('round trip', () => {
  for (const msg of Object.values(EXAMPLES)) {
    it(msg.t, () => {
      roundTrip(msg)
    })
  }

  for (const op of Object.values(OPS)) {
    it(`tree op ${op.op}`, () => {
      roundTrip({ t: 'tree', ops: [op] })
    })
  }

  // Fixed bug, kept as a regression test: the wire bounded a reduction's whole length by
  // what one frame carries (139,264 elements), while the core segments long arrays and
  // allows 2^24: a reduction of 2^18 elements was rejected by every remote peer.
  it('a segmented reduction longer than one frame carries passes; maxReduceLength bounds the whole array', () => {
    const open = { ...OPEN, reduce: { op: 'sum', rootVnode: 0, length: 1 << 18, segment: 8192 } }
    expect((roundTrip({ t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open }) as { open: StreamOpen }).open.reduce?.length).toBe(1 << 18)
    const pull: Message = { t: 'pull', id: 'i', root: 'p', op: 'sum', length: 1 << 18, want: S2, hops: 0, seg: 31, segment: 8192 }
    expect(roundTrip(pull)).toEqual(pull)
    rejects(encodeMessage({ t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open }), 'bad-field', { maxReduceLength: 1 << 17 })
    rejects(encodeMessage(pull), 'bad-field', { maxReduceLength: 1 << 17 })
  })

  it('optional fields may be absent', () => {
    expect(roundTrip({ t: 'join', incarnation: 0 })).not.toHaveProperty('want')
    const { reduce: _reduce, combine: _combine, ...open } = OPEN
    expect((roundTrip({ t: 'chunk', stream: 0, index: 3, data: new Uint8Array(0), open }) as { open: StreamOpen }).open).not.toHaveProperty('reduce')
    expect(roundTrip({ t: 'chunk', stream: 0, index: 9, data: new Uint8Array(10) })).not.toHaveProperty('open')
    const { to: _to, ...toParent } = OPEN.combine ?? { extra: S2 }
    expect((roundTrip({ t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { ...OPEN, combine: toParent } }) as { open: StreamOpen }).open.combine).not.toHaveProperty('to')
  })

  it('a striped stream keeps its stripe count, stripe and relays', () => {
    expect(roundTrip({ t: 'chunk', stream: 5, index: 4, data: new Uint8Array(3), open: STRIPED_OPEN })).toMatchObject({ open: { stripes: 3, stripe: 1 } })
    const { stripe: _stripe, relay: _relay, ...allChunks } = STRIPED_OPEN
    const open = (roundTrip({ t: 'chunk', stream: 5, index: 0, data: new Uint8Array(3), open: allChunks }) as { open: StreamOpen }).open
    expect(open).not.toHaveProperty('stripe')
    expect(open).not.toHaveProperty('relay')
  })

  it('probe padding is real bytes on the wire', () => {
    const msg: Message = { t: 'probe-rep', nonce: 1, trees: [], padding: 128 * 1024 }
    expect(encodeMessage(msg).length).toBeGreaterThan(128 * 1024)
    expect(roundTrip(msg)).toMatchObject({ padding: 128 * 1024 })
  })

  it('interval sets come back as IntervalSets', () => {
    const decoded = roundTrip({ t: 'give', to: 'p', ranges: BIG })
    expect(decoded.t === 'give' && decoded.ranges.equals(BIG)).toBe(true)
  })

  it('partial values are copied into a fresh aligned Float64Array, even from unaligned input', () => {
    const msg = EXAMPLES.partial
    const frame = encodeMessage(msg)
    for (let shift = 0; shift < 8; shift++) {
      const buf = new Uint8Array(frame.length + shift)
      buf.set(frame, shift)
      const decoded = decodeMessage(buf.subarray(shift))
      if (decoded.t !== 'partial') throw new Error('wrong type')
      expect(decoded.value).toBeInstanceOf(Float64Array)
      expect(decoded.value.byteOffset % 8).toBe(0)
      expect(Array.from(decoded.value)).toEqual(Array.from(msg.value))
      buf.fill(0)
      expect(decoded.value[0]).toBe(1.5)
    }
  })

  it('encodes subarray views correctly', () => {
    const backing = new Uint8Array([9, 9, 1, 2, 3, 9])
    roundTrip({ t: 'chunk', stream: 1, index: 0, data: backing.subarray(2, 5) })
    const floats = new Float64Array([0, 1, 2, 3])
    roundTrip({ ...EXAMPLES.partial, value: floats.subarray(1, 3) })
  })
})

// ---------------------------------------------------------------------------------------
// Arbitraries

const arbPeer = fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), fc.nat(9999).map((n) => `p${n}`))
const arbId = fc.oneof(fc.string({ minLength: 1, maxLength: 40 }), fc.tuple(arbPeer, fc.nat()).map(([p, n]) => `${p}/${n}`))
const arbOpName = fc.constantFrom('sum', 'max', 'min', 'prod')
const arbSet = fc.array(
  fc.tuple(fc.nat(2 ** 31 - 1), fc.oneof(fc.nat(50), fc.nat(2 ** 31))).map(([s, len]): Range => [s, Math.min(s + len, 2 ** 31)]),
  { maxLength: 8 }
).map((rs) => IntervalSet.fromRanges(rs))
const noNegZero = (x: number): number => (x === 0 ? 0 : x)
const arbFinite = fc.double({ noNaN: true, noDefaultInfinity: true }).map(noNegZero)
const arbMetric = fc.oneof(fc.constant(-1), fc.double({ min: 0, max: 1e12, noNaN: true }).map(noNegZero))
const arbSafeInt = fc.maxSafeInteger().map(noNegZero)
const arbCount = fc.oneof(fc.nat(1000), fc.maxSafeNat())
const arbKind = fc.constantFrom('lat' as const, 'bw' as const)
const arbRecord = fc.record({ ranges: arbSet, owner: arbPeer, version: arbCount })
const arbPath = fc.array(arbPeer, { maxLength: 6 })
const arbEntries = fc.array(fc.record({ peer: arbPeer, reach: arbSet }), { minLength: 1, maxLength: MAX_TREE_ENTRIES })

const arbTreeOp: fc.Arbitrary<TreeOp> = fc.oneof(
  fc.record({ op: fc.constant('check' as const), kind: arbKind, root: arbPeer, id: arbSafeInt, origin: arbPeer, dist: arbFinite, path: arbPath, short: fc.constant(true as const) }, { requiredKeys: ['op', 'kind', 'root', 'id', 'origin', 'dist', 'path'] }),
  fc.record({ op: fc.constant('result' as const), kind: arbKind, root: arbPeer, id: arbSafeInt, ok: fc.boolean(), dist: arbFinite, path: arbPath }),
  fc.record({ op: fc.constant('adopt' as const), kind: arbKind, root: arbPeer, reach: arbSet, bw: fc.double({ min: 0, max: 1e12, noNaN: true }), entries: arbEntries }, { requiredKeys: ['op', 'kind', 'root', 'reach', 'bw'] }),
  fc.record({ op: fc.constantFrom('detach' as const, 'disown' as const), kind: arbKind, root: arbPeer }),
  fc.record({ op: fc.constant('unlock' as const), kind: arbKind, root: arbPeer, id: arbSafeInt, origin: arbPeer }),
  fc.record({ op: fc.constant('reach' as const), kind: arbKind, root: arbPeer, reach: arbSet, entries: arbEntries }, { requiredKeys: ['op', 'kind', 'root', 'reach'] }),
  fc.record({ op: fc.constant('metric' as const), kind: arbKind, root: arbPeer, value: arbFinite })
)

const arbOpen: fc.Arbitrary<StreamOpen> = fc.record({
  id: arbId,
  origin: arbPeer,
  mode: fc.constantFrom('lat' as const, 'bw' as const, 'direct' as const),
  header: arbSet,
  chunkCount: fc.integer({ min: 1, max: 1_000_000 }),
  totalBytes: arbCount,
  fallback: fc.boolean(),
  reduce: fc.record({ op: arbOpName, rootVnode: fc.nat(2 ** 31 - 1), length: fc.nat(DEFAULT_CODEC_LIMITS.maxMessageBytes / 8), segment: fc.integer({ min: 1, max: DEFAULT_CODEC_LIMITS.maxMessageBytes / 8 }) }, { requiredKeys: ['op', 'rootVnode', 'length'] }),
  hops: fc.nat(64),
  combine: fc.record({ to: arbPeer, extra: arbSet }, { requiredKeys: ['extra'] }),
  stripes: fc.integer({ min: 2, max: MAX_STRIPES }),
  stripe: fc.nat(MAX_STRIPES - 1),
  relay: fc.array(fc.record({ to: arbPeer, header: arbSet }), { maxLength: MAX_STRIPES })
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

const arbMessage: fc.Arbitrary<Message> = fc.oneof(
  fc.record({ t: fc.constant('join' as const), incarnation: arbCount, want: arbSet }, { requiredKeys: ['t', 'incarnation'] }),
  fc.record({
    t: fc.constant('facts' as const),
    vnodeCount: fc.nat(2 ** 31),
    members: fc.array(fc.record({ peer: arbPeer, incarnation: arbCount, status: fc.constantFrom('alive' as const, 'left' as const, 'dead' as const) }), { maxLength: 8 }),
    records: fc.array(arbRecord, { maxLength: 8 }),
    welcome: fc.boolean()
  }).chain((m) => fc.constantFrom<FactsMessage>(m, { ...m, claim: true })),
  fc.record({ t: fc.constant('give' as const), to: arbPeer, ranges: arbSet }),
  fc.record({ t: fc.constant('handoff' as const), record: arbRecord, delivered: fc.array(fc.record({ streamId: arbId, vnodes: arbSet }), { maxLength: 5 }) }).chain((m) => fc.constantFrom<Message>(m, { ...m, lost: true })),
  fc.record({ t: fc.constantFrom('handoff-ack' as const, 'claim-ack' as const), version: arbCount, ranges: arbSet }),
  fc.record({ t: fc.constantFrom('ping' as const, 'pong' as const, 'probe-req' as const), nonce: arbSafeInt }),
  fc.record({
    t: fc.constant('probe-rep' as const),
    nonce: arbSafeInt,
    trees: fc.array(arbProbeEntry, { maxLength: 6 }),
    padding: fc.nat(3000),
    near: fc.array(fc.record({ peer: arbPeer, rttMs: fc.double({ min: 0, max: 1e6, noNaN: true }) }), { maxLength: 8 })
  }, { requiredKeys: ['t', 'nonce', 'trees', 'padding'] }),
  fc.record({ t: fc.constant('tree' as const), ops: fc.array(arbTreeOp, { maxLength: 8 }) }),
  fc.record({ t: fc.constant('chunk' as const), stream: arbCount, index: fc.nat(1_000_000), data: fc.uint8Array({ maxLength: 300 }), open: arbOpen }, { requiredKeys: ['t', 'stream', 'index', 'data'] })
    .map((m) => (m.open !== undefined && m.index >= m.open.chunkCount ? { ...m, index: m.open.chunkCount - 1 } : m)),
  fc.record({ t: fc.constant('ack' as const), stream: arbCount, away: fc.constant(true as const) }, { requiredKeys: ['t', 'stream'] }),
  fc.record({ t: fc.constant('partial' as const), id: arbId, root: arbPeer, op: arbOpName, covered: arbSet, value: fc.float64Array({ maxLength: 40 }), seg: fc.nat(1000), coll: fc.record({ length: fc.integer({ min: 1, max: 100_000 }), segment: fc.integer({ min: 1, max: 100_000 }) }, { requiredKeys: ['length'] }) }, { requiredKeys: ['t', 'id', 'root', 'op', 'covered', 'value'] }),
  fc.record({ t: fc.constant('pull' as const), id: arbId, root: arbPeer, op: arbOpName, length: fc.nat(100_000), want: arbSet, hops: fc.nat(64), coll: fc.constant(true as const) }, { requiredKeys: ['t', 'id', 'root', 'op', 'length', 'want', 'hops'] }),
  fc.tuple(fc.integer({ min: 1, max: 100_000 }), fc.integer({ min: 1, max: 100_000 }), arbId, arbPeer, arbSet).map(([length, segment, id, root, want]) =>
    ({ t: 'pull' as const, id, root, op: 'sum', length, want, hops: 0, seg: Math.ceil(length / segment) - 1, segment })),
  fc.record({ t: fc.constant('reduce-ack' as const), id: arbId, root: arbPeer, part: arbSet }),
  fc.record({ t: fc.constant('resend' as const), id: arbId })
)

const FIELD_NAMES = [
  'incarnation', 'want', 'vnodeCount', 'members', 'records', 'welcome', 'to', 'ranges', 'record', 'delivered',
  'version', 'nonce', 'trees', 'padding', 'ops', 'op', 'kind', 'root', 'id', 'origin', 'dist', 'path', 'ok', 'reach',
  'value', 'stream', 'index', 'data', 'open', 'mode', 'header', 'chunkCount', 'totalBytes', 'fallback', 'reduce',
  'rootVnode', 'length', 'hops', 'covered', 'combine', 'extra', 'part', 'entries', 'stripes', 'stripe', 'relay', '__proto__', 'constructor'
]

describe('properties', () => {
  it('every generated valid message round-trips', () => {
    fc.assert(fc.property(arbMessage, (msg) => {
      roundTrip(msg)
    }), { numRuns: 1000 })
  })

  it('random bytes decode to a message or throw WireError', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
      tryDecode(bytes)
    }), { numRuns: 3000 })
  })

  const arbMutation = fc.oneof(
    fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
    fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
    fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
    fc.record({ kind: fc.constant('extend' as const), tail: fc.uint8Array({ minLength: 1, maxLength: 16 }) }),
    fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 4 }) })
  )
  type Mutation = typeof arbMutation extends fc.Arbitrary<infer M> ? M : never

  function mutate (bytes: Uint8Array, m: Mutation): Uint8Array {
    const n = bytes.length
    switch (m.kind) {
      case 'flip': {
        const out = bytes.slice()
        if (n > 0) out[m.at % n]! ^= m.xor
        return out
      }
      case 'set': {
        const out = bytes.slice()
        if (n > 0) out[m.at % n] = m.value
        return out
      }
      case 'truncate': return bytes.slice(0, m.at % (n + 1))
      case 'extend': {
        const out = new Uint8Array(n + m.tail.length)
        out.set(bytes)
        out.set(m.tail, n)
        return out
      }
      case 'insert': {
        const at = m.at % (n + 1)
        const out = new Uint8Array(n + m.bytes.length)
        out.set(bytes.subarray(0, at))
        out.set(m.bytes, at)
        out.set(bytes.subarray(at), at + m.bytes.length)
        return out
      }
    }
  }

  it('mutated valid encodings decode to a valid message or throw WireError', () => {
    fc.assert(fc.property(arbMessage, fc.array(arbMutation, { minLength: 1, maxLength: 4 }), (msg, mutations) => {
      const bytes = mutations.reduce(mutate, encodeMessage(msg))
      const result = tryDecode(bytes, { maxListLength: 50, maxRanges: 16 })
      // Whatever decodes must itself be a valid message: it re-encodes and round-trips.
      if (!(result instanceof WireError)) roundTrip(result)
    }), { numRuns: 3000 })
  })

  const arbLeaf = fc.oneof(
    fc.integer(), fc.double(), fc.string({ maxLength: 10 }), fc.boolean(), fc.constant(null),
    fc.uint8Array({ maxLength: 12 }), fc.constantFrom('lat', 'bw', 'direct', 'alive', 'check', 'metric', 'sum'),
    fc.bigInt({ min: -(2n ** 64n) + 1n, max: 2n ** 64n - 1n })
  )
  const arbValue = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof({ depthSize: 'small', withCrossShrink: true },
      arbLeaf,
      fc.array(tie('value'), { maxLength: 6 }),
      fc.dictionary(fc.constantFrom(...FIELD_NAMES), tie('value'), { maxKeys: 6 }))
  })).value

  it('structurally random maps of every type decode or throw WireError', () => {
    fc.assert(fc.property(
      fc.constantFrom(...(Object.keys(EXAMPLES) as MessageType[])),
      fc.dictionary(fc.constantFrom(...FIELD_NAMES), arbValue, { maxKeys: 10 }),
      (t, fields) => {
        tryDecode(raw({ ...fields, t }))
      }), { numRuns: 3000 })
  })

  it('wireSize estimates every generated message within 25%', () => {
    fc.assert(fc.property(arbMessage, (msg) => {
      const real = encodeMessage(msg).length
      const est = wireSize(msg)
      // Non-ASCII strings are under-counted by design; the bound is on ASCII-heavy traffic.
      if (JSON.stringify(msg).match(/[^\x20-\x7e]/) === null) expect(Math.abs(est - real)).toBeLessThanOrEqual(real * 0.25)
    }), { numRuns: 1000 })
  })
})


describe('rejections', () => {
  it('too large, checked before decoding', () => {
    rejects(new Uint8Array(100).fill(0xff), 'too-large', { maxMessageBytes: 99 })
    const frame = encodeMessage({ t: 'chunk', stream: 0, index: 0, data: new Uint8Array(2 * 1024 * 1024) })
    rejects(frame, 'too-large')
    expect(decodeMessage(frame, { maxMessageBytes: frame.length }).t).toBe('chunk')
  })

  it('malformed CBOR, non-map top level, duplicate keys, deep nesting, bad interval sets', () => {
    rejects(new Uint8Array(0), 'malformed')
    rejects(new Uint8Array([0xff]), 'malformed')
    rejects(encodeMessage(EXAMPLES.ping).subarray(0, 5), 'malformed')
    rejects(cborEncode([1, 'ping', 3]), 'malformed')
    rejects(cborEncode(null), 'malformed')
    // {v: 1, v: 1, t: 'ping', nonce: 1}
    rejects(new Uint8Array([0xa4, 0x61, 0x76, 0x01, 0x61, 0x76, 0x01, 0x61, 0x74, 0x64, 0x70, 0x69, 0x6e, 0x67, 0x65, 0x6e, 0x6f, 0x6e, 0x63, 0x65, 0x01]), 'malformed')
    rejects(new Uint8Array(1024 * 1024).fill(0x81), 'malformed')
    rejects(raw({ t: 'give', to: 'p', ranges: new Uint8Array([1, 0, 0]) }), 'malformed')
    rejects(raw({ t: 'give', to: 'p', ranges: IntervalSet.range(0, 10).encode() }), 'malformed', { vnodeUniverse: 5 })
    rejects(raw({ t: 'give', to: 'p', ranges: BIG.encode() }), 'malformed', { maxRanges: 100 })
  })

  it('wrong or missing version', () => {
    rejects(cborEncode({ v: WIRE_VERSION + 1, t: 'ping', nonce: 1 }), 'version')
    rejects(cborEncode({ v: WIRE_VERSION - 1, t: 'ping', nonce: 1 }), 'version')
    rejects(cborEncode({ v: String(WIRE_VERSION), t: 'ping', nonce: 1 }), 'version')
    rejects(cborEncode({ t: 'ping', nonce: 1 }), 'version')
  })

  it('unknown or missing type', () => {
    rejects(raw({ t: 'nope' }), 'unknown-type')
    rejects(raw({ t: 'toString' }), 'unknown-type')
    rejects(raw({ t: 7 }), 'unknown-type')
    rejects(raw({ nonce: 1 }), 'unknown-type')
  })

  it('chunk index >= chunkCount', () => {
    const frame = encodeMessage({ t: 'chunk', stream: 1, index: 4, data: new Uint8Array(1), open: OPEN })
    expect(rejects(frame, 'bad-field').message).toMatch(/chunkCount/)
    rejects(encodeMessage({ t: 'chunk', stream: 1, index: 0, data: new Uint8Array(1), open: { ...OPEN, chunkCount: 0 } }), 'bad-field')
  })

  it('flags of claims and of hand-offs from a yielding claimer are true or absent', () => {
    const record = [IntervalSet.range(0, 4).encode(), 'p1', 1000]
    rejects(raw({ t: 'facts', vnodeCount: 8, members: [], records: [record], welcome: false, claim: 'yes' }), 'bad-field')
    rejects(raw({ t: 'handoff', record, delivered: [], lost: false }), 'bad-field')
    rejects(raw({ t: 'probe-req', nonce: 3, light: 1 }), 'bad-field')
    expect(tryDecode(raw({ t: 'probe-req', nonce: 3 }))).toEqual({ t: 'probe-req', nonce: 3 })
    rejects(raw({ t: 'claim-ack', version: -1, ranges: IntervalSet.range(0, 4).encode() }), 'bad-field')
    const ok = tryDecode(raw({ t: 'handoff', record, delivered: [], lost: true }))
    expect(ok instanceof WireError ? ok.message : ok).toMatchObject({ t: 'handoff', lost: true })
  })

  it('non-finite numbers', () => {
    const check = { op: 'check', kind: 'lat', root: 'a', id: 1, origin: 'b', dist: NaN, path: [] }
    rejects(raw({ t: 'tree', ops: [check] }), 'bad-field')
    rejects(raw({ t: 'tree', ops: [{ ...check, dist: Infinity }] }), 'bad-field')
    rejects(raw({ t: 'tree', ops: [{ op: 'metric', kind: 'bw', root: 'a', value: -Infinity }] }), 'bad-field')
    rejects(raw({ t: 'probe-rep', nonce: 1, trees: [['p', NaN, 1, 0, 0]], padding: new Uint8Array(0) }), 'bad-field')
  })

  it('lists longer than maxListLength', () => {
    const members = Array.from({ length: 4 }, (_, i) => ({ peer: `p${i}`, incarnation: 0, status: 'alive' as const }))
    const facts: Message = { t: 'facts', vnodeCount: 8, members, records: [], welcome: false }
    rejects(encodeMessage(facts), 'limit', { maxListLength: 3 })
    expect(decodeMessage(encodeMessage(facts), { maxListLength: 4 }).t).toBe('facts')
    rejects(encodeMessage({ t: 'tree', ops: [{ ...OPS.check, path: ['a', 'b', 'c', 'd'] }] }), 'limit', { maxListLength: 3 })
    rejects(encodeMessage({ t: 'tree', ops: Array.from({ length: 4 }, () => OPS.detach) }), 'limit', { maxListLength: 3 })
    rejects(raw({ t: 'probe-rep', nonce: 1, trees: Array.from({ length: 4 }, () => ['p', 1, 1, 0, 0]), padding: new Uint8Array(0) }), 'limit', { maxListLength: 3 })
    // Near hints have their own, smaller bound whatever maxListLength says.
    const hints = (n: number): unknown[] => Array.from({ length: n }, (_, i) => [`p${i}`, 1])
    expect(decodeMessage(raw({ t: 'probe-rep', nonce: 1, trees: [], padding: new Uint8Array(0), near: hints(MAX_NEAR_HINTS) })).t).toBe('probe-rep')
    rejects(raw({ t: 'probe-rep', nonce: 1, trees: [], padding: new Uint8Array(0), near: hints(MAX_NEAR_HINTS + 1) }), 'limit')
    // Cluster entries and relays too.
    const entries = (n: number): unknown[] => Array.from({ length: n }, (_, i) => [`p${i}`, S2.encode()])
    expect(decodeMessage(raw({ t: 'tree', ops: [{ op: 'reach', kind: 'bw', root: 'p', reach: S2.encode(), entries: entries(MAX_TREE_ENTRIES) }] })).t).toBe('tree')
    rejects(raw({ t: 'tree', ops: [{ op: 'reach', kind: 'bw', root: 'p', reach: S2.encode(), entries: entries(MAX_TREE_ENTRIES + 1) }] }), 'limit')
    const open = { id: 'i', origin: 'p', mode: 'bw', header: S2.encode(), chunkCount: 8, totalBytes: 8, fallback: false, hops: 0, stripes: 2, stripe: 0 }
    expect(decodeMessage(raw({ t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { ...open, relay: entries(MAX_STRIPES) } })).t).toBe('chunk')
    rejects(raw({ t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { ...open, relay: entries(MAX_STRIPES + 1) } }), 'limit')
  })

  const badFields: Array<[string, Record<string, unknown>]> = [
    ['missing field', { t: 'ping' }],
    ['non-integer nonce', { t: 'ping', nonce: 1.5 }],
    ['bigint nonce', { t: 'ping', nonce: 2n ** 60n }],
    ['negative incarnation', { t: 'join', incarnation: -1 }],
    ['want not bytes', { t: 'join', incarnation: 0, want: [0, 1] }],
    ['negative stream', { t: 'ack', stream: -2 }],
    ['string stream', { t: 'ack', stream: '2' }],
    ['empty peer id', { t: 'give', to: '', ranges: S2.encode() }],
    ['long peer id', { t: 'give', to: 'x'.repeat(129), ranges: S2.encode() }],
    ['long collective id', { t: 'pull', id: 'x'.repeat(257), root: 'p', op: 'sum', length: 1, want: S2.encode(), hops: 0 }],
    ['huge reduce length', { t: 'pull', id: 'i', root: 'p', op: 'sum', length: 2 ** 40, want: S2.encode(), hops: 0 }],
    ['unsegmented reduction longer than one frame carries', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { id: 'i', origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0, reduce: { op: 'sum', rootVnode: 0, length: DEFAULT_CODEC_LIMITS.maxMessageBytes / 8 + 1 } } }],
    ['reduction segment longer than one frame carries', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { id: 'i', origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0, reduce: { op: 'sum', rootVnode: 0, length: 1 << 20, segment: DEFAULT_CODEC_LIMITS.maxMessageBytes / 8 + 1 } } }],
    ['reduction past maxReduceLength', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { id: 'i', origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0, reduce: { op: 'sum', rootVnode: 0, length: (1 << 24) + 1, segment: 8192 } } }],
    ['unsegmented pull longer than one frame carries', { t: 'pull', id: 'i', root: 'p', op: 'sum', length: DEFAULT_CODEC_LIMITS.maxMessageBytes / 8 + 1, want: S2.encode(), hops: 0 }],
    ['pull segment past the array', { t: 'pull', id: 'i', root: 'p', op: 'sum', length: 100, want: S2.encode(), hops: 0, seg: 4, segment: 25 }],
    ['pull seg without segment', { t: 'pull', id: 'i', root: 'p', op: 'sum', length: 100, want: S2.encode(), hops: 0, seg: 0 }],
    ['pull segment of 0', { t: 'pull', id: 'i', root: 'p', op: 'sum', length: 100, want: S2.encode(), hops: 0, seg: 0, segment: 0 }],
    ['negative partial seg', { t: 'partial', id: 'i', root: 'p', op: 'sum', covered: S2.encode(), value: new Uint8Array(8), seg: -1 }],
    ['collective shape not a list', { t: 'partial', id: 'i', root: 'p', op: 'sum', covered: S2.encode(), value: new Uint8Array(8), coll: 1 }],
    ['collective shape of length 0', { t: 'partial', id: 'i', root: 'p', op: 'sum', covered: S2.encode(), value: new Uint8Array(8), coll: [0] }],
    ['collective shape longer than one frame, unsegmented', { t: 'partial', id: 'i', root: 'p', op: 'sum', covered: S2.encode(), value: new Uint8Array(8), coll: [DEFAULT_CODEC_LIMITS.maxMessageBytes / 8 + 1] }],
    ['collective shape with a segment of 0', { t: 'partial', id: 'i', root: 'p', op: 'sum', covered: S2.encode(), value: new Uint8Array(8), coll: [100, 0] }],
    ['collective pull mark not true', { t: 'pull', id: 'i', root: 'p', op: 'sum', length: 1, want: S2.encode(), hops: 0, coll: 1 }],
    ['bad tree kind', { t: 'tree', ops: [{ op: 'detach', kind: 'fast', root: 'p' }] }],
    ['bad tree op', { t: 'tree', ops: [{ op: 'explode', kind: 'lat', root: 'p' }] }],
    ['ok not boolean', { t: 'tree', ops: [{ ...OPS.result, ok: 1 }] }],
    ['bad member status', { t: 'facts', vnodeCount: 1, members: [['p', 0, 'zombie']], records: [], welcome: true }],
    ['record not a triple', { t: 'facts', vnodeCount: 1, members: [], records: [[S2.encode(), 'p']], welcome: true }],
    ['vnodeCount too large', { t: 'facts', vnodeCount: 2 ** 31 + 1, members: [], records: [], welcome: true }],
    ['bad stream mode', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { id: 'i', origin: 'p', mode: 'teleport', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0 } }],
    ['combining plan without a reduction', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { id: 'i', origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0, combine: { extra: S2.encode() } } }],
    ['combining plan without extra', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { id: 'i', origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0, reduce: { op: 'sum', rootVnode: 0, length: 4 }, combine: { to: 'q' } } }],
    ['reduce-ack part not a set', { t: 'reduce-ack', id: 'i', root: 'p', part: 7 }],
    ['float64 bytes not a multiple of 8', { t: 'partial', id: 'i', root: 'p', op: 'sum', covered: S2.encode(), value: new Uint8Array(12) }],
    ['probe dist below -1', { t: 'probe-rep', nonce: 1, trees: [['p', -2, 1, 0, 0]], padding: new Uint8Array(0) }],
    ['padding not bytes', { t: 'probe-rep', nonce: 1, trees: [], padding: 100 }],
    ['near hint with a negative RTT', { t: 'probe-rep', nonce: 1, trees: [], padding: new Uint8Array(0), near: [['p', -1]] }],
    ['near hint not a pair', { t: 'probe-rep', nonce: 1, trees: [], padding: new Uint8Array(0), near: [['p']] }],
    ['near not a list', { t: 'probe-rep', nonce: 1, trees: [], padding: new Uint8Array(0), near: 'p' }],
    ['short check not true', { t: 'tree', ops: [{ ...OPS.check, short: false }] }],
    ['ack away not true', { t: 'ack', stream: 1, away: 1 }],
    ['cluster entry not a pair', { t: 'tree', ops: [{ op: 'reach', kind: 'bw', root: 'p', reach: S2.encode(), entries: [['q']] }] }],
    ['cluster entry reach not a set', { t: 'tree', ops: [{ op: 'adopt', kind: 'bw', root: 'p', reach: S2.encode(), bw: 1, entries: [['q', 3]] }] }],
    ['one stripe', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { id: 'i', origin: 'p', mode: 'bw', header: S2.encode(), chunkCount: 4, totalBytes: 4, fallback: false, hops: 0, stripes: 1 } }],
    ['too many stripes', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { id: 'i', origin: 'p', mode: 'bw', header: S2.encode(), chunkCount: 40, totalBytes: 40, fallback: false, hops: 0, stripes: MAX_STRIPES + 1 } }],
    ['stripe past the count', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { id: 'i', origin: 'p', mode: 'bw', header: S2.encode(), chunkCount: 4, totalBytes: 4, fallback: false, hops: 0, stripes: 2, stripe: 2 } }],
    ['stripe without a count', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { id: 'i', origin: 'p', mode: 'bw', header: S2.encode(), chunkCount: 4, totalBytes: 4, fallback: false, hops: 0, stripe: 0 } }],
    ['relay not a pair', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: { id: 'i', origin: 'p', mode: 'bw', header: S2.encode(), chunkCount: 4, totalBytes: 4, fallback: false, hops: 0, stripes: 2, stripe: 0, relay: [['q']] } }],
    ['proto-injected field', { t: 'ping', ['__proto__']: { nonce: 1 } }]
  ]
  for (const [name, fields] of badFields) {
    it(`bad field: ${name}`, () => {
      rejects(raw(fields), 'bad-field')
    })
  }

  it('ignores unknown extra keys', () => {
    expect(norm(decodeMessage(raw({ t: 'ping', nonce: 4, extra: [1, 2, { x: 'y' }] })))).toEqual({ t: 'ping', nonce: 4 })
  })

  it('rejects invalid local limits with RangeError', () => {
    expect(() => decodeMessage(encodeMessage(EXAMPLES.ping), { maxRanges: -1 })).toThrow(RangeError)
    expect(() => decodeMessage(encodeMessage(EXAMPLES.ping), { vnodeUniverse: 2 ** 32 })).toThrow(RangeError)
  })
})

describe('wireSize', () => {
  const representative: Message[] = [
    ...Object.values(EXAMPLES),
    { t: 'chunk', stream: 12, index: 3, data: new Uint8Array(64 * 1024) },
    { t: 'chunk', stream: 12, index: 0, data: new Uint8Array(64 * 1024), open: OPEN },
    { t: 'probe-rep', nonce: 9, trees: Array.from({ length: 20 }, (_, i) => ({ root: `peer-${i}`, dist: 10 + i / 3, est: 1e7 + i, latChildren: i % 4, bwChildren: 1 })), padding: 128 * 1024 },
    { t: 'partial', id: 'p3/8', root: 'p3', op: 'sum', covered: BIG, value: new Float64Array(100_000).map((_, i) => i / 7) },
    { t: 'facts', vnodeCount: 2 ** 20, members: Array.from({ length: 300 }, (_, i) => ({ peer: `12D3KooW${i}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx`, incarnation: i, status: 'alive' })), records: [{ ranges: BIG, owner: 'p1', version: 3 }], welcome: true },
    { t: 'tree', ops: Array.from({ length: 50 }, (_, i) => ({ ...OPS.check, id: i, dist: i * 1.1 })) },
    { t: 'handoff', record: { ranges: BIG, owner: 'p9', version: 77 }, delivered: [{ streamId: 'p1/1', vnodes: BIG }] }
  ]
  for (const msg of representative) {
    it(`${msg.t} (${encodeMessage(msg).length} bytes)`, () => {
      const real = encodeMessage(msg).length
      const est = wireSize(msg)
      expect(Math.abs(est - real)).toBeLessThanOrEqual(real * 0.25)
      if (msg.t === 'chunk' || msg.t === 'probe-rep' || msg.t === 'partial') {
        expect(Math.abs(est - real)).toBeLessThanOrEqual(real * 0.01)
      }
    })
  }
})
