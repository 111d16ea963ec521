/**
 * The daemon's configuration: a JSON or TOML file, TREECAST_* environment variables and command-line
 * flags, in that order of increasing precedence over the defaults. Every value is validated
 * before anything starts; a bad one throws a {@link ConfigError} naming the field (the CLI
 * prints it and exits with code 2).
 */
import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { isAbsolute, resolve } from 'node:path'
import { multiaddr } from '@multiformats/multiaddr'
import { parse as parseToml } from 'smol-toml'
import { resolveCoreConfig, type CoreInit } from '../../overlay/config.ts'
import { DEFAULT_NODE_NET, resolveNodeConfig, type NodeNetInit } from '../config.ts'
import { unknownKey } from '../../overlay/unknown-keys.ts'
import { DEFAULT_CODEC_LIMITS } from '../../overlay/codec.ts'
import { IntervalSet } from '../../virtual-nodes/interval-set.ts'

/** A bad configuration value; `field` is the config key (as in the file). */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
  constructor (readonly field: string, why: string) { super(`${field}: ${why}`) }
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'
/** Log lines as `time level msg key=value` text or JSON lines. */
export type LogFormat = 'text' | 'json'
/** What this peer contributes to a reduction, per owned virtual node and element. */
export type Contribution = 'ones' | 'vnode' | 'zeros'

/** The resolved configuration of one daemon. */
export interface DaemonConfig {
  /** Addresses to listen on; the first TCP/IPv4 one (or the first announce one) is the overlay id. */
  listen: string[]
  /** Addresses to announce instead (NAT, port mapping, wildcard listen). */
  announce: string[]
  /** Members to join through, tried in order; empty: found a new overlay. */
  join: string[]
  /** Virtual nodes of a new overlay. */
  vnodes: number
  /** Virtual nodes to ask for on join ("0-99,200-299", inclusive); overrides the ranges saved in state.json. */
  want: string | undefined
  /** Where peer.key, state.json and api.json live. */
  dataDir: string
  /** host:port of the control API (port 0: any; the actual one is written to api.json). */
  apiListen: string
  logLevel: LogLevel
  logFormat: LogFormat
  /** A libp2p pnet swarm key file (private network). */
  pskFile: string | undefined
  /** This peer's contribution to reductions. */
  contribute: Contribution
  /** Append one JSON line per delivery to this file (synchronously, before anything else sees it). */
  deliveryLog: string | undefined
  /** Do not ask for the ranges saved in state.json on start. */
  fresh: boolean
  /** Longest graceful shutdown (leave + stop) before exiting anyway. */
  shutdownTimeoutMs: number
  /** How long one join attempt waits for its contact. */
  joinTimeoutMs: number
  /** Protocol options (overlay/config.ts). The convenience fields below are folded in. */
  core: CoreInit
  /** Transport options (node/config.ts). */
  net: NodeNetInit
}

/** Convenience fields mapped into `core` or `net`. */
const CORE_FIELDS = ['probeTimeoutMs', 'steadyProbeIntervalMs', 'leaveTimeoutMs', 'maxPayloadBytes', 'reduceMaxDurationMs'] as const
const NET_FIELDS = ['failureDetectionTimeoutMs', 'heartbeatIntervalMs', 'dialTimeoutMs', 'dialAttempts', 'maxPeers'] as const

type Kind = 'string' | 'list' | 'int' | 'bool' | 'level' | 'format' | 'contribute'
interface FieldSpec { key: string, env: string, kind: Kind }

/** Every top-level field, its environment variable and its type. */
export const FIELDS: readonly FieldSpec[] = [
  { key: 'listen', env: 'TREECAST_LISTEN', kind: 'list' },
  { key: 'announce', env: 'TREECAST_ANNOUNCE', kind: 'list' },
  { key: 'join', env: 'TREECAST_JOIN', kind: 'list' },
  { key: 'vnodes', env: 'TREECAST_VNODES', kind: 'int' },
  { key: 'want', env: 'TREECAST_WANT', kind: 'string' },
  { key: 'dataDir', env: 'TREECAST_DATA_DIR', kind: 'string' },
  { key: 'apiListen', env: 'TREECAST_API_LISTEN', kind: 'string' },
  { key: 'logLevel', env: 'TREECAST_LOG_LEVEL', kind: 'level' },
  { key: 'logFormat', env: 'TREECAST_LOG_FORMAT', kind: 'format' },
  { key: 'pskFile', env: 'TREECAST_PSK_FILE', kind: 'string' },
  { key: 'contribute', env: 'TREECAST_CONTRIBUTE', kind: 'contribute' },
  { key: 'deliveryLog', env: 'TREECAST_DELIVERY_LOG', kind: 'string' },
  { key: 'fresh', env: 'TREECAST_FRESH', kind: 'bool' },
  { key: 'shutdownTimeoutMs', env: 'TREECAST_SHUTDOWN_TIMEOUT_MS', kind: 'int' },
  { key: 'joinTimeoutMs', env: 'TREECAST_JOIN_TIMEOUT_MS', kind: 'int' },
  ...CORE_FIELDS.map((key) => ({ key, env: envName(key), kind: 'int' as const })),
  ...NET_FIELDS.map((key) => ({ key, env: envName(key), kind: 'int' as const }))
]

