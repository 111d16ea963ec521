/**
 * The wire codec: messages to CBOR frames and back, plus a cheap size estimate.
 *
 * A frame is the cborg encoding of a map `{ v: WIRE_VERSION, t, ...fields }`. Nested values
 * are kept compact: every {@link IntervalSet} travels as its own varint encoding (a byte
 * string), a Float64Array as its raw little-endian bytes, an ownership record as
 * `[rangesBytes, owner, version]`, a delivered state as `[streamId, vnodesBytes]`, a member
 * fact as `[peer, incarnation, status]`, a probe tree entry as
 * `[root, dist, est, latChildren, bwChildren]` (their bandwidth-tree depths, when a peer
 * reports them, in a list `depths` beside: an older peer ignores it), a near hint as `[peer, rttMs]`, a stream
 * open as an array (see `openWire`); tree operations and reduce starts are maps with the
 * field names of their types. A probe reply's `padding` is a
 * zero-filled byte string of that length, so a probe really costs its size on the wire.
 *
 * Decoding never trusts the bytes: anything wrong surfaces as a {@link WireError}.
 */
import { decode as cborDecode, encode as cborEncode } from 'cborg'
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import { WIRE_VERSION } from './messages.ts'
import type { Message, StreamOpen, StripeRelay, TreeEntry, TreeOp } from './messages.ts'
import { validateMessage } from './codec-validate.ts'
import { float64ToBytes } from './float64-bytes.ts'
import type { ResolvedLimits } from './codec-validate.ts'
import { WireError } from './wire-errors.ts'

/** Bounds applied when decoding remote frames; every field is optional. */
export interface CodecLimits {
  /** Largest accepted frame in bytes, checked before decoding. @default 1 MiB + 64 KiB */
  maxMessageBytes?: number
  /** Most ranges in any one interval set. @default 65536 */
  maxRanges?: number
  /** Exclusive bound on virtual node ids (at most 2^31). @default 2**31 */
  vnodeUniverse?: number
  /** Longest list: members, records, delivered states, tree ops, paths, probe entries. @default 100_000 */
  maxListLength?: number
  /** Longest peer id (in UTF-16 code units). @default 128 */
  maxPeerIdLength?: number
  /** Longest collective id, stream id or reduction operator name. @default 256 */
  maxIdLength?: number
  /**
   * Most elements of a reduced array (the whole array: long arrays travel in segments,
   * each of which must fit one frame). Match the core's `maxReduceLength`. @default 16777216
   */
  maxReduceLength?: number
}

/** The defaults of {@link CodecLimits}. */
export const DEFAULT_CODEC_LIMITS: Readonly<Required<CodecLimits>> = Object.freeze({
  maxMessageBytes: 1024 * 1024 + 64 * 1024,
  maxRanges: 65536,
  vnodeUniverse: 2 ** 31,
  maxListLength: 100_000,
  maxPeerIdLength: 128,
  maxIdLength: 256,
  maxReduceLength: 1 << 24
})

function resolveLimits (limits: CodecLimits | undefined): ResolvedLimits {
  const r = { ...DEFAULT_CODEC_LIMITS }
  if (limits === undefined) return r
  for (const key of Object.keys(DEFAULT_CODEC_LIMITS) as Array<keyof CodecLimits>) {
    const value = limits[key]
    if (value === undefined) continue
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`codec limit ${key} must be a non-negative integer, got ${value}`)
    r[key] = value
  }
  if (r.vnodeUniverse > 2 ** 31) throw new RangeError(`codec limit vnodeUniverse must be at most 2^31, got ${r.vnodeUniverse}`)
  return r
}

// ---------------------------------------------------------------------------------------
// Encoding

const setBytes = (s: IntervalSet): Uint8Array => s.encode()
const recordWire = (r: OwnershipRecord): unknown[] => r.ownerIncarnation === undefined ? [setBytes(r.ranges), r.owner, r.version] : [setBytes(r.ranges), r.owner, r.version, r.ownerIncarnation]

/** A tree op's cluster entries as `[[peer, reachBytes(, nearIds)], ...]`, only when there are some. */
function withEntries (out: Record<string, unknown>, entries: readonly TreeEntry[] | undefined): Record<string, unknown> {
  if (entries !== undefined && entries.length > 0) out.entries = entries.map((e) => e.near === undefined ? [e.peer, setBytes(e.reach)] : [e.peer, setBytes(e.reach), e.near])
  return out
}

