/**
 * Validation half of the codec: turns the plain value cborg decoded from a remote frame
 * into a typed {@link Message}, or throws a {@link WireError}. Nothing here trusts its
 * input: every field is type-checked and range-checked, every list length is bounded, and
 * only own properties are read (a `__proto__` key on the wire cannot inject fields).
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import type { DeliveredState } from '../virtual-nodes/handoff.ts'
import { TREE_KINDS } from '../trees/tree-kind.ts'
import { WIRE_VERSION } from './messages.ts'
import type {
  CollectiveShape, CombinePlan, MemberFact, MemberStatus, Message, MessageType, NearHint, PartialMessage, ProbeTreeEntry, PullMessage, ReduceStart, StreamMode, StreamOpen, TreeEntry, TreeOp
} from './messages.ts'
import { MAX_STRIPES } from './stripes.ts'
import { MAX_NEAR_HINTS } from './near-peers.ts'
import { WireError } from './wire-errors.ts'
import { readEntries, readRelays } from './codec-stripes.ts'
import { float64FromBytes } from './float64-bytes.ts'
import { MAX_REDUCE_SEGMENTS } from './reduction-state.ts'

/** Fully resolved, validated codec limits (see `CodecLimits` in codec.ts). */
export interface ResolvedLimits {
  readonly maxMessageBytes: number
  readonly maxRanges: number
  readonly vnodeUniverse: number
  readonly maxListLength: number
  readonly maxPeerIdLength: number
  readonly maxIdLength: number
  readonly maxReduceLength: number
}

type Obj = Readonly<Record<string, unknown>>

const STREAM_MODES: readonly StreamMode[] = ['lat', 'bw', 'direct']
const MEMBER_STATUSES: readonly MemberStatus[] = ['alive', 'left', 'dead']

function bad (path: string, what: string): never {
  throw new WireError('bad-field', `${path}: ${what}`)
}

function isMap (x: unknown): x is Obj {
  return typeof x === 'object' && x !== null && !Array.isArray(x) && !ArrayBuffer.isView(x)
}

/** Reads an own property only, so inherited or injected prototype keys are never seen. */
function own (o: Obj, key: string): unknown {
  return Object.hasOwn(o, key) ? o[key] : undefined
}

/** Field readers bound to one set of limits; `path` names the field in error messages. */
class Fields {
  constructor (readonly limits: ResolvedLimits) {}

  map (x: unknown, path: string): Obj {
    return isMap(x) ? x : bad(path, 'expected a map')
  }

  tuple (x: unknown, path: string, length: number): readonly unknown[] {
    if (!Array.isArray(x) || x.length !== length) bad(path, `expected an array of ${length}`)
    return x
  }

  /** A list of at most `maxListLength` items; longer lists are a `limit` rejection. */
  list<T> (x: unknown, path: string, item: (y: unknown, path: string) => T): T[] {
    if (!Array.isArray(x)) bad(path, 'expected an array')
    if (x.length > this.limits.maxListLength) {
      throw new WireError('limit', `${path}: ${x.length} items > ${this.limits.maxListLength}`)
    }
    const out: T[] = []
    for (let i = 0; i < x.length; i++) out.push(item(x[i], `${path}[${i}]`))
    return out
  }

  /** A safe integer in `[min, max]`. */
  int (x: unknown, path: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
    if (typeof x !== 'number' || !Number.isSafeInteger(x)) bad(path, 'expected an integer')
    if (x < min || x > max) bad(path, `${x} outside [${min}, ${max}]`)
    return x === 0 ? 0 : x // no -0
  }

  /** A finite number. */
  num (x: unknown, path: string): number {
    if (typeof x !== 'number' || !Number.isFinite(x)) bad(path, 'expected a finite number')
    return x
  }

  /** A finite number >= 0 (a distance or rate a tree op carries: a probe reply would refuse anything else). */
  nonNegative (x: unknown, path: string): number {
    const n = this.num(x, path)
    return n >= 0 ? n : bad(path, `${n} is negative`)
  }

  /** A finite number that is either `-1` (not connected) or non-negative. */
  metric (x: unknown, path: string): number {
    const n = this.num(x, path)
    if (n < 0 && n !== -1) bad(path, `${n} is neither -1 nor >= 0`)
    return n
  }

  bool (x: unknown, path: string): boolean {
    return typeof x === 'boolean' ? x : bad(path, 'expected a boolean')
  }