/** TREECAST_* variables that are not fields: the config file's path, and the client commands' API address and token. */
const OTHER_ENV = ['TREECAST_CONFIG', 'TREECAST_API', 'TREECAST_TOKEN']

function envName (key: string): string {
  return 'TREECAST_' + key.replace(/[A-Z]/g, (c) => '_' + c).toUpperCase()
}

export const DEFAULTS: Readonly<Omit<DaemonConfig, 'core' | 'net'>> = Object.freeze({
  listen: ['/ip4/0.0.0.0/tcp/4001'],
  announce: [],
  join: [],
  vnodes: 1024,
  want: undefined,
  dataDir: resolve(homedir(), '.treecast'),
  apiListen: '127.0.0.1:0',
  logLevel: 'info',
  logFormat: 'text',
  pskFile: undefined,
  contribute: 'ones',
  deliveryLog: undefined,
  fresh: false,
  shutdownTimeoutMs: 15_000,
  joinTimeoutMs: 30_000
})

type Raw = Record<string, unknown>

/** A value for an error message (JSON, but bigints from TOML too). */
function show (v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => typeof x === 'bigint' ? `${x}` : x) ?? String(v)
}

/** Parses one raw value (from a file: any JSON; from env/flags: a string) into its field's type. */
function coerce (spec: FieldSpec, v: unknown, fromText: boolean): unknown {
  const { key, kind } = spec
  switch (kind) {
    case 'list': {
      if (fromText && typeof v === 'string') return v.split(',').map((s) => s.trim()).filter((s) => s !== '')
      if (Array.isArray(v) && v.every((s) => typeof s === 'string')) return v
      if (typeof v === 'string') return [v]
      throw new ConfigError(key, `must be a list of strings, got ${show(v)}`)
    }
    case 'int': {
      const n = typeof v === 'string' && fromText && v.trim() !== '' ? Number(v) : v
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw new ConfigError(key, `must be a non-negative integer, got ${show(v)}`)
      return n
    }
    case 'bool': {
      if (typeof v === 'boolean') return v
      if (fromText && typeof v === 'string' && /^(1|true|yes|0|false|no)$/i.test(v)) return /^(1|true|yes)$/i.test(v)
      throw new ConfigError(key, `must be a boolean, got ${show(v)}`)
    }
    case 'level':
      if (v === 'debug' || v === 'info' || v === 'warn' || v === 'error') return v
      throw new ConfigError(key, `must be one of debug, info, warn, error; got ${show(v)}`)
    case 'format':
      if (v === 'text' || v === 'json') return v
      throw new ConfigError(key, `must be text or json; got ${show(v)}`)
    case 'contribute':
      if (v === 'ones' || v === 'vnode' || v === 'zeros') return v
      throw new ConfigError(key, `must be one of ones, vnode, zeros; got ${show(v)}`)
    case 'string':
      if (typeof v === 'string') return v
      throw new ConfigError(key, `must be a string, got ${show(v)}`)
  }
}

/**
 * Reads a config file: TOML when the name ends in `.toml`, JSON otherwise. Both hold the
 * same fields (`core` and `net` are a TOML table each). TOML integers arrive as bigint
 * from the parser; safe ones are turned into numbers, others are left for validation to
 * reject with the field's name.
 */
export function readConfigFile (path: string): Raw {
  const toml = /\.toml$/i.test(path)
  let text: string
  try { text = readFileSync(path, 'utf8') } catch (err) { throw new ConfigError('config', `cannot read ${path}: ${(err as Error).message}`) }
  let raw: unknown
  try {
    raw = toml ? parseToml(text, { integersAsBigInt: 'asNeeded', unsafeKeyBehaviour: 'throw', maxDepth: 32 }) : JSON.parse(text)
  } catch (err) {
    throw new ConfigError('config', `${path} is not valid ${toml ? 'TOML' : 'JSON'}: ${(err as Error).message.split('\n')[0] ?? ''}`)
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError('config', `${path} must hold a ${toml ? 'TOML table' : 'JSON object'}`)
  return (toml ? plain(raw) : raw) as Raw
}

/** A TOML document as plain JSON values: dates become ISO strings, unsafe integers stay bigint (rejected by validation). */
function plain (v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain)
  if (v instanceof Date) return v.toISOString()
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]))
  return v
}