/** A striped stream's relays as `[[to, headerBytes(, relays)], ...]` (one level of nesting). */
const relayWire = (relay: readonly StripeRelay[]): unknown[] => relay.map((r) => r.relay === undefined ? [r.to, setBytes(r.header)] : [r.to, setBytes(r.header), relayWire(r.relay)])

function treeOpWire (op: TreeOp): Record<string, unknown> {
  switch (op.op) {
    case 'check': return op.short === true
      ? { op: op.op, kind: op.kind, root: op.root, id: op.id, origin: op.origin, dist: op.dist, path: op.path, short: true }
      : { op: op.op, kind: op.kind, root: op.root, id: op.id, origin: op.origin, dist: op.dist, path: op.path }
    case 'result': return { op: op.op, kind: op.kind, root: op.root, id: op.id, ok: op.ok, dist: op.dist, path: op.path }
    case 'adopt': return withEntries({ op: op.op, kind: op.kind, root: op.root, reach: setBytes(op.reach), bw: op.bw }, op.entries)
    case 'reach': return withEntries({ op: op.op, kind: op.kind, root: op.root, reach: setBytes(op.reach) }, op.entries)
    case 'detach':
    case 'disown': return { op: op.op, kind: op.kind, root: op.root }
    case 'unlock': return { op: op.op, kind: op.kind, root: op.root, id: op.id, origin: op.origin }
    case 'metric': return op.depth === undefined ? { op: op.op, kind: op.kind, root: op.root, value: op.value } : { op: op.op, kind: op.kind, root: op.root, value: op.value, depth: op.depth }
  }
}

/**
 * A stream open travels as an array, since one goes with the first chunk of every stream on
 * every hop and its map keys were half its bytes (a 1-byte broadcast's open was 129 bytes,
 * 58 of them keys): `[id, origin, mode, header, chunkCount, totalBytes, fallback, hops]`,
 * plus a ninth element, a map of the optional fields (`tree`, `reduce`, `combine`, `stripes`,
 * `stripe`, `relay`), only when one is present. An id of the usual form `${origin}/rest`
 * travels as `[rest]`.
 */
function openWire (o: StreamOpen): unknown[] {
  const prefix = `${o.origin}/`
  const id = o.id.length > prefix.length && o.id.startsWith(prefix) ? [o.id.slice(prefix.length)] : o.id
  const out: unknown[] = [id, o.origin, o.mode, setBytes(o.header), o.chunkCount, o.totalBytes, o.fallback, o.hops]
  const ext: Record<string, unknown> = {}
  let extras = false
  if (o.tree !== undefined) { ext.tree = o.tree; extras = true }
  if (o.reduce !== undefined) {
    const r: Record<string, unknown> = { op: o.reduce.op, rootVnode: o.reduce.rootVnode, length: o.reduce.length }
    if (o.reduce.segment !== undefined) r.segment = o.reduce.segment
    ext.reduce = r
    extras = true
  }
  if (o.combine !== undefined) { ext.combine = o.combine.to === undefined ? { extra: setBytes(o.combine.extra) } : { to: o.combine.to, extra: setBytes(o.combine.extra) }; extras = true }
  if (o.stripes !== undefined) { ext.stripes = o.stripes; extras = true }
  if (o.stripe !== undefined) { ext.stripe = o.stripe; extras = true }
  if (o.relay !== undefined) { ext.relay = relayWire(o.relay); extras = true }
  if (extras) out.push(ext)
  return out
}

