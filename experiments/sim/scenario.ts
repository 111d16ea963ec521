/**
 * Scenario files: the topology, the number of virtual nodes, the seed and a timed
 * schedule. The format is documented in experiments/README.md; this module validates a
 * parsed JSON value into a Scenario and throws InvalidScenarioError naming the bad field:
 * a field it does not know (a misspelt `peers` would otherwise select every peer), a
 * value of the wrong type, a peer or cluster the topology does not have, a bad topology
 * or core option.
 */
import { resolveCoreConfig, type CoreConfig, type CoreInit } from '../../overlay/config.ts'
import { isTreeRoot } from '../../overlay/tree-roots.ts'
import { BUILTIN_OPS } from '../../overlay/reduce-ops.ts'
import { unknownKey } from '../../overlay/unknown-keys.ts'
import type { TopologyInit } from './network.ts'
import { peerName, resolveTopology, type Topology } from './topology.ts'

/** Which peers an action applies to. */
export interface PeerSelector {
  /** Explicit peer names (`p0000`, `p0017`, ...: peers are numbered cluster by cluster). */
  peers?: string[] | 'left' | 'crashed'
  /** A number of peers chosen at random (seeded) among the eligible ones. */
  count?: number
  /** A fraction of the alive peers, chosen at random. */
  fraction?: number
  /** Restrict the random choice to one cluster (by name). */
  cluster?: string
}

export type Action =
  | { at: number, do: 'broadcast', root?: string, bytes: number, every?: number, count?: number, backToBack?: boolean, until?: number, tree?: 'auto' | 'lat' | 'bw' }
  | { at: number, do: 'reduce', root?: string, op?: string, length?: number, every?: number, count?: number, collective?: boolean }
  | { at: number, do: 'send', from?: string, vnode?: number | 'random', bytes: number, every?: number, count?: number }
  | ({ at: number, do: 'leave' | 'crash' } & PeerSelector)
  | ({ at: number, do: 'join', rejoin?: boolean } & PeerSelector)

/** A whole scenario. */
export interface Scenario {
  name: string
  seed: number
  topology: TopologyInit
  /** Number of virtual nodes. @default the number of starting peers */
  vnodes?: number
  /** Peers started at time 0 (the first N in topology order). @default all */
  initialPeers?: number
  /** Core options for every peer. */
  core?: CoreInit
  /** Delay before peers connected to a crashed peer notice (connection reset / heartbeat). @default 200 */
  crashDetectionMs?: number
  /** End of the schedule, ms of virtual time. */
  until: number
  /** After `until`, keep running (no new actions) until collectives finish, at most this long. @default 30000 */
  drainMs?: number
  /** Encode and decode every message through the wire codec (slower; checks the codec). @default false */
  wireCheck?: boolean
  schedule: Action[]
}

/** A scenario file is wrong. */
export class InvalidScenarioError extends Error {
  override name = 'InvalidScenarioError'
}

/** Every top-level field of a scenario (the type checker keeps the list complete). */
const SCENARIO_FIELDS = fieldsOf({ name: true, seed: true, topology: true, vnodes: true, initialPeers: true, core: true, crashDetectionMs: true, until: true, drainMs: true, wireCheck: true, schedule: true } satisfies Record<keyof Scenario, true>)

const SELECTOR = ['peers', 'count', 'fraction', 'cluster'] as const
/** The fields each kind of action takes, `at` and `do` aside. */
const ACTION_FIELDS: Readonly<Record<Action['do'], ReadonlySet<string>>> = {
  broadcast: fieldsOf({ at: true, do: true, root: true, bytes: true, every: true, count: true, backToBack: true, until: true, tree: true } satisfies Record<keyof Extract<Action, { do: 'broadcast' }>, true>),
  reduce: fieldsOf({ at: true, do: true, root: true, op: true, length: true, every: true, count: true, collective: true } satisfies Record<keyof Extract<Action, { do: 'reduce' }>, true>),
  send: fieldsOf({ at: true, do: true, from: true, vnode: true, bytes: true, every: true, count: true } satisfies Record<keyof Extract<Action, { do: 'send' }>, true>),
  leave: new Set(['at', 'do', ...SELECTOR]),
  crash: new Set(['at', 'do', ...SELECTOR]),
  join: new Set(['at', 'do', 'rejoin', ...SELECTOR])
}

function fieldsOf (o: object): ReadonlySet<string> { return new Set(Object.keys(o)) }

