/**
 * Defaults and validation of the baselines' inputs: the topology (an init or a resolved
 * one), the root, the payload size and the {@link BaselineInit} options.
 */
import { resolveTopology } from '../sim/network.ts'
import type { Topology, TopologyInit } from '../sim/network.ts'
import { InvalidBaselineInputError, UnknownBaselineError } from './errors.ts'
import { BASELINES } from './types.ts'
import type { BaselineInit, BaselineName, MpichRankOrder } from './types.ts'

/** treecast's default chunk size, so both pay the same per-message cost. */
export const DEFAULT_SEGMENT_BYTES = 65_536
/** Per-message header bytes. */
export const DEFAULT_HEADER_BYTES = 32
/** Bytes per reduction element (a float64 or int64). */
export const DEFAULT_ELEMENT_BYTES = 8
export const DEFAULT_MPICH_RANK_ORDER: MpichRankOrder = 'shuffled'
export const DEFAULT_SEED = 1

/** {@link BaselineInit} with every default applied and checked. */
export interface BaselineConfig {
  readonly segmentBytes: number
  readonly headerBytes: number
  readonly elementBytes: number
  readonly mpichRankOrder: MpichRankOrder
  readonly seed: number
}

const RANK_ORDERS: readonly MpichRankOrder[] = ['shuffled', 'round-robin', 'cluster']

function fail(message: string): never {
  throw new InvalidBaselineInputError(message)
}

function integer(field: string, v: unknown, min: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) fail(`${field} must be an integer >= ${min}, got ${String(v)}`)
  return v
}

/** Applies the defaults of `init` and validates them. */
export function resolveConfig(init: BaselineInit = {}): BaselineConfig {
  if (typeof init !== 'object' || init === null) fail('init must be an object')
  const mpichRankOrder = init.mpichRankOrder ?? DEFAULT_MPICH_RANK_ORDER
  if (!RANK_ORDERS.includes(mpichRankOrder)) fail(`mpichRankOrder must be one of ${RANK_ORDERS.join(', ')}, got ${String(mpichRankOrder)}`)
  return {
    segmentBytes: integer('segmentBytes', init.segmentBytes ?? DEFAULT_SEGMENT_BYTES, 1),
    headerBytes: integer('headerBytes', init.headerBytes ?? DEFAULT_HEADER_BYTES, 0),
    elementBytes: integer('elementBytes', init.elementBytes ?? DEFAULT_ELEMENT_BYTES, 1),
    mpichRankOrder,
    seed: integer('seed', init.seed ?? DEFAULT_SEED, 0)
  }
}

/** A resolved topology, from either form; a bad init throws the simulator's `InvalidTopologyError`. */
export function toTopology(topology: TopologyInit | Topology): Topology {
  if (typeof topology === 'object' && topology !== null && 'peerCount' in topology && typeof topology.clusterOf === 'function') return topology
  return resolveTopology(topology as TopologyInit)
}

/** Checks that `root` is a peer of `topology`. */
export function checkRoot(topology: Topology, root: number): number {
  if (typeof root !== 'number' || !Number.isInteger(root) || root < 0 || root >= topology.peerCount) {
    fail(`root must be a peer in 0..${topology.peerCount - 1}, got ${String(root)}`)
  }
  return root
}

/** Checks a payload size (`bytes`, `elements`): a safe integer >= 0. */
export function checkSize(field: string, v: number): number {
  return integer(field, v, 0)
}

/** Checks a baseline name. */
export function checkBaseline(name: string): BaselineName {
  if (!(BASELINES as readonly string[]).includes(name)) throw new UnknownBaselineError(`unknown baseline '${String(name)}' (known: ${BASELINES.join(', ')})`)
  return name as BaselineName
}