  str (x: unknown, path: string, maxLength: number): string {
    if (typeof x !== 'string') bad(path, 'expected a string')
    if (x.length === 0) bad(path, 'empty string')
    if (x.length > maxLength) bad(path, `string of ${x.length} > ${maxLength}`)
    return x
  }

  peer (x: unknown, path: string): PeerId {
    return this.str(x, path, this.limits.maxPeerIdLength)
  }

  /** A collective or stream id, or a reduction operator name. */
  id (x: unknown, path: string): string {
    return this.str(x, path, this.limits.maxIdLength)
  }

  oneOf<T extends string> (x: unknown, path: string, values: readonly T[]): T {
    const found = values.find((v) => v === x)
    return found ?? bad(path, `expected one of ${values.join('|')}`)
  }

  bytes (x: unknown, path: string): Uint8Array {
    return x instanceof Uint8Array ? x : bad(path, 'expected a byte string')
  }

  /** An interval set in its compact encoding; an undecodable one is `malformed`. */
  set (x: unknown, path: string): IntervalSet {
    const b = this.bytes(x, path)
    try {
      return IntervalSet.decode(b, { maxRanges: this.limits.maxRanges, universe: this.limits.vnodeUniverse })
    } catch (err) {
      throw new WireError('malformed', `${path}: ${err instanceof Error ? err.message : 'bad interval set'}`, { cause: err })
    }
  }

  /** Raw little-endian float64s, copied into a fresh, aligned array. */
  float64s (x: unknown, path: string): Float64Array {
    const b = this.bytes(x, path)
    if (b.byteLength % 8 !== 0) bad(path, `float64 bytes of length ${b.byteLength}, not a multiple of 8`)
    return float64FromBytes(b)
  }

  record (x: unknown, path: string): OwnershipRecord {
    const t = Array.isArray(x) && x.length === 4 ? this.tuple(x, path, 4) : this.tuple(x, path, 3)
    const [ranges, owner, version, incarnation] = t
    const rec = { ranges: this.set(ranges, `${path}.ranges`), owner: this.peer(owner, `${path}.owner`), version: this.int(version, `${path}.version`) }
    return t.length === 4 ? { ...rec, ownerIncarnation: this.int(incarnation, `${path}.ownerIncarnation`) } : rec
  }

  delivered (x: unknown, path: string): DeliveredState {
    const [streamId, vnodes] = this.tuple(x, path, 2)
    return { streamId: this.id(streamId, `${path}.streamId`), vnodes: this.set(vnodes, `${path}.vnodes`) }
  }

  member (x: unknown, path: string): MemberFact {
    const [peer, incarnation, status] = this.tuple(x, path, 3)
    return {
      peer: this.peer(peer, `${path}.peer`),
      incarnation: this.int(incarnation, `${path}.incarnation`),
      status: this.oneOf(status, `${path}.status`, MEMBER_STATUSES)
    }
  }

  probeEntry (x: unknown, path: string): ProbeTreeEntry {
    const [root, dist, est, latChildren, bwChildren] = this.tuple(x, path, 5)
    return {
      root: this.peer(root, `${path}.root`),
      dist: this.metric(dist, `${path}.dist`),
      est: this.metric(est, `${path}.est`),
      latChildren: this.int(latChildren, `${path}.latChildren`),
      bwChildren: this.int(bwChildren, `${path}.bwChildren`)
    }
  }

  nearHint (x: unknown, path: string): NearHint {
    const [peer, rttMs] = this.tuple(x, path, 2)
    const rtt = this.num(rttMs, `${path}.rttMs`)
    if (rtt < 0) bad(`${path}.rttMs`, `${rtt} < 0`)
    return { peer: this.peer(peer, `${path}.peer`), rttMs: rtt }
  }

  /** Largest array length a single partial value (one segment) can carry under `maxMessageBytes`. */
  get maxPartialLength (): number {
    return Math.floor(this.limits.maxMessageBytes / 8)
  }

  /** Most elements of a whole reduced array. */
  get maxReduceLength (): number {
    return this.limits.maxReduceLength
  }

