/**
 * Options of the wide-area link emulator and their validation. Everything is resolved once,
 * at construction, into cluster×cluster tables: a bad value fails early and by name.
 */
import { InvalidWanConfigError } from './errors.ts'

/**
 * Default backlog per connection and direction: this much time at the link's rate, within
 * the bounds below. Enough to keep the link busy while the sender reacts to 'drain', small
 * enough that a connection's own queue adds little latency (bufferbloat) to its messages.
 */
export const DEFAULT_BACKLOG_MS = 50
/** Lower bound of the default backlog. */
export const MIN_DEFAULT_BACKLOG_BYTES = 64 * 1024
/** Upper bound of the default backlog (and the default on uncapped links). */
export const MAX_DEFAULT_BACKLOG_BYTES = 1024 * 1024
/** Bytes of a connection's data on the wire (sent, not delivered) above which the sender waits. */
export const DEFAULT_MAX_IN_FLIGHT_BYTES = 16 * 1024 * 1024
/** Share of wall-clock time spent polling the clock so that data is delivered on time. */
export const DEFAULT_POLL_BUDGET_SHARE = 0.1
/**
 * Round-robin unit between connections sharing a link. A message waits at most one quantum
 * per other busy connection: 4 ms at 4 MB/s, 1.3 ms at 12.5 MB/s.
 */
export const DEFAULT_ROUND_ROBIN_QUANTUM_BYTES = 16 * 1024

/**
 * A value per ordered cluster pair `(from, to)`:
 * - one number for every pair;
 * - a function of the two cluster names (called once per ordered pair, at construction);
 * - a matrix by cluster names, `m[from][to]`; when `m[from][to]` is missing, `m[to][from]`
 *   is used, so giving one direction of an unordered pair is enough.
 */
export type ClusterPairValue =
  | number
  | ((from: string, to: string) => number)
  | Readonly<Record<string, Readonly<Record<string, number>>>>

/** Options of a {@link WanEmulator}. Units come last in the names. */
export interface WanEmulatorInit {
  /**
   * Names of the clusters (sites, LANs): non-empty, unique, at least one. Peers are put in a
   * cluster with `emulator.assign(peerId, name)`; peers never assigned are not shaped.
   */
  clusters: readonly string[]
  /**
   * One-way propagation delay between two different clusters, in ms, per ordered pair
   * (so asymmetric routes are possible). Each value must be finite and >= 0.
   * @default 0
   */
  interDelayMs?: ClusterPairValue
  /**
   * One-way delay between two peers of the same cluster, in ms: one value, or a record by
   * cluster name (clusters left out get 0). 0 leaves intra-cluster connections unshaped; there is never a rate cap inside a
   * cluster.
   * @default 0
   */
  intraDelayMs?: number | Readonly<Record<string, number>>
  /**
   * Capacity of the one wide-area link from one cluster to another, in bytes/s, per ordered
   * pair; every connection crossing that link in that direction shares it. Values must be
   * > 0; `Infinity` means uncapped.
   * @default Infinity
   */
  wanRateBytesPerSec?: ClusterPairValue
  /**
   * Delay the TCP connect of a shaped connection by one RTT of the pair (SYN, SYN-ACK)
   * before the upgrader sees it.
   * @default true
   */
  connectDelay?: boolean
  /**
   * Per connection and direction: bytes waiting for the link above which the connection's
   * `send()` returns false; it emits 'drain' once the backlog is back to half. This keeps
   * memory bounded and plays the role of the socket send buffer: a message queues behind
   * its own connection's backlog, so a large value adds latency under load. Must be > 0.
   * @default 50 ms at the link's rate, clamped to 64 KiB .. 1 MiB (1 MiB when uncapped)
   */
  backlogHighWaterBytes?: number
  /**
   * Per connection and direction: bytes on the wire (left the link's queue, not yet
   * delivered) above which the sender waits. With a rate cap the wire holds at most
   * rate × delay anyway; this bounds memory on uncapped links with a delay. Must be > 0.
   * @default 16777216
   */
  maxInFlightBytes?: number
  /**
   * Round-robin unit between the connections sharing a link, in bytes: the link sends this
   * much of one connection's backlog, then moves to the next connection that has data.
   * `Infinity` makes the link a single FIFO in arrival order per connection turn. Must be > 0.
   * @default 16384
   */
  roundRobinQuantumBytes?: number
  /**
   * Share of wall-clock time (0..1) the emulator may spend polling the clock with
   * `setImmediate` to deliver data within ~0.1 ms of its due time; beyond it, or with 0,
   * deliveries rely on timers alone and arrive 0.5 to 1.5 ms late (about 1 ms more per RTT)
   * but no CPU is spent waiting. Lower it when many processes share few cores.
   * @default 0.1
   */
  pollBudgetShare?: number
}

/** A validated {@link WanEmulatorInit}, resolved to tables indexed by cluster number. */
export interface ResolvedWanConfig {
  readonly clusters: readonly string[]
  /** `delayMs[i][j]`: one-way delay from cluster i to j; the diagonal is the intra delay. */
  readonly delayMs: readonly (readonly number[])[]
  /** `rateBytesPerSec[i][j]`: link rate from cluster i to j; the diagonal is `Infinity`. */
  readonly rateBytesPerSec: readonly (readonly number[])[]
  readonly connectDelay: boolean
  /** undefined: {@link defaultBacklogBytes} of each link's rate */
  readonly backlogHighWaterBytes: number | undefined
  readonly maxInFlightBytes: number
  readonly roundRobinQuantumBytes: number
  readonly pollBudgetShare: number
}