/**
 * Merges defaults < file < env < flags and validates. `flags` holds already-typed values
 * from commander (undefined = not given) or strings; `env` is usually process.env.
 */
export function resolveConfig (sources: { file?: Raw, env?: Record<string, string | undefined>, flags?: Raw, cwd?: string }): DaemonConfig {
  const file = sources.file ?? {}
  const env = sources.env ?? {}
  const flags = sources.flags ?? {}
  const known = new Set([...FIELDS.map((f) => f.key), 'core', 'net'])
  for (const k of Object.keys(file)) if (!known.has(k)) throw new ConfigError(k, 'unknown field')
  // As a file's unknown field: a misspelt variable (TREECAST_VNODE) was ignored in silence.
  const knownEnv = new Set([...FIELDS.map((f) => f.env), ...OTHER_ENV])
  for (const k of Object.keys(env)) {
    if (k.startsWith('TREECAST_') && !knownEnv.has(k)) throw new ConfigError(k, 'unknown environment variable (`treecast start --help` lists them)')
  }

  const out: Raw = { ...DEFAULTS }
  const core: CoreInit = { ...objectField(file, 'core') as CoreInit }
  const net: NodeNetInit = { ...objectField(file, 'net') as NodeNetInit }
  for (const spec of FIELDS) {
    let v: unknown
    if (flags[spec.key] !== undefined) v = coerce(spec, flags[spec.key], typeof flags[spec.key] === 'string')
    else if (env[spec.env] !== undefined && env[spec.env] !== '') v = coerce(spec, env[spec.env], true)
    else if (file[spec.key] !== undefined) v = coerce(spec, file[spec.key], false)
    else continue
    if ((CORE_FIELDS as readonly string[]).includes(spec.key)) (core as Raw)[spec.key] = v
    else if ((NET_FIELDS as readonly string[]).includes(spec.key)) (net as Raw)[spec.key] = v
    else out[spec.key] = v
  }
  const cfg = { ...out, core, net } as DaemonConfig
  const cwd = sources.cwd ?? process.cwd()
  cfg.dataDir = absolute(cfg.dataDir, cwd)
  if (cfg.pskFile !== undefined) cfg.pskFile = absolute(cfg.pskFile, cwd)
  if (cfg.deliveryLog !== undefined) cfg.deliveryLog = absolute(cfg.deliveryLog, cwd)
  validate(cfg)
  return cfg
}

function absolute (p: string, cwd: string): string {
  if (p.startsWith('~/')) return resolve(homedir(), p.slice(2))
  return isAbsolute(p) ? p : resolve(cwd, p)
}

function objectField (file: Raw, key: string): Raw {
  const v = file[key]
  if (v === undefined) return {}
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ConfigError(key, 'must be an object')
  return v as Raw
}

/** Parses "0-99,200,300-399" (inclusive ranges) into an interval set. */
export function parseRanges (text: string, field = 'want'): IntervalSet {
  const ranges: Array<[number, number]> = []
  for (const part of text.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part)
    if (m === null) throw new ConfigError(field, `bad range ${JSON.stringify(part)} (expected N or N-M, comma separated)`)
    const a = Number(m[1])
    const b = m[2] === undefined ? a : Number(m[2])
    if (b < a) throw new ConfigError(field, `bad range ${JSON.stringify(part)}: end before start`)
    ranges.push([a, b + 1])
  }
  ranges.sort((x, y) => x[0] - y[0])
  const merged: Array<[number, number]> = []
  for (const r of ranges) {
    const last = merged[merged.length - 1]
    if (last !== undefined && r[0] <= last[1]) last[1] = Math.max(last[1], r[1])
    else merged.push([r[0], r[1]])
  }
  try { return IntervalSet.fromRanges(merged) } catch (err) { throw new ConfigError(field, (err as Error).message) }
}

/** Formats an interval set the way `parseRanges` reads it. */
export function formatRanges (s: IntervalSet): string {
  return s.ranges.map(([a, b]) => b - a === 1 ? `${a}` : `${a}-${b - 1}`).join(',')
}

/** Parses "host:port" (IPv6 as [::1]:port). */
export function parseHostPort (text: string, field = 'apiListen'): { host: string, port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(text)
  if (m === null) throw new ConfigError(field, `must be host:port, got ${JSON.stringify(text)}`)
  const port = Number(m[3])
  if (port > 65535) throw new ConfigError(field, `port out of range: ${port}`)
  return { host: (m[1] ?? m[2]) as string, port }
}

