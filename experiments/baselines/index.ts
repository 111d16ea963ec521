/**
 * The static baselines of issue 5 (see README.md): `broadcast`, `reduce` and
 * `lowerBounds`, matching {@link BaselinesApi}. Each baseline builds a fixed schedule of
 * sends (plan.ts) and runs it on the simulator's network model (executor.ts).
 */
import type { Topology, TopologyInit } from '../sim/network.ts'
import type { BaselineImpl, PlannedCollective } from './baseline.ts'
import { checkBaseline, checkRoot, checkSize, resolveConfig, toTopology } from './config.ts'
import { execute } from './executor.ts'
import { computeLowerBounds } from './lower-bounds.ts'
import { list } from './list.ts'
import { model } from './model.ts'
import { mpich } from './mpich.ts'
import { magpie, mpichG2 } from './two-level.ts'
import type { BaselineInit, BaselineName, BaselinesApi, CollectiveResult, LowerBounds } from './types.ts'

export * from './types.ts'
export { InvalidBaselineInputError, ScheduleDeadlockError, UnknownBaselineError } from './errors.ts'
export { DEFAULT_ELEMENT_BYTES, DEFAULT_HEADER_BYTES, DEFAULT_MPICH_RANK_ORDER, DEFAULT_SEED, DEFAULT_SEGMENT_BYTES } from './config.ts'
export { MPICH_BCAST_LONG_MSG, MPICH_BCAST_MIN_PROCS, MPICH_BCAST_SHORT_MSG } from './mpich.ts'

const IMPLS: Record<BaselineName, BaselineImpl> = { mpich, magpie, 'mpich-g2': mpichG2, list, model }

function run(name: BaselineName, topology: Topology, kind: 'broadcast' | 'reduce', root: number, planned: PlannedCollective, headerBytes: number): CollectiveResult {
  const r = execute(topology, planned.plan, { kind, root, headerBytes })
  return { baseline: name, ...r, params: { ...planned.params, headerBytes } }
}

/** Validates a collective's arguments (named errors) and resolves its baseline, topology and options. */
function prepare (name: BaselineName, topology: TopologyInit | Topology, root: number, sizeField: string, size: number, init: BaselineInit | undefined) {
  const impl = IMPLS[checkBaseline(name)]
  const t = toTopology(topology)
  checkRoot(t, root)
  checkSize(sizeField, size)
  return { impl, t, config: resolveConfig(init) }
}

/** Broadcasts `bytes` from `root` with baseline `name` on `topology`. */
export function broadcast(name: BaselineName, topology: TopologyInit | Topology, root: number, bytes: number, init?: BaselineInit): CollectiveResult {
  const { impl, t, config } = prepare(name, topology, root, 'bytes', bytes, init)
  return run(name, t, 'broadcast', root, impl.broadcast(t, root, bytes, config), config.headerBytes)
}

/** Reduces (sums) arrays of `elements` elements of `init.elementBytes` from every peer to `root`. */
export function reduce(name: BaselineName, topology: TopologyInit | Topology, root: number, elements: number, init?: BaselineInit): CollectiveResult {
  const { impl, t, config } = prepare(name, topology, root, 'elements', elements, init)
  return run(name, t, 'reduce', root, impl.reduce(t, root, elements, config), config.headerBytes)
}

/** The latency and bandwidth lower bounds of a broadcast of `bytes` from `root`. */
export function lowerBounds(topology: TopologyInit | Topology, root: number, bytes: number): LowerBounds {
  const t = toTopology(topology)
  checkRoot(t, root)
  checkSize('bytes', bytes)
  return computeLowerBounds(t, root, bytes)
}

/** The three functions as one {@link BaselinesApi} object. */
export const baselines: BaselinesApi = { broadcast, reduce, lowerBounds }
