import { describe, expect, it } from 'vitest'
import { encode as cborEncode } from 'cborg'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { DEFAULT_CODEC_LIMITS, decodeMessage, encodeMessage } from '../overlay/codec.ts'
import { WireError } from '../overlay/wire-errors.ts'
import { WIRE_VERSION } from '../overlay/messages.ts'
import type { Message } from '../overlay/messages.ts'
import { MAX_NEAR_HINTS } from '../overlay/near-peers.ts'
import { MAX_STRIPES } from '../overlay/stripes.ts'
import { MAX_REDUCE_SEGMENTS } from '../overlay/reduction-state.ts'
import { MAX_TREE_ENTRIES } from '../trees/tree-entries.ts'
import { CLUSTER_TAG_SIZE } from '../overlay/cluster-tag.ts'
import { norm, tryDecode, rejects, raw, openRaw, S2, BIG, OPS, OPEN, EXAMPLES } from './codec-fixtures.ts'

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

  it('a stream open in the wrong shape: a map (wire version 3), too few or too many fields', () => {
    const fields = { id: 'i', origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0 }
    const chunk = (open: unknown): Uint8Array => raw({ t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open })
    expect(decodeMessage(chunk(openRaw(fields))).t).toBe('chunk')
    for (const open of [fields, openRaw(fields).slice(0, 7), [...openRaw(fields), {}, {}]]) {
      expect(rejects(chunk(open), 'bad-field').message).toMatch(/open: expected an array of 8 or 9/)
    }
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
    rejects(raw({ t: 'give', to: 'p', ranges: S2.encode(), share: false }), 'bad-field')
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
    expect(decodeMessage(raw({ t: 'entries-rep', id: 'p/1', entries: entries(MAX_TREE_ENTRIES) })).t).toBe('entries-rep')
    rejects(raw({ t: 'entries-rep', id: 'p/1', entries: entries(MAX_TREE_ENTRIES + 1) }), 'limit')
    const open = { id: 'i', origin: 'p', mode: 'bw', header: S2.encode(), chunkCount: 8, totalBytes: 8, fallback: false, hops: 0, stripes: 2, stripe: 0 }
    expect(decodeMessage(raw({ t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ ...open, relay: entries(MAX_STRIPES) }) })).t).toBe('chunk')
    rejects(raw({ t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ ...open, relay: entries(MAX_STRIPES + 1) }) }), 'limit')
    // Cluster tags (overlay/cluster-tag.ts) and nested relays (one level) are bounded as well.
    const tagged = (n: number): unknown[] => [['q', S2.encode(), Array.from({ length: n }, (_, i) => `p${i}`)]]
    expect(decodeMessage(raw({ t: 'entries-rep', id: 'p/1', entries: tagged(CLUSTER_TAG_SIZE) })).t).toBe('entries-rep')
    rejects(raw({ t: 'entries-rep', id: 'p/1', entries: tagged(CLUSTER_TAG_SIZE + 1) }), 'limit')
    const nested = (n: number): unknown[] => [['q', S2.encode(), entries(n)]]
    expect(decodeMessage(raw({ t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ ...open, relay: nested(MAX_STRIPES) }) })).t).toBe('chunk')
    rejects(raw({ t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ ...open, relay: nested(MAX_STRIPES + 1) }) }), 'limit')
  })

  const badFields: Array<[string, Record<string, unknown>]> = [
    ['missing field', { t: 'ping' }],
    ['non-integer nonce', { t: 'ping', nonce: 1.5 }],
    ['bigint nonce', { t: 'ping', nonce: 2n ** 60n }],
    ['negative incarnation', { t: 'join', incarnation: -1 }],
    ['want not bytes', { t: 'join', incarnation: 0, want: [0, 1] }],
    ['negative stream', { t: 'ack', stream: -2 }],
    ['string stream', { t: 'ack', stream: '2' }],
    ['hold without an age', { t: 'hold', stream: 2 }],
    ['probe reply with fewer depths than trees', { t: 'probe-rep', nonce: 1, trees: [['p1', 1, 1, 0, 0]], padding: new Uint8Array(0), depths: [] }],
    ['probe reply depth below -1', { t: 'probe-rep', nonce: 1, trees: [['p1', 1, 1, 0, 0]], padding: new Uint8Array(0), depths: [-2] }],
    ['negative metric depth', { t: 'tree', ops: [{ op: 'metric', kind: 'bw', root: 'p1', value: 1, depth: -1 }] }],
    ['negative hold age', { t: 'hold', stream: 2, ageMs: -1 }],
    ['fractional hold age', { t: 'hold', stream: 2, ageMs: 0.5 }],
    ['empty peer id', { t: 'give', to: '', ranges: S2.encode() }],
    ['long peer id', { t: 'give', to: 'x'.repeat(129), ranges: S2.encode() }],
    ['long collective id', { t: 'pull', id: 'x'.repeat(257), root: 'p', op: 'sum', length: 1, want: S2.encode(), hops: 0 }],
    ['huge reduce length', { t: 'pull', id: 'i', root: 'p', op: 'sum', length: 2 ** 40, want: S2.encode(), hops: 0 }],
    ['unsegmented reduction longer than one frame carries', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: 'i', origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0, reduce: { op: 'sum', rootVnode: 0, length: DEFAULT_CODEC_LIMITS.maxMessageBytes / 8 + 1 } }) }],
    ['reduction segment longer than one frame carries', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: 'i', origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0, reduce: { op: 'sum', rootVnode: 0, length: 1 << 20, segment: DEFAULT_CODEC_LIMITS.maxMessageBytes / 8 + 1 } }) }],
    ['reduction past maxReduceLength', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: 'i', origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0, reduce: { op: 'sum', rootVnode: 0, length: (1 << 24) + 1, segment: 8192 } }) }],
    ['unsegmented pull longer than one frame carries', { t: 'pull', id: 'i', root: 'p', op: 'sum', length: DEFAULT_CODEC_LIMITS.maxMessageBytes / 8 + 1, want: S2.encode(), hops: 0 }],
    ['pull segment past the array', { t: 'pull', id: 'i', root: 'p', op: 'sum', length: 100, want: S2.encode(), hops: 0, seg: 4, segment: 25 }],
    ['pull seg without segment', { t: 'pull', id: 'i', root: 'p', op: 'sum', length: 100, want: S2.encode(), hops: 0, seg: 0 }],
    ['pull segment of 0', { t: 'pull', id: 'i', root: 'p', op: 'sum', length: 100, want: S2.encode(), hops: 0, seg: 0, segment: 0 }],
    ['negative partial seg', { t: 'partial', id: 'i', root: 'p', op: 'sum', covered: S2.encode(), value: new Uint8Array(8), seg: -1 }],
    ['collective shape not a list', { t: 'partial', id: 'i', root: 'p', op: 'sum', covered: S2.encode(), value: new Uint8Array(8), coll: 1 }],
    ['collective shape of length 0', { t: 'partial', id: 'i', root: 'p', op: 'sum', covered: S2.encode(), value: new Uint8Array(8), coll: [0] }],
    ['collective shape longer than one frame, unsegmented', { t: 'partial', id: 'i', root: 'p', op: 'sum', covered: S2.encode(), value: new Uint8Array(8), coll: [DEFAULT_CODEC_LIMITS.maxMessageBytes / 8 + 1] }],
    ['reduction cut into more than MAX_REDUCE_SEGMENTS segments', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: 'i', origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0, reduce: { op: 'sum', rootVnode: 0, length: 1 << 24, segment: 1 } }) }],
    ['pull of an array cut into more than MAX_REDUCE_SEGMENTS segments', { t: 'pull', id: 'i', root: 'p', op: 'sum', length: 1 << 24, want: S2.encode(), hops: 0, seg: 0, segment: 1 }],
    ['collective shape of more than MAX_REDUCE_SEGMENTS segments', { t: 'partial', id: 'i', root: 'p', op: 'sum', covered: S2.encode(), value: new Uint8Array(8), coll: [1 << 24, 1], seg: 0 }],
    ['join of an overlay of no virtual nodes', { t: 'join', incarnation: 0, want: S2.encode(), of: 0 }],
    ['collective shape with a segment of 0', { t: 'partial', id: 'i', root: 'p', op: 'sum', covered: S2.encode(), value: new Uint8Array(8), coll: [100, 0] }],
    ['collective pull mark not true', { t: 'pull', id: 'i', root: 'p', op: 'sum', length: 1, want: S2.encode(), hops: 0, coll: 1 }],
    // A collective id with '/' could be a broadcast's: the pull would mark its virtual nodes delivered (found by test/core-fuzz).
    ['collective pull with a stream id', { t: 'pull', id: 'p2/0.1', root: 'p', op: 'sum', length: 1, want: S2.encode(), hops: 0, coll: true }],
    ['collective partial with a stream id', { t: 'partial', id: 'p2/0.1', root: 'p', op: 'sum', covered: S2.encode(), value: new Uint8Array(8), coll: [1] }],
    ['bad tree kind', { t: 'tree', ops: [{ op: 'detach', kind: 'fast', root: 'p' }] }],
    ['bad tree op', { t: 'tree', ops: [{ op: 'explode', kind: 'lat', root: 'p' }] }],
    ['ok not boolean', { t: 'tree', ops: [{ ...OPS.result, ok: 1 }] }],
    ['bad member status', { t: 'facts', vnodeCount: 1, members: [['p', 0, 'zombie']], records: [], welcome: true }],
    ['record not a triple', { t: 'facts', vnodeCount: 1, members: [], records: [[S2.encode(), 'p']], welcome: true }],
    ['vnodeCount too large', { t: 'facts', vnodeCount: 2 ** 31 + 1, members: [], records: [], welcome: true }],
    ['bad stream mode', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: 'i', origin: 'p', mode: 'teleport', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0 }) }],
    ['combining plan without a reduction', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: 'i', origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0, combine: { extra: S2.encode() } }) }],
    ['combining plan without extra', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: 'i', origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0, reduce: { op: 'sum', rootVnode: 0, length: 4 }, combine: { to: 'q' } }) }],
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
    ['entries answer without an id', { t: 'entries-rep', entries: [] }],
    ['cluster entry of four fields', { t: 'entries-rep', id: 'p/1', entries: [['q', S2.encode(), ['p'], 1]] }],
    ['cluster tag not a list', { t: 'entries-rep', id: 'p/1', entries: [['q', S2.encode(), 'p']] }],
    ['cluster tag of numbers', { t: 'entries-rep', id: 'p/1', entries: [['q', S2.encode(), [1]]] }],
    ['relays nested twice', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: 'i', origin: 'p', mode: 'bw', header: S2.encode(), chunkCount: 4, totalBytes: 4, fallback: false, hops: 0, stripes: 2, stripe: 0, relay: [['q', S2.encode(), [['r', S2.encode(), [['s', S2.encode()]]]]]] }) }],
    ['entries answer with a bad entry', { t: 'entries-rep', id: 'p/1', entries: [['q']] }],
    ['entries question with a numeric id', { t: 'entries-req', id: 7 }],
    ['one stripe', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: 'i', origin: 'p', mode: 'bw', header: S2.encode(), chunkCount: 4, totalBytes: 4, fallback: false, hops: 0, stripes: 1 }) }],
    ['too many stripes', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: 'i', origin: 'p', mode: 'bw', header: S2.encode(), chunkCount: 40, totalBytes: 40, fallback: false, hops: 0, stripes: MAX_STRIPES + 1 }) }],
    ['stripe past the count', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: 'i', origin: 'p', mode: 'bw', header: S2.encode(), chunkCount: 4, totalBytes: 4, fallback: false, hops: 0, stripes: 2, stripe: 2 }) }],
    ['stripe without a count', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: 'i', origin: 'p', mode: 'bw', header: S2.encode(), chunkCount: 4, totalBytes: 4, fallback: false, hops: 0, stripe: 0 }) }],
    ['relay not a pair', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: 'i', origin: 'p', mode: 'bw', header: S2.encode(), chunkCount: 4, totalBytes: 4, fallback: false, hops: 0, stripes: 2, stripe: 0, relay: [['q']] }) }],
    ['proto-injected field', { t: 'ping', ['__proto__']: { nonce: 1 } }],
    ['open id tuple of two', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: ['1', '2'], origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0 }) }],
    ['open id suffix empty', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: [''], origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0 }) }],
    ['open id past maxIdLength with its origin', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: openRaw({ id: ['x'.repeat(255)], origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0 }) }],
    ['open extras not a map', { t: 'chunk', stream: 0, index: 0, data: new Uint8Array(0), open: [...openRaw({ id: 'i', origin: 'p', mode: 'lat', header: S2.encode(), chunkCount: 1, totalBytes: 0, fallback: false, hops: 0 }), [1]] }]
  ]
  for (const [name, fields] of badFields) {
    it(`bad field: ${name}`, () => {
      // Rejected for its own fault, not for an open in the wrong shape.
      expect(rejects(raw(fields), 'bad-field').message).not.toMatch(/expected an array of 8 or 9/)
    })
  }

  it('a reduction of more than MAX_REDUCE_SEGMENTS segments is rejected for that; exactly that many pass', () => {
    for (const [name, fields] of badFields.filter(([n]) => n.includes('MAX_REDUCE_SEGMENTS'))) {
      expect(rejects(raw(fields), 'bad-field').message, name).toMatch(/more than 65536 segments/)
    }
    const pull = (segment: number): Record<string, unknown> => ({ t: 'pull', id: 'i', root: 'p', op: 'sum', length: 1 << 24, want: S2.encode(), hops: 0, seg: 0, segment })
    expect(decodeMessage(raw(pull((1 << 24) / MAX_REDUCE_SEGMENTS)))).toMatchObject({ t: 'pull', segment: 256 })
    expect(rejects(raw(pull((1 << 24) / MAX_REDUCE_SEGMENTS - 1)), 'bad-field').message).toMatch(/segments/)
  })

  it('ignores unknown extra keys', () => {
    expect(norm(decodeMessage(raw({ t: 'ping', nonce: 4, extra: [1, 2, { x: 'y' }] })))).toEqual({ t: 'ping', nonce: 4 })
  })

  it('rejects invalid local limits with RangeError', () => {
    expect(() => decodeMessage(encodeMessage(EXAMPLES.ping), { maxRanges: -1 })).toThrow(RangeError)
    expect(() => decodeMessage(encodeMessage(EXAMPLES.ping), { vnodeUniverse: 2 ** 32 })).toThrow(RangeError)
  })
})