  treeOp (x: unknown, path: string): TreeOp {
    const o = this.map(x, path)
    const op = own(o, 'op')
    const kind = this.oneOf(own(o, 'kind'), `${path}.kind`, TREE_KINDS)
    const root = this.peer(own(o, 'root'), `${path}.root`)
    const readPath = (): PeerId[] => this.list(own(o, 'path'), `${path}.path`, (y, p) => this.peer(y, p))
    switch (op) {
      case 'check': {
        const check = {
          op, kind, root,
          id: this.int(own(o, 'id'), `${path}.id`, Number.MIN_SAFE_INTEGER),
          origin: this.peer(own(o, 'origin'), `${path}.origin`),
          dist: this.nonNegative(own(o, 'dist'), `${path}.dist`),
          path: readPath()
        }
        const short = own(o, 'short')
        if (short === undefined) return check
        if (short !== true) bad(`${path}.short`, 'expected true when present')
        return { ...check, short: true }
      }
      case 'result':
        return {
          op, kind, root,
          id: this.int(own(o, 'id'), `${path}.id`, Number.MIN_SAFE_INTEGER),
          ok: this.bool(own(o, 'ok'), `${path}.ok`),
          dist: this.nonNegative(own(o, 'dist'), `${path}.dist`),
          path: readPath()
        }
      case 'adopt': {
        const bw = this.num(own(o, 'bw'), `${path}.bw`)
        if (bw < 0) throw new WireError('bad-field', `${path}.bw: must be >= 0`)
        return this.withEntries(o, path, { op, kind, root, reach: this.set(own(o, 'reach'), `${path}.reach`), bw })
      }
      case 'reach':
        return this.withEntries(o, path, { op, kind, root, reach: this.set(own(o, 'reach'), `${path}.reach`) })
      case 'detach':
      case 'disown':
        return { op, kind, root }
      case 'unlock':
        return {
          op, kind, root,
          id: this.int(own(o, 'id'), `${path}.id`, Number.MIN_SAFE_INTEGER),
          origin: this.peer(own(o, 'origin'), `${path}.origin`)
        }
      case 'metric':
        return own(o, 'depth') === undefined
          ? { op, kind, root, value: this.nonNegative(own(o, 'value'), `${path}.value`) }
          : { op, kind, root, value: this.nonNegative(own(o, 'value'), `${path}.value`), depth: this.int(own(o, 'depth'), `${path}.depth`) }
      default:
        return bad(`${path}.op`, 'unknown tree operation')
    }
  }

  /** An `adopt` or `reach` op with its optional cluster entries. */
  private withEntries<T extends { op: 'adopt' | 'reach' }> (o: Obj, path: string, op: T): T | T & { entries: readonly TreeEntry[] } {
    const entries = this.entries(o, `${path}.entries`)
    return entries.length === 0 ? op : { ...op, entries }
  }

  /** The optional cluster entries of `o` (at most MAX_TREE_ENTRIES; none when absent). */
  entries (o: Obj, path: string): readonly TreeEntry[] {
    return readEntries(this, own(o, 'entries'), path)
  }

  reduceStart (x: unknown, path: string): ReduceStart {
    const o = this.map(x, path)
    const start: ReduceStart = {
      op: this.id(own(o, 'op'), `${path}.op`),
      rootVnode: this.int(own(o, 'rootVnode'), `${path}.rootVnode`, 0, this.limits.vnodeUniverse - 1),
      length: this.int(own(o, 'length'), `${path}.length`, 0, this.maxReduceLength)
    }
    const segment = own(o, 'segment')
    // Unsegmented, the whole array is one partial; segmented, each segment is.
    if (segment === undefined) {
      if (start.length > this.maxPartialLength) bad(`${path}.length`, `${start.length} elements do not fit one frame unsegmented (at most ${this.maxPartialLength})`)
      return start
    }
    return { ...start, segment: this.segment(segment, start.length, `${path}.segment`) }
  }