/** The fields of `msg` besides `v` and `t`, in wire form. */
function fieldsWire (msg: Message): Record<string, unknown> {
  switch (msg.t) {
    case 'join': return { incarnation: msg.incarnation, ...(msg.want === undefined ? {} : { want: setBytes(msg.want) }), ...(msg.of === undefined ? {} : { of: msg.of }) }
    case 'facts': return {
      vnodeCount: msg.vnodeCount,
      members: msg.members.map((m) => [m.peer, m.incarnation, m.status]),
      records: msg.records.map(recordWire),
      welcome: msg.welcome,
      ...(msg.claim === true ? { claim: true } : {})
    }
    case 'give': return { to: msg.to, ranges: setBytes(msg.ranges), ...(msg.share === true ? { share: true } : {}) }
    case 'join-elsewhere': return { to: msg.to }
    case 'handoff': return { record: recordWire(msg.record), delivered: msg.delivered.map((d) => [d.streamId, setBytes(d.vnodes)]), ...(msg.lost === true ? { lost: true } : {}) }
    case 'handoff-ack':
    case 'claim-ack': return { version: msg.version, ranges: setBytes(msg.ranges) }
    case 'ping':
    case 'pong': return { nonce: msg.nonce }
    case 'probe-req': return msg.light === true ? { nonce: msg.nonce, light: true } : { nonce: msg.nonce }
    case 'sync':
    case 'offer': return {}
    case 'probe-rep': {
      const out: Record<string, unknown> = {
        nonce: msg.nonce,
        trees: msg.trees.map((e) => [e.root, e.dist, e.est, e.latChildren, e.bwChildren]),
        padding: new Uint8Array(msg.padding)
      }
      if (msg.near !== undefined) out.near = msg.near.map((h) => [h.peer, h.rttMs])
      if (msg.trees.some((e) => e.bwDepth !== undefined)) out.depths = msg.trees.map((e) => e.bwDepth ?? -1)
      return out
    }
    case 'tree': return { ops: msg.ops.map(treeOpWire) }
    case 'chunk': {
      const out: Record<string, unknown> = { stream: msg.stream, index: msg.index, data: msg.data }
      if (msg.open !== undefined) out.open = openWire(msg.open)
      return out
    }
    case 'ack': return msg.away === true ? { stream: msg.stream, away: true } : { stream: msg.stream }
    case 'hold': return { stream: msg.stream, ageMs: msg.ageMs }
    case 'partial': {
      const out: Record<string, unknown> = { id: msg.id, root: msg.root, op: msg.op, covered: setBytes(msg.covered), value: float64ToBytes(msg.value) }
      if (msg.seg !== undefined) out.seg = msg.seg
      if (msg.coll !== undefined) out.coll = msg.coll.segment === undefined ? [msg.coll.length] : [msg.coll.length, msg.coll.segment]
      return out
    }
    case 'reduce-ack': return { id: msg.id, root: msg.root, part: setBytes(msg.part) }
    case 'resend': return { id: msg.id }
    case 'entries-req': return { id: msg.id }
    case 'entries-rep': return withEntries({ id: msg.id }, msg.entries)
    case 'pull': {
      const out: Record<string, unknown> = { id: msg.id, root: msg.root, op: msg.op, length: msg.length, want: setBytes(msg.want), hops: msg.hops }
      if (msg.seg !== undefined && msg.segment !== undefined) { out.seg = msg.seg; out.segment = msg.segment }
      if (msg.coll === true) out.coll = true
      return out
    }
  }
}

/**
 * Encodes a message as one CBOR frame. The message is trusted (it is our own); encoding a
 * malformed one (e.g. a non-integer padding) may throw or produce a frame peers reject.
 */
export function encodeMessage (msg: Message): Uint8Array {
  return cborEncode({ v: WIRE_VERSION, t: msg.t, ...fieldsWire(msg) })
}

// ---------------------------------------------------------------------------------------
// Decoding

/**
 * Decodes and validates one frame from a remote peer. Throws {@link WireError} (and
 * nothing else) on bad input: `too-large` when longer than `maxMessageBytes` (checked
 * before decoding), `malformed` for undecodable CBOR or interval sets, `version`,
 * `unknown-type`, `bad-field` for missing, mistyped or out-of-range fields, `limit` for
 * over-long lists. Reduction lengths (`pull.length`, `open.reduce.length`) are bounded by
 * `maxReduceLength`; a segment (`segment`), and an unsegmented array, by
 * `maxMessageBytes / 8`, since each partial value must fit one frame. Unknown extra keys
 * are ignored. Throws RangeError on invalid `limits` (local misuse).
 */
export function decodeMessage (bytes: Uint8Array, limits?: CodecLimits): Message {
  const l = resolveLimits(limits)
  if (!(bytes instanceof Uint8Array)) throw new WireError('malformed', 'input is not a byte array')
  if (bytes.byteLength > l.maxMessageBytes) {
    throw new WireError('too-large', `${bytes.byteLength} bytes > ${l.maxMessageBytes}`)
  }
  let value: unknown
  try {
    value = cborDecode(bytes, { rejectDuplicateMapKeys: true, allowUndefined: false })
  } catch (err) {
    // Includes stack overflows on absurdly nested input.
    throw new WireError('malformed', err instanceof Error ? err.message : 'undecodable CBOR', { cause: err })
  }
  try {
    return validateMessage(value, l)
  } catch (err) {
    if (err instanceof WireError) throw err
    // Defensive: a validation bug must still not let a foreign exception escape.
    throw new WireError('malformed', err instanceof Error ? err.message : 'invalid message', { cause: err })
  }
}