/** The default backlog of a link of `rateBytesPerSec` (see `backlogHighWaterBytes`). */
export function defaultBacklogBytes(rateBytesPerSec: number): number {
  const bytes = rateBytesPerSec * DEFAULT_BACKLOG_MS / 1000
  return Math.min(MAX_DEFAULT_BACKLOG_BYTES, Math.max(MIN_DEFAULT_BACKLOG_BYTES, Math.round(bytes)))
}

function fail(message: string): never {
  throw new InvalidWanConfigError(message)
}

type Bound = 'zero' | 'positive'

function check(field: string, v: unknown, min: Bound, allowInfinity: boolean): number {
  const isNumber = typeof v === 'number' && !Number.isNaN(v) && (allowInfinity ? v !== -Infinity : Number.isFinite(v))
  if (!isNumber || (min === 'zero' ? v < 0 : v <= 0)) {
    const range = `${min === 'zero' ? '>= 0' : '> 0'}${allowInfinity ? ' (Infinity allowed)' : ''}`
    fail(`${field} must be a ${allowInfinity ? '' : 'finite '}number ${range}, got ${String(v)}`)
  }
  return v
}

function checkShare(v: unknown): number {
  const share = check('pollBudgetShare', v, 'zero', false)
  if (share > 1) fail(`pollBudgetShare must be at most 1, got ${share}`)
  return share
}

function resolveClusters(v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0) fail('clusters must be a non-empty array of names')
  const seen = new Set<string>()
  for (const [i, name] of v.entries()) {
    if (typeof name !== 'string' || name === '') fail(`clusters[${i}] must be a non-empty string`)
    if (seen.has(name)) fail(`clusters[${i}] '${name}' is not unique`)
    seen.add(name)
  }
  return [...seen]
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function checkKeys(field: string, record: Record<string, unknown>, known: ReadonlySet<string>): void {
  for (const key of Object.keys(record)) {
    if (!known.has(key)) fail(`${field} names an unknown cluster '${key}'`)
  }
}

/** Resolves a {@link ClusterPairValue} for every ordered pair of distinct clusters. */
function resolvePairs(field: string, v: unknown, clusters: readonly string[], min: Bound, allowInfinity: boolean): number[][] {
  const known = new Set(clusters)
  let at: (from: string, to: string) => unknown
  if (typeof v === 'number') {
    check(field, v, min, allowInfinity)
    at = () => v
  } else if (typeof v === 'function') {
    at = (from, to) => (v as (from: string, to: string) => unknown)(from, to)
  } else if (isRecord(v)) {
    checkKeys(field, v, known)
    for (const [from, row] of Object.entries(v)) {
      if (!isRecord(row)) fail(`${field}['${from}'] must be an object keyed by cluster name`)
      checkKeys(`${field}['${from}']`, row, known)
    }
    const cell = (from: string, to: string): unknown => (v[from] as Record<string, unknown> | undefined)?.[to]
    at = (from, to) => {
      const x = cell(from, to) ?? cell(to, from)
      if (x === undefined) fail(`${field} has no entry for '${from}' -> '${to}' (nor '${to}' -> '${from}')`)
      return x
    }
  } else {
    fail(`${field} must be a number, a function (from, to) or a matrix by cluster names`)
  }
  return clusters.map(from => clusters.map(to => from === to
    ? NaN
    : check(`${field}['${from}']['${to}']`, at(from, to), min, allowInfinity)))
}

function resolveIntra(v: unknown, clusters: readonly string[]): number[] {
  if (typeof v === 'number') return clusters.map(() => check('intraDelayMs', v, 'zero', false))
  if (!isRecord(v)) fail('intraDelayMs must be a number or a record by cluster name')
  checkKeys('intraDelayMs', v, new Set(clusters))
  return clusters.map(c => check(`intraDelayMs['${c}']`, v[c] ?? 0, 'zero', false))
}

/**
 * Validates `init` and resolves it to per-cluster tables. Throws
 * {@link InvalidWanConfigError} naming the bad field.
 */
export function resolveWanConfig(init: WanEmulatorInit): ResolvedWanConfig {
  if (!isRecord(init)) fail('init must be an object')
  const clusters = resolveClusters(init.clusters)
  const intra = resolveIntra(init.intraDelayMs ?? 0, clusters)
  const inter = resolvePairs('interDelayMs', init.interDelayMs ?? 0, clusters, 'zero', false)
  const rates = resolvePairs('wanRateBytesPerSec', init.wanRateBytesPerSec ?? Infinity, clusters, 'positive', true)
  if (init.connectDelay !== undefined && typeof init.connectDelay !== 'boolean') fail('connectDelay must be a boolean')
  return {
    clusters,
    delayMs: inter.map((row, i) => row.map((x, j) => i === j ? intra[i] as number : x)),
    rateBytesPerSec: rates.map((row, i) => row.map((x, j) => i === j ? Infinity : x)),
    connectDelay: init.connectDelay ?? true,
    backlogHighWaterBytes: init.backlogHighWaterBytes === undefined
      ? undefined
      : check('backlogHighWaterBytes', init.backlogHighWaterBytes, 'positive', false),
    maxInFlightBytes: check('maxInFlightBytes', init.maxInFlightBytes ?? DEFAULT_MAX_IN_FLIGHT_BYTES, 'positive', false),
    roundRobinQuantumBytes: check('roundRobinQuantumBytes', init.roundRobinQuantumBytes ?? DEFAULT_ROUND_ROBIN_QUANTUM_BYTES, 'positive', true),
    pollBudgetShare: checkShare(init.pollBudgetShare ?? DEFAULT_POLL_BUDGET_SHARE)
  }
}