  /** A stream open: `[id, origin, mode, header, chunkCount, totalBytes, fallback, hops, extras?]` (overlay/codec.ts `openWire`). */
  streamOpen (x: unknown, path: string): StreamOpen {
    if (!Array.isArray(x) || (x.length !== 8 && x.length !== 9)) return bad(path, 'expected an array of 8 or 9')
    const origin = this.peer(x[1], `${path}.origin`)
    const open: { -readonly [K in keyof StreamOpen]: StreamOpen[K] } = {
      id: this.streamId(x[0], origin, `${path}.id`),
      origin,
      mode: this.oneOf(x[2], `${path}.mode`, STREAM_MODES),
      header: this.set(x[3], `${path}.header`),
      chunkCount: this.int(x[4], `${path}.chunkCount`, 1),
      totalBytes: this.int(x[5], `${path}.totalBytes`),
      fallback: this.bool(x[6], `${path}.fallback`),
      hops: this.int(x[7], `${path}.hops`)
    }
    if (x.length === 8) return open
    const o = this.map(x[8], `${path}.extras`)
    const tree = own(o, 'tree')
    if (tree !== undefined) open.tree = this.peer(tree, `${path}.tree`)
    const reduce = own(o, 'reduce')
    const combine = own(o, 'combine')
    if (combine !== undefined && reduce === undefined) bad(`${path}.combine`, 'only on a reduction start')
    const withReduce = reduce === undefined ? open : { ...open, reduce: this.reduceStart(reduce, `${path}.reduce`) }
    const withCombine = combine === undefined ? withReduce : { ...withReduce, combine: this.combinePlan(combine, `${path}.combine`) }
    return this.withStripes(o, path, withCombine)
  }

  /** A stream id: a string, or `[rest]` for `${origin}/rest`; the whole id is bounded by `maxIdLength`. */
  private streamId (x: unknown, origin: string, path: string): string {
    if (!Array.isArray(x)) return this.id(x, path)
    const [rest] = this.tuple(x, path, 1)
    return this.id(`${origin}/${this.str(rest, path, this.limits.maxIdLength)}`, path)
  }

  /** A striped broadcast's fields (overlay/stripes.ts); their consistency is the stream engine's to judge. */
  private withStripes (o: Obj, path: string, open: StreamOpen): StreamOpen {
    const stripes = own(o, 'stripes')
    const stripe = own(o, 'stripe')
    const relay = own(o, 'relay')
    if (stripes === undefined && stripe === undefined && relay === undefined) return open
    const n = this.int(stripes, `${path}.stripes`, 2, MAX_STRIPES)
    const out: { -readonly [K in keyof StreamOpen]: StreamOpen[K] } = { ...open, stripes: n }
    if (stripe !== undefined) out.stripe = this.int(stripe, `${path}.stripe`, 0, n - 1)
    if (relay !== undefined) out.relay = readRelays(this, relay, `${path}.relay`)
    return out
  }

  /** A collective reduction's `[length]` or `[length, segment]`: the same limits as a start's. */
  collectiveShape (x: unknown, path: string): CollectiveShape {
    if (!Array.isArray(x) || x.length < 1 || x.length > 2) return bad(path, 'expected [length] or [length, segment]')
    const length = this.int(x[0], `${path}[0]`, 1, this.maxReduceLength)
    if (x.length === 1) {
      if (length > this.maxPartialLength) bad(`${path}[0]`, `${length} elements do not fit one frame unsegmented (at most ${this.maxPartialLength})`)
      return { length }
    }
    return { length, segment: this.segment(x[1], length, `${path}[1]`) }
  }

  /** Elements per segment of a `length`-element array: one frame at most, and at most MAX_REDUCE_SEGMENTS segments. */
  segment (x: unknown, length: number, path: string): number {
    const size = this.int(x, path, 1, this.maxPartialLength)
    if (Math.ceil(length / size) > MAX_REDUCE_SEGMENTS) bad(path, `${length} elements in segments of ${size} are more than ${MAX_REDUCE_SEGMENTS} segments`)
    return size
  }

  combinePlan (x: unknown, path: string): CombinePlan {
    const o = this.map(x, path)
    const extra = this.set(own(o, 'extra'), `${path}.extra`)
    const to = own(o, 'to')
    return to === undefined ? { extra } : { to: this.peer(to, `${path}.to`), extra }
  }
}

/** The reduction a partial or a pull belongs to. */
function reduction (o: Obj, f: Fields): { id: string, root: PeerId, op: string } {
  const id = f.id(own(o, 'id'), 'id')
  // A collective reduction's id never has a '/' (overlay/collective.ts): those are stream
  // ids, and a pull claiming a broadcast's id would mark its virtual nodes delivered.
  if (own(o, 'coll') !== undefined && id.includes('/')) bad('id', "a collective reduction's id has no '/'")
  return { id, root: f.peer(own(o, 'root'), 'root'), op: f.id(own(o, 'op'), 'op') }
}

/** Per message type: reads the fields of an already version- and type-checked map. */
type Reader = (o: Obj, f: Fields) => Message

