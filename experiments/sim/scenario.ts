/**
 * Scenario files: the topology, the number of virtual nodes, the seed and a timed
 * schedule. The format is documented in experiments/README.md; this module validates a
 * parsed JSON value into a Scenario and throws InvalidScenarioError naming the bad field.
 */
import type { CoreInit } from '../../overlay/config.ts'
import type { TopologyInit } from './network.ts'

/** Which peers an action applies to. */
export interface PeerSelector {
  /** Explicit peer names (`p0`, `p17`, ...). */
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

const ACTIONS = new Set(['broadcast', 'reduce', 'leave', 'crash', 'join'])

/** Validates a parsed JSON value as a scenario. */
export function parseScenario (raw: unknown): Scenario {
  const fail = (m: string): never => { throw new InvalidScenarioError(m) }
  if (typeof raw !== 'object' || raw === null) fail('scenario must be a JSON object')
  const s = raw as Record<string, unknown>
  if (typeof s.name !== 'string') fail('name must be a string')
  if (!Number.isInteger(s.seed)) fail('seed must be an integer')
  if (typeof s.topology !== 'object' || s.topology === null) fail('topology must be an object')
  if (typeof s.until !== 'number' || !(s.until > 0)) fail('until must be a number > 0')
  if (!Array.isArray(s.schedule)) fail('schedule must be an array')
  for (const key of ['vnodes', 'initialPeers', 'crashDetectionMs', 'drainMs'] as const) {
    if (s[key] !== undefined && (typeof s[key] !== 'number' || !((s[key] as number) >= 0))) fail(`${key} must be a number >= 0`)
  }
  ;(s.schedule as unknown[]).forEach((a, i) => {
    if (typeof a !== 'object' || a === null) fail(`schedule[${i}] must be an object`)
    const act = a as Record<string, unknown>
    if (typeof act.at !== 'number' || !(act.at >= 0)) fail(`schedule[${i}].at must be a number >= 0`)
    if (typeof act.do !== 'string' || !ACTIONS.has(act.do)) fail(`schedule[${i}].do must be one of ${[...ACTIONS].join(', ')}`)
    if (act.do === 'broadcast' && (typeof act.bytes !== 'number' || !(act.bytes >= 0))) fail(`schedule[${i}].bytes must be a number >= 0`)
    for (const key of ['every', 'count', 'fraction', 'length', 'until']) {
      if (act[key] !== undefined && (typeof act[key] !== 'number' || !((act[key] as number) >= 0))) fail(`schedule[${i}].${key} must be a number >= 0`)
    }
    if (act.collective !== undefined && (act.do !== 'reduce' || typeof act.collective !== 'boolean')) fail(`schedule[${i}].collective must be a boolean, on a reduce`)
    if (act.peers !== undefined && act.peers !== 'left' && act.peers !== 'crashed' && !(Array.isArray(act.peers) && act.peers.every((p) => typeof p === 'string'))) {
      fail(`schedule[${i}].peers must be an array of peer names, 'left' or 'crashed'`)
    }
  })
  return s as unknown as Scenario
}