// ---------------------------------------------------------------------------------------
// Size estimate

/** Bytes of a CBOR head carrying argument `n` (a non-negative integer). */
function head (n: number): number {
  return n < 24 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n < 0x100000000 ? 5 : 9
}

/** A number: exact for integers, float32/float64 for others (cborg may use float16). */
function num (n: number): number {
  if (Number.isSafeInteger(n)) return head(n < 0 ? -1 - n : n)
  return Math.fround(n) === n || Number.isNaN(n) ? 5 : 9
}

/** A string, assuming one UTF-8 byte per code unit. */
function str (s: string): number {
  return head(s.length) + s.length
}

const bytes = (n: number): number => head(n) + n
const set = (s: IntervalSet): number => bytes(s.encodedLength())
/** A map key plus its number value. */
const kn = (key: string, n: number): number => str(key) + num(n)
const ks = (key: string, s: string): number => str(key) + str(s)
const kset = (key: string, s: IntervalSet): number => str(key) + set(s)
const kbool = (key: string): number => str(key) + 1

function list<T> (items: readonly T[], size: (item: T) => number): number {
  let n = head(items.length)
  for (const item of items) n += size(item)
  return n
}

const recordSize = (r: OwnershipRecord): number => 1 + set(r.ranges) + str(r.owner) + num(r.version) + (r.ownerIncarnation === undefined ? 0 : num(r.ownerIncarnation))
const pathSize = (p: readonly string[]): number => str('path') + list(p, str)

const entriesSize = (entries: readonly TreeEntry[] | undefined): number =>
  entries === undefined || entries.length === 0 ? 0 : str('entries') + list(entries, (e) => 1 + str(e.peer) + set(e.reach) + (e.near === undefined ? 0 : list(e.near, str)))
const relaySize = (relay: readonly StripeRelay[]): number => list(relay, (r) => 1 + str(r.to) + set(r.header) + (r.relay === undefined ? 0 : relaySize(r.relay)))

function treeOpSize (op: TreeOp): number {
  const common = ks('op', op.op) + ks('kind', op.kind) + ks('root', op.root)
  switch (op.op) {
    case 'check': return 1 + common + kn('id', op.id) + ks('origin', op.origin) + kn('dist', op.dist) + pathSize(op.path) + (op.short === true ? kbool('short') : 0)
    case 'result': return 1 + common + kn('id', op.id) + kbool('ok') + kn('dist', op.dist) + pathSize(op.path)
    case 'adopt': return 1 + common + kset('reach', op.reach) + kn('bw', op.bw) + entriesSize(op.entries)
    case 'reach': return 1 + common + kset('reach', op.reach) + entriesSize(op.entries)
    case 'detach':
    case 'disown': return 1 + common
    case 'unlock': return 1 + common + kn('id', op.id) + ks('origin', op.origin)
    case 'metric': return 1 + common + kn('value', op.value) + (op.depth === undefined ? 0 : kn('depth', op.depth))
  }
}

function openSize (o: StreamOpen): number {
  const prefix = `${o.origin}/`
  const id = o.id.length > prefix.length && o.id.startsWith(prefix) ? 1 + str(o.id.slice(prefix.length)) : str(o.id)
  const n = 1 + id + str(o.origin) + str(o.mode) + set(o.header) + num(o.chunkCount) + num(o.totalBytes) + 1 + num(o.hops)
  let ext = 0
  let extras = 0
  if (o.tree !== undefined) { ext += ks('tree', o.tree); extras++ }
  if (o.reduce !== undefined) {
    ext += str('reduce') + 1 + ks('op', o.reduce.op) + kn('rootVnode', o.reduce.rootVnode) + kn('length', o.reduce.length)
    if (o.reduce.segment !== undefined) ext += kn('segment', o.reduce.segment)
    extras++
  }
  if (o.combine !== undefined) { ext += str('combine') + 1 + kset('extra', o.combine.extra) + (o.combine.to === undefined ? 0 : ks('to', o.combine.to)); extras++ }
  if (o.stripes !== undefined) { ext += kn('stripes', o.stripes); extras++ }
  if (o.stripe !== undefined) { ext += kn('stripe', o.stripe); extras++ }
  if (o.relay !== undefined) { ext += str('relay') + relaySize(o.relay); extras++ }
  return extras === 0 ? n : n + 1 + ext
}