function validate (cfg: DaemonConfig): void {
  if (cfg.listen.length === 0) throw new ConfigError('listen', 'needs at least one address')
  for (const key of ['listen', 'announce', 'join'] as const) {
    for (const a of cfg[key]) {
      try { multiaddr(a) } catch (err) { throw new ConfigError(key, `not a multiaddr: ${JSON.stringify(a)} (${(err as Error).message})`) }
    }
  }
  for (const a of cfg.join) if (!a.includes('/p2p/')) throw new ConfigError('join', `must end in /p2p/<peer id>: ${a}`)
  // Virtual node ids are below 2^31 (virtual-nodes/interval-set.ts): more failed at start, exit 1.
  const maxVnodes = DEFAULT_CODEC_LIMITS.vnodeUniverse
  if (!(cfg.vnodes >= 1 && cfg.vnodes <= maxVnodes)) throw new ConfigError('vnodes', `must be in 1..${maxVnodes} (2^31), got ${cfg.vnodes}`)
  if (cfg.want !== undefined) parseRanges(cfg.want)
  parseHostPort(cfg.apiListen)
  if (cfg.shutdownTimeoutMs < 1) throw new ConfigError('shutdownTimeoutMs', 'must be positive')
  if (cfg.joinTimeoutMs < 1) throw new ConfigError('joinTimeoutMs', 'must be positive')
  if (cfg.pskFile !== undefined) readPsk(cfg.pskFile)
  checkTimes(cfg)
  // The node's own validation, with its field names prefixed.
  const unknownCore = unknownKey(cfg.core, Object.keys(resolveCoreConfig()))
  if (unknownCore !== undefined) throw new ConfigError(`core.${unknownCore}`, 'unknown field')
  try { resolveCoreConfig(cfg.core) } catch (err) { throw new ConfigError(`core.${fieldOf(err)}`, (err as Error).message) }
  const unknownNet = unknownKey(cfg.net, Object.keys(DEFAULT_NODE_NET))
  if (unknownNet !== undefined) throw new ConfigError(`net.${unknownNet}`, 'unknown field')
  try { resolveNodeConfig(cfg.net) } catch (err) { throw new ConfigError(`net.${fieldOf(err)}`, (err as Error).message) }
}

/** Node's longest timer: a longer one fires after 1 ms (with a TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Every time in milliseconds (a field ending in `Ms`, here and in `core` and `net`) fits a
 * Node timer: `shutdownTimeoutMs` 99999999999 made the daemon exit 1 at once ("shutdown
 * took too long"), and such a `joinTimeoutMs` failed every join at once.
 */
function checkTimes (cfg: DaemonConfig): void {
  const fields: Array<[string, unknown]> = [
    ...Object.entries(cfg).filter(([k]) => k !== 'core' && k !== 'net'),
    ...Object.entries(cfg.core).map(([k, v]): [string, unknown] => [`core.${k}`, v]),
    ...Object.entries(cfg.net).map(([k, v]): [string, unknown] => [`net.${k}`, v])
  ]
  for (const [field, v] of fields) {
    if (field.endsWith('Ms') && typeof v === 'number' && v > MAX_TIMER_MS) {
      throw new ConfigError(field, `must be at most ${MAX_TIMER_MS} ms (about 24.8 days, Node's longest timer), got ${v}`)
    }
  }
}

/** The field an InvalidConfigError's message starts with (the node's errors name it first). */
function fieldOf (err: unknown): string {
  const m = /^([A-Za-z]+)/.exec((err as Error).message)
  return m?.[1] ?? '?'
}

/**
 * Reads and checks a swarm key file (`/key/swarm/psk/1.0.0/`, `/base16/`, 64 hex digits,
 * one a line) and returns it in the form libp2p's pnet decodes. Tolerated: a trailing
 * newline (`treecast key generate-psk` writes one), CRLF line ends, spaces around a line.
 * The key is returned rebuilt from the checked lines, not as read: libp2p rejects a key
 * line with a trailing space, which this check accepted, and the daemon then failed to
 * start with libp2p's "Your private shared key is invalid" instead of a config error.
 */
export function readPsk (path: string): Uint8Array {
  let bytes: Buffer
  try { bytes = readFileSync(path) } catch (err) { throw new ConfigError('pskFile', `cannot read ${path}: ${(err as Error).message}`) }
  const lines = bytes.toString('utf8').split(/\r?\n/).map((l) => l.trim())
  const key = lines[2] ?? ''
  if (lines[0] !== '/key/swarm/psk/1.0.0/' || lines[1] !== '/base16/' || !/^[0-9a-fA-F]{64}$/.test(key)) {
    throw new ConfigError('pskFile', `${path} is not a swarm key (expected /key/swarm/psk/1.0.0/, /base16/, 64 hex digits; create one with \`treecast key generate-psk\`)`)
  }
  return new TextEncoder().encode(`/key/swarm/psk/1.0.0/\n/base16/\n${key.toLowerCase()}`)
}
