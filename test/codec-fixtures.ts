/**
 * Shared fixtures of the codec tests (codec.test.ts, codec-rejections.test.ts): comparison
 * helpers, raw frames, and one example of every message type.
 */
import { expect } from 'vitest'
import { encode as cborEncode } from 'cborg'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { Range } from '../virtual-nodes/interval-set.ts'
import { decodeMessage, encodeMessage } from '../overlay/codec.ts'
import type { CodecLimits } from '../overlay/codec.ts'
import { REJECT_REASONS, WireError } from '../overlay/wire-errors.ts'
import type { RejectReason } from '../overlay/wire-errors.ts'
import { WIRE_VERSION } from '../overlay/messages.ts'
import type { Message, MessageType, StreamOpen, TreeOp } from '../overlay/messages.ts'

/** Comparable form: interval sets and byte arrays become plain data. */
export function norm (x: unknown): unknown {
  if (x instanceof IntervalSet) return { set: x.toJSON() }
  if (x instanceof Float64Array) return { f64: Array.from(x) }
  if (x instanceof Uint8Array) return { bytes: Array.from(x) }
  if (Array.isArray(x)) return x.map(norm)
  if (typeof x === 'object' && x !== null) return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, norm(v)]))
  return x
}

export function roundTrip (msg: Message, limits?: CodecLimits): Message {
  const decoded = decodeMessage(encodeMessage(msg), limits)
  expect(norm(decoded)).toEqual(norm(msg))
  return decoded
}

/** Decodes `bytes`, asserting that any failure is a WireError with a known reason. */
export function tryDecode (bytes: Uint8Array, limits?: CodecLimits): Message | WireError {
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

export function rejects (bytes: Uint8Array, reason: RejectReason, limits?: CodecLimits): WireError {
  const result = tryDecode(bytes, limits)
  expect(result).toBeInstanceOf(WireError)
  expect((result as WireError).reason).toBe(reason)
  return result as WireError
}

export const raw = (fields: Record<string, unknown>): Uint8Array => cborEncode({ v: WIRE_VERSION, ...fields })

/**
 * A stream open in its wire form (overlay/codec.ts `openWire`: eight fields, then a map of
 * the optional ones) built from its fields by name, for raw frames that break one field.
 */
export function openRaw (o: Record<string, unknown>): unknown[] {
  const { id, origin, mode, header, chunkCount, totalBytes, fallback, hops, ...extras } = o
  const out: unknown[] = [id, origin, mode, header, chunkCount, totalBytes, fallback, hops]
  if (Object.keys(extras).length > 0) out.push(extras)
  return out
}

export const S1 = IntervalSet.fromRanges([[0, 10], [20, 25], [1000, 4096]])
export const S2 = IntervalSet.of(7)
export const BIG = IntervalSet.fromRanges(Array.from({ length: 500 }, (_, i): Range => [i * 100, i * 100 + 37]))

export const OPS: { [K in TreeOp['op']]: Extract<TreeOp, { op: K }> } = {
  check: { op: 'check', kind: 'lat', root: 'p1', id: 42, origin: 'p7', dist: 12.75, path: ['p1', 'p3', 'p7'] },
  result: { op: 'result', kind: 'bw', root: 'p1', id: -3, ok: false, dist: 1.5e9, path: [] },
  adopt: { op: 'adopt', kind: 'bw', root: 'p2', reach: S1, bw: 12_500_000, entries: [{ peer: 'p4', reach: S2 }] },
  detach: { op: 'detach', kind: 'bw', root: 'p2' },
  disown: { op: 'disown', kind: 'lat', root: 'p3' },
  unlock: { op: 'unlock', kind: 'lat', root: 'p2', id: 0, origin: 'p9' },
  reach: { op: 'reach', kind: 'bw', root: 'p2', reach: IntervalSet.EMPTY, entries: [{ peer: 'p5', reach: S1 }, { peer: 'p6', reach: IntervalSet.EMPTY }] },
  metric: { op: 'metric', kind: 'lat', root: 'p2', value: 0.125 }
}

export const OPEN: StreamOpen = {
  id: 'p1/17', origin: 'p1', mode: 'bw', header: S1, chunkCount: 4, totalBytes: 200_000, fallback: true,
  reduce: { op: 'sum', rootVnode: 1234, length: 4096 }, hops: 3, combine: { to: 'p7', extra: S2 }
}
/** A striped broadcast's stream (overlay/stripes.ts): stripe 1 of 3, relaying two parts. */
export const STRIPED_OPEN: StreamOpen = {
  id: 'p1/18', origin: 'p1', mode: 'bw', header: S1, chunkCount: 64, totalBytes: 4 << 20, fallback: false, hops: 1,
  stripes: 3, stripe: 1, relay: [{ to: 'p8', header: S2 }, { to: 'p9', header: IntervalSet.EMPTY }]
}

export const EXAMPLES: { [T in MessageType]: Extract<Message, { t: T }> } = {
  join: { t: 'join', incarnation: 3, want: S1 },
  facts: {
    t: 'facts',
    vnodeCount: 65536,
    members: [{ peer: 'p1', incarnation: 0, status: 'alive' }, { peer: 'p2', incarnation: 9, status: 'left' }, { peer: 'p3', incarnation: 1, status: 'dead' }],
    records: [{ ranges: S1, owner: 'p1', version: 12 }, { ranges: S2, owner: 'p2', version: 0 }],
    welcome: true
  },
  give: { t: 'give', to: 'p4', ranges: S2, share: true },
  'join-elsewhere': { t: 'join-elsewhere', to: 'p5' },
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
      { root: 'p1', dist: 23.5, est: 1.25e7, latChildren: 2, bwChildren: 0, bwDepth: 3 },
      { root: 'p2', dist: -1, est: -1, latChildren: 0, bwChildren: 5, bwDepth: -1 }
    ],
    padding: 1000,
    near: [{ peer: 'p3', rttMs: 0.31 }, { peer: 'p4', rttMs: 0 }]
  },
  tree: { t: 'tree', ops: Object.values(OPS) },
  chunk: { t: 'chunk', stream: 5, index: 0, data: new Uint8Array([1, 2, 3, 255]), open: OPEN },
  ack: { t: 'ack', stream: 5 },
  hold: { t: 'hold', stream: 5, ageMs: 30_000 },
  partial: { t: 'partial', id: 'p1/17', root: 'p1', op: 'sum', covered: S1, value: new Float64Array([1.5, -2, NaN, Infinity, 0]) },
  pull: { t: 'pull', id: 'p1/17', root: 'p1', op: 'max', length: 4096, want: S2, hops: 0 },
  'reduce-ack': { t: 'reduce-ack', id: 'p1/17', root: 'p1', part: S1 },
  resend: { t: 'resend', id: 'p1/18' },
  'entries-req': { t: 'entries-req', id: 'p2/19' },
  'entries-rep': { t: 'entries-rep', id: 'p2/19', entries: [{ peer: 'p8', reach: S2 }, { peer: 'p9', reach: S1 }] }
}

