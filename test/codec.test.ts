import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { Range } from '../virtual-nodes/interval-set.ts'
import { DEFAULT_CODEC_LIMITS, decodeMessage, encodeMessage, wireSize } from '../overlay/codec.ts'
import { WireError } from '../overlay/wire-errors.ts'
import type { FactsMessage, Message, MessageType, ProbeTreeEntry, StreamOpen, TreeOp } from '../overlay/messages.ts'
import { MAX_STRIPES } from '../overlay/stripes.ts'
import { MAX_TREE_ENTRIES } from '../trees/tree-entries.ts'
import { roundTrip, tryDecode, rejects, raw, S2, BIG, OPS, OPEN, STRIPED_OPEN, EXAMPLES } from './codec-fixtures.ts'

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

  it('a stream id travels without its origin when it starts with it, whole otherwise', () => {
    const sizeOf = (id: string): number => encodeMessage({ t: 'chunk', stream: 0, index: 0, data: new Uint8Array(1), open: { ...OPEN, id } }).length
    for (const id of ['p1/17', 'p1/0.3', 'p2/17', 'p1', 'p1/', '/p1/17', 'p10/1']) {
      const msg: Message = { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(1), open: { ...OPEN, id } }
      expect((roundTrip(msg) as { open: StreamOpen }).open.id).toBe(id)
      expect(wireSize(msg)).toBe(encodeMessage(msg).length)
    }
    // 'p1/17' sends '17' in a one-element array: the origin and the slash are not repeated.
    expect(sizeOf('p2/17') - sizeOf('p1/17')).toBe(2)
  })

  it('a striped stream keeps its stripe count, stripe and relays', () => {
    expect(roundTrip({ t: 'chunk', stream: 5, index: 4, data: new Uint8Array(3), open: STRIPED_OPEN })).toMatchObject({ open: { stripes: 3, stripe: 1 } })
    const { stripe: _stripe, relay: _relay, ...allChunks } = STRIPED_OPEN
    const open = (roundTrip({ t: 'chunk', stream: 5, index: 0, data: new Uint8Array(3), open: allChunks }) as { open: StreamOpen }).open
    expect(open).not.toHaveProperty('stripe')
    expect(open).not.toHaveProperty('relay')
  })

  it('a stream routed by another root\'s tree names it; one on the origin\'s own does not (overlay/tree-roots.ts)', () => {
    const msg: Message = { t: 'chunk', stream: 5, index: 0, data: new Uint8Array(3), open: { ...OPEN, tree: 'p9' } }
    expect(roundTrip(msg)).toMatchObject({ open: { tree: 'p9', origin: 'p1' } })
    expect(wireSize(msg)).toBe(encodeMessage(msg).length)
    expect((roundTrip({ t: 'chunk', stream: 5, index: 0, data: new Uint8Array(3), open: OPEN }) as { open: StreamOpen }).open).not.toHaveProperty('tree')
    rejects(raw({ t: 'chunk', stream: 5, index: 0, data: new Uint8Array(0), open: ['i', 'p1', 'lat', S2.encode(), 1, 0, false, 0, { tree: 7 }] }), 'bad-field')
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
  fc.record({ t: fc.constant('resend' as const), id: arbId }),
  fc.record({ t: fc.constant('entries-req' as const), id: arbId }),
  fc.record({ t: fc.constant('entries-rep' as const), id: arbId, entries: fc.array(fc.record({ peer: arbPeer, reach: arbSet }), { maxLength: MAX_TREE_ENTRIES }) })
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