/** Validates a parsed JSON value as a scenario (a Scenario built in code may be passed too: it is checked the same way). */
export function parseScenario (raw: unknown): Scenario {
  const fail = (m: string): never => { throw new InvalidScenarioError(m) }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail('scenario must be a JSON object')
  const s = raw as Record<string, unknown>
  const unknown = unknownKey(s, SCENARIO_FIELDS)
  if (unknown !== undefined) fail(`${unknown} is not a scenario field (experiments/README.md)`)
  if (typeof s.name !== 'string') fail('name must be a string')
  if (!Number.isSafeInteger(s.seed)) fail('seed must be an integer')
  let topology: Topology
  try { topology = resolveTopology(s.topology as TopologyInit) } catch (err) { return fail(`topology: ${(err as Error).message}`) }
  if (s.core !== undefined && (typeof s.core !== 'object' || s.core === null || Array.isArray(s.core))) fail('core must be an object')
  let core: CoreConfig
  try { core = resolveCoreConfig(s.core as CoreInit | undefined) } catch (err) { return fail(`core: ${(err as Error).message}`) }
  if (typeof s.until !== 'number' || !(s.until > 0) || !Number.isFinite(s.until)) fail('until must be a finite number > 0')
  if (!Array.isArray(s.schedule)) fail('schedule must be an array')
  for (const key of ['crashDetectionMs', 'drainMs'] as const) {
    if (s[key] !== undefined && (typeof s[key] !== 'number' || !((s[key] as number) >= 0) || !Number.isFinite(s[key]))) fail(`${key} must be a finite number >= 0`)
  }
  const peerCount = topology.peerCount
  if (s.initialPeers !== undefined && !(Number.isSafeInteger(s.initialPeers) && (s.initialPeers as number) >= 1 && (s.initialPeers as number) <= peerCount)) fail(`initialPeers must be an integer in 1..${peerCount} (the topology's peers)`)
  // Virtual node ids are below 2^31 (virtual-nodes/interval-set.ts); more made the checker's arrays throw a RangeError.
  if (s.vnodes !== undefined && !(Number.isSafeInteger(s.vnodes) && (s.vnodes as number) >= 1 && (s.vnodes as number) <= 2 ** 31)) fail('vnodes must be an integer in 1..2^31')
  if (s.wireCheck !== undefined && typeof s.wireCheck !== 'boolean') fail('wireCheck must be a boolean')
  const vnodes = (s.vnodes as number | undefined) ?? (s.initialPeers as number | undefined) ?? peerCount
  const names = new Set(Array.from({ length: peerCount }, (_, i) => peerName(i)))
  const clusters = new Set(topology.clusters.map((c) => c.name))
  ;(s.schedule as unknown[]).forEach((a, i) => {
    const at = `schedule[${i}]`
    if (typeof a !== 'object' || a === null || Array.isArray(a)) fail(`${at} must be an object`)
    const act = a as Record<string, unknown>
    if (typeof act.at !== 'number' || !(act.at >= 0) || !Number.isFinite(act.at)) fail(`${at}.at must be a finite number >= 0`)
    if (typeof act.do !== 'string' || !Object.hasOwn(ACTION_FIELDS, act.do)) fail(`${at}.do must be one of ${Object.keys(ACTION_FIELDS).join(', ')}`)
    const kind = act.do as Action['do']
    const bad = unknownKey(act, ACTION_FIELDS[kind])
    if (bad !== undefined) fail(`${at}.${bad} is not a field of a ${kind} (${[...ACTION_FIELDS[kind]].join(', ')})`)
    if ((kind === 'broadcast' || kind === 'send') && !(Number.isSafeInteger(act.bytes) && (act.bytes as number) >= 0 && (act.bytes as number) <= core.maxPayloadBytes)) fail(`${at}.bytes must be an integer in 0..${core.maxPayloadBytes} (core maxPayloadBytes)`)
    if (kind === 'reduce' && act.length !== undefined && !(Number.isSafeInteger(act.length) && (act.length as number) >= 1 && (act.length as number) <= core.maxReduceLength)) fail(`${at}.length must be an integer in 1..${core.maxReduceLength} (core maxReduceLength)`)
    if (kind === 'reduce' && act.collective === true && typeof act.root === 'string' && act.root !== 'random' && !isTreeRoot(act.root, core.treeRootStride)) fail(`${at}.root ${act.root} roots no trees (treeRootStride ${core.treeRootStride}): a collective reduction's root must be a tree root`)
    for (const key of ['every', 'until']) {
      if (act[key] !== undefined && (typeof act[key] !== 'number' || !((act[key] as number) >= 0) || !Number.isFinite(act[key]))) fail(`${at}.${key} must be a finite number >= 0`)
    }
    for (const key of ['count', 'length']) {
      if (act[key] !== undefined && !(Number.isSafeInteger(act[key]) && (act[key] as number) >= 0)) fail(`${at}.${key} must be an integer >= 0`)
    }
    // These used to be dropped without a word: an action after `until` never ran, `count: 0` ran once and `every: 0` did not repeat.
    if ((act.at as number) > (s.until as number)) fail(`${at}.at (${String(act.at)}) is after until (${String(s.until)}): it would never run`)
    if ((kind === 'broadcast' || kind === 'reduce' || kind === 'send') && act.count !== undefined && (act.count as number) < 1) fail(`${at}.count must be an integer >= 1 (how many times it runs)`)
    if ((kind === 'broadcast' || kind === 'reduce' || kind === 'send') && act.every === 0) fail(`${at}.every must be a number > 0 (ms between repeats)`)
    if (act.fraction !== undefined && !(typeof act.fraction === 'number' && act.fraction >= 0 && act.fraction <= 1)) fail(`${at}.fraction must be a number in [0, 1]`)
    // Likewise ignored before: the repeat of a back-to-back broadcast, an end without repeats, a count of a list.
    if (kind === 'broadcast' && act.backToBack === true && act.every !== undefined) fail(`${at}.every does not apply with backToBack (the next starts when the root sees the previous complete)`)
    if (kind === 'broadcast' && act.until !== undefined && act.every === undefined && act.backToBack !== true) fail(`${at}.until applies only with every or backToBack`)
    if (Array.isArray(act.peers) && (act.count !== undefined || act.fraction !== undefined || act.cluster !== undefined)) fail(`${at}: count, fraction and cluster do not apply to a list of peers`)
    for (const key of ['collective', 'backToBack', 'rejoin']) {
      if (act[key] !== undefined && typeof act[key] !== 'boolean') fail(`${at}.${key} must be a boolean`)
    }
    if (act.tree !== undefined && act.tree !== 'auto' && act.tree !== 'lat' && act.tree !== 'bw') fail(`${at}.tree must be 'auto', 'lat' or 'bw'`)
    if (act.op !== undefined && (typeof act.op !== 'string' || !BUILTIN_OPS.has(act.op))) fail(`${at}.op must be one of ${[...BUILTIN_OPS.keys()].join(', ')}`)
    for (const key of ['root', 'from']) {
      if (act[key] !== undefined && act[key] !== 'random' && (typeof act[key] !== 'string' || !names.has(act[key]))) fail(`${at}.${key} must be 'random' or a peer of the topology (p0000..${peerName(peerCount - 1)}), got ${JSON.stringify(act[key])}`)
    }
    if (act.vnode !== undefined && act.vnode !== 'random' && !(Number.isSafeInteger(act.vnode) && (act.vnode as number) >= 0 && (act.vnode as number) < vnodes)) fail(`${at}.vnode must be 'random' or an integer in 0..${vnodes - 1} (the scenario's virtual nodes), got ${JSON.stringify(act.vnode)}`)
    if (act.peers !== undefined && act.peers !== 'left' && act.peers !== 'crashed') {
      if (!Array.isArray(act.peers) || !act.peers.every((p) => typeof p === 'string')) fail(`${at}.peers must be an array of peer names, 'left' or 'crashed'`)
      const stranger = (act.peers as string[]).find((p) => !names.has(p))
      if (stranger !== undefined) fail(`${at}.peers names '${stranger}', not a peer of the topology (p0000..${peerName(peerCount - 1)})`)
    }
    if (act.cluster !== undefined && (typeof act.cluster !== 'string' || !clusters.has(act.cluster))) fail(`${at}.cluster must name a cluster of the topology (${[...clusters].join(', ')}), got ${JSON.stringify(act.cluster)}`)
  })
  return s as unknown as Scenario
}

/**
 * The next occurrence of a repeated action (`every` ms, `count` in all, up to its own
 * `until` if it has one, else the scenario's), or undefined after the last one.
 */
export function nextRepeat<A extends Extract<Action, { do: 'broadcast' | 'reduce' | 'send' }>> (a: A, scenarioUntil: number): A | undefined {
  if (a.every === undefined || a.every <= 0) return undefined
  const n = (a.count ?? Infinity) - 1
  const next = a.at + a.every
  const until = 'until' in a && a.until !== undefined ? Math.min(a.until, scenarioUntil) : scenarioUntil
  return n > 0 && next <= until ? { ...a, at: next, count: n } : undefined
}

/** Peers a schedule names as a root or a sender: random leaves and crashes never pick them. */
export function namedRoots (schedule: readonly Action[]): string[] {
  const out: string[] = []
  for (const a of schedule) {
    const name = a.do === 'broadcast' || a.do === 'reduce' ? a.root : a.do === 'send' ? a.from : undefined
    if (name !== undefined && name !== 'random') out.push(name)
  }
  return out
}