const nonce = (o: Obj, f: Fields): number => f.int(own(o, 'nonce'), 'nonce', Number.MIN_SAFE_INTEGER)

const READERS: { readonly [T in MessageType]: Reader } = {
  join: (o, f) => {
    const want = own(o, 'want')
    const of = own(o, 'of')
    const incarnation = f.int(own(o, 'incarnation'), 'incarnation')
    return { t: 'join', incarnation, ...(want === undefined ? {} : { want: f.set(want, 'want') }), ...(of === undefined ? {} : { of: f.int(of, 'of', 1, f.limits.vnodeUniverse) }) }
  },
  facts: (o, f) => {
    const msg = {
      t: 'facts' as const,
      vnodeCount: f.int(own(o, 'vnodeCount'), 'vnodeCount', 0, f.limits.vnodeUniverse),
      members: f.list(own(o, 'members'), 'members', (x, p) => f.member(x, p)),
      records: f.list(own(o, 'records'), 'records', (x, p) => f.record(x, p)),
      welcome: f.bool(own(o, 'welcome'), 'welcome')
    }
    const claim = own(o, 'claim')
    return claim === undefined ? msg : { ...msg, claim: f.bool(claim, 'claim') }
  },
  'join-elsewhere': (o, f) => ({ t: 'join-elsewhere', to: f.peer(own(o, 'to'), 'to') }),
  give: (o, f) => {
    const msg = { t: 'give' as const, to: f.peer(own(o, 'to'), 'to'), ranges: f.set(own(o, 'ranges'), 'ranges') }
    const share = own(o, 'share')
    if (share !== undefined && share !== true) bad('share', 'expected true when present')
    return share === true ? { ...msg, share: true as const } : msg
  },
  handoff: (o, f) => {
    const msg = {
      t: 'handoff' as const,
      record: f.record(own(o, 'record'), 'record'),
      delivered: f.list(own(o, 'delivered'), 'delivered', (x, p) => f.delivered(x, p))
    }
    const lost = own(o, 'lost')
    if (lost !== undefined && lost !== true) bad('lost', 'expected true when present')
    return lost === true ? { ...msg, lost: true as const } : msg
  },
  'handoff-ack': (o, f) => ({ t: 'handoff-ack', version: f.int(own(o, 'version'), 'version'), ranges: f.set(own(o, 'ranges'), 'ranges') }),
  'claim-ack': (o, f) => ({ t: 'claim-ack', version: f.int(own(o, 'version'), 'version'), ranges: f.set(own(o, 'ranges'), 'ranges') }),
  ping: (o, f) => ({ t: 'ping', nonce: nonce(o, f) }),
  pong: (o, f) => ({ t: 'pong', nonce: nonce(o, f) }),
  'probe-req': (o, f) => {
    const msg = { t: 'probe-req' as const, nonce: nonce(o, f) }
    const light = own(o, 'light')
    if (light !== undefined && light !== true) bad('light', 'expected true when present')
    return light === true ? { ...msg, light: true as const } : msg
  },
  sync: () => ({ t: 'sync' }),
  offer: () => ({ t: 'offer' }),
  'probe-rep': (o, f) => {
    const msg = {
      t: 'probe-rep' as const,
      nonce: nonce(o, f),
      trees: f.list(own(o, 'trees'), 'trees', (x, p) => f.probeEntry(x, p)),
      padding: f.bytes(own(o, 'padding'), 'padding').byteLength
    }
    // Bandwidth-tree depths beside the entries (trees/depth-tie.ts), one per entry: -1 when not connected.
    const depths = own(o, 'depths') === undefined ? undefined : f.list(own(o, 'depths'), 'depths', (x, p) => f.int(x, p, -1))
    if (depths !== undefined && depths.length !== msg.trees.length) bad('depths', `${depths.length} depths for ${msg.trees.length} trees`)
    if (depths !== undefined) msg.trees = msg.trees.map((e, i) => ({ ...e, bwDepth: depths[i] as number }))
    const near = own(o, 'near')
    if (near === undefined) return msg
    if (Array.isArray(near) && near.length > MAX_NEAR_HINTS) throw new WireError('limit', `near: ${near.length} hints > ${MAX_NEAR_HINTS}`)
    return { ...msg, near: f.list(near, 'near', (x, p) => f.nearHint(x, p)) }
  },
  tree: (o, f) => ({ t: 'tree', ops: f.list(own(o, 'ops'), 'ops', (x, p) => f.treeOp(x, p)) }),
  chunk: (o, f) => {
    const stream = f.int(own(o, 'stream'), 'stream')
    const index = f.int(own(o, 'index'), 'index')
    const data = f.bytes(own(o, 'data'), 'data')
    const rawOpen = own(o, 'open')
    if (rawOpen === undefined) return { t: 'chunk', stream, index, data }
    const open = f.streamOpen(rawOpen, 'open')
    if (index >= open.chunkCount) bad('index', `chunk index ${index} >= chunkCount ${open.chunkCount}`)
    return { t: 'chunk', stream, index, data, open }
  },
  ack: (o, f) => {
    const stream = f.int(own(o, 'stream'), 'stream')
    const away = own(o, 'away')
    if (away === undefined) return { t: 'ack', stream }
    if (away !== true) bad('away', 'expected true when present')
    return { t: 'ack', stream, away: true }
  },
  hold: (o, f) => ({ t: 'hold', stream: f.int(own(o, 'stream'), 'stream'), ageMs: f.int(own(o, 'ageMs'), 'ageMs') }),
  partial: (o, f) => {
    const msg: PartialMessage = {
      t: 'partial',
      ...reduction(o, f),
      covered: f.set(own(o, 'covered'), 'covered'),
      value: f.float64s(own(o, 'value'), 'value')
    }
    const seg = own(o, 'seg')
    const withSeg = seg === undefined ? msg : { ...msg, seg: f.int(seg, 'seg', 0, f.maxReduceLength) }
    const coll = own(o, 'coll')
    return coll === undefined ? withSeg : { ...withSeg, coll: f.collectiveShape(coll, 'coll') }
  },
  pull: (o, f) => {
    const base: PullMessage = {
      t: 'pull',
      ...reduction(o, f),
      length: f.int(own(o, 'length'), 'length', 0, f.maxReduceLength),
      want: f.set(own(o, 'want'), 'want'),
      hops: f.int(own(o, 'hops'), 'hops')
    }
    const coll = own(o, 'coll')
    if (coll !== undefined && coll !== true) bad('coll', 'expected true when present')
    const msg: PullMessage = coll === true ? { ...base, coll: true } : base
    const seg = own(o, 'seg')
    const segment = own(o, 'segment')
    if (seg === undefined && segment === undefined) {
      // Answered by one partial holding the whole array: it must fit one frame.
      if (msg.length > f.maxPartialLength) bad('length', `${msg.length} elements do not fit one frame unsegmented (at most ${f.maxPartialLength})`)
      return msg
    }
    const size = f.segment(segment, msg.length, 'segment')
    // The segment must exist: k * segment < length.
    return { ...msg, seg: f.int(seg, 'seg', 0, Math.max(0, Math.ceil(msg.length / size) - 1)), segment: size }
  },
  'reduce-ack': (o, f) => ({ t: 'reduce-ack', id: f.id(own(o, 'id'), 'id'), root: f.peer(own(o, 'root'), 'root'), part: f.set(own(o, 'part'), 'part') }),
  resend: (o, f) => ({ t: 'resend', id: f.id(own(o, 'id'), 'id') }),
  'entries-req': (o, f) => ({ t: 'entries-req', id: f.id(own(o, 'id'), 'id') }),
  'entries-rep': (o, f) => ({ t: 'entries-rep', id: f.id(own(o, 'id'), 'id'), entries: f.entries(o, 'entries') })
}

/**
 * Validates a decoded CBOR value as a message: a map with `v === WIRE_VERSION`, a known
 * `t`, and valid fields for that type. Unknown extra keys are ignored. Throws
 * {@link WireError} on anything else.
 */
export function validateMessage (value: unknown, limits: ResolvedLimits): Message {
  if (!isMap(value)) throw new WireError('malformed', 'top level is not a map')
  const v = own(value, 'v')
  if (v !== WIRE_VERSION) throw new WireError('version', `wire version ${typeof v === 'number' ? v : typeof v}, expected ${WIRE_VERSION}`)
  const t = own(value, 't')
  if (typeof t !== 'string' || !Object.hasOwn(READERS, t)) {
    throw new WireError('unknown-type', typeof t === 'string' ? `unknown message type ${JSON.stringify(t.slice(0, 64))}` : 'missing message type')
  }
  return READERS[t as MessageType](value, new Fields(limits))
}