function fieldsSize (msg: Message): number {
  switch (msg.t) {
    case 'join': return kn('incarnation', msg.incarnation) + (msg.want === undefined ? 0 : kset('want', msg.want)) + (msg.of === undefined ? 0 : kn('of', msg.of))
    case 'facts': return kn('vnodeCount', msg.vnodeCount) + kbool('welcome') +
      str('members') + list(msg.members, (m) => 1 + str(m.peer) + num(m.incarnation) + str(m.status)) +
      str('records') + list(msg.records, recordSize) + (msg.claim === true ? kbool('claim') : 0)
    case 'give': return ks('to', msg.to) + kset('ranges', msg.ranges) + (msg.share === true ? kbool('share') : 0)
    case 'join-elsewhere': return ks('to', msg.to)
    case 'handoff': return str('record') + recordSize(msg.record) +
      str('delivered') + list(msg.delivered, (d) => 1 + str(d.streamId) + set(d.vnodes)) + (msg.lost === true ? kbool('lost') : 0)
    case 'handoff-ack':
    case 'claim-ack': return kn('version', msg.version) + kset('ranges', msg.ranges)
    case 'ping':
    case 'pong': return kn('nonce', msg.nonce)
    case 'probe-req': return kn('nonce', msg.nonce) + (msg.light === true ? kbool('light') : 0)
    case 'sync':
    case 'offer': return 0
    case 'probe-rep': return kn('nonce', msg.nonce) + str('padding') + bytes(msg.padding) +
      str('trees') + list(msg.trees, (e) => 1 + str(e.root) + num(e.dist) + num(e.est) + num(e.latChildren) + num(e.bwChildren)) +
      (msg.near === undefined ? 0 : str('near') + list(msg.near, (h) => 1 + str(h.peer) + num(h.rttMs))) +
      (msg.trees.some((e) => e.bwDepth !== undefined) ? str('depths') + list(msg.trees, (e) => num(e.bwDepth ?? -1)) : 0)
    case 'tree': return str('ops') + list(msg.ops, treeOpSize)
    case 'chunk': return kn('stream', msg.stream) + kn('index', msg.index) + str('data') + bytes(msg.data.byteLength) +
      (msg.open === undefined ? 0 : str('open') + openSize(msg.open))
    case 'ack': return kn('stream', msg.stream) + (msg.away === true ? kbool('away') : 0)
    case 'hold': return kn('stream', msg.stream) + kn('ageMs', msg.ageMs)
    case 'partial': return ks('id', msg.id) + ks('root', msg.root) + ks('op', msg.op) + kset('covered', msg.covered) +
      str('value') + bytes(msg.value.byteLength) + (msg.seg === undefined ? 0 : kn('seg', msg.seg)) +
      (msg.coll === undefined ? 0 : str('coll') + 1 + num(msg.coll.length) + (msg.coll.segment === undefined ? 0 : num(msg.coll.segment)))
    case 'reduce-ack': return ks('id', msg.id) + ks('root', msg.root) + kset('part', msg.part)
    case 'resend':
    case 'entries-req': return ks('id', msg.id)
    case 'entries-rep': return ks('id', msg.id) + entriesSize(msg.entries)
    case 'pull': return ks('id', msg.id) + ks('root', msg.root) + ks('op', msg.op) + kn('length', msg.length) +
      kset('want', msg.want) + kn('hops', msg.hops) +
      (msg.seg === undefined || msg.segment === undefined ? 0 : kn('seg', msg.seg) + kn('segment', msg.segment)) +
      (msg.coll === true ? kbool('coll') : 0)
  }
}

/**
 * Estimated encoded size of `msg` in bytes, computed without encoding or allocating: it
 * walks the same structure {@link encodeMessage} writes, counting CBOR heads, keys and
 * payloads. Exact for byte payloads (chunk data, probe padding, partial values) and
 * integers; may over-count non-integer numbers (cborg can use float16) and under-count
 * non-ASCII strings. Meant for charging bytes to a simulated network.
 */
export function wireSize (msg: Message): number {
  // The map head (at most 23 entries) and the `v` and `t` entries.
  return 1 + kn('v', WIRE_VERSION) + ks('t', msg.t) + fieldsSize(msg)
}
