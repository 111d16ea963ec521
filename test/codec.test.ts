import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { decodeMessage, encodeMessage, wireSize } from '../overlay/codec.ts'
import { WireError } from '../overlay/wire-errors.ts'
import type { Message, MessageType, StreamOpen } from '../overlay/messages.ts'
import { messageArbitrary } from './arb-messages.ts'
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
    expect(roundTrip({ t: 'join', incarnation: 0, want: S2, of: 64 })).toMatchObject({ of: 64 })
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

const arbMessage = messageArbitrary()

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
