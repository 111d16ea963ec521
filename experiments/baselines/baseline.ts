/** What every baseline implements: a static schedule for a broadcast and for a reduction. */
import type { Topology } from '../sim/network.ts'
import type { BaselineConfig } from './config.ts'
import type { Plan } from './plan.ts'

/** A schedule and what the algorithm chose, for the experiment's output. */
export interface PlannedCollective {
  plan: Plan
  params: Record<string, string | number | boolean>
}

/** One baseline. Inputs are validated by the caller (index.ts). */
export interface BaselineImpl {
  /** The broadcast of `bytes` from `root`. */
  broadcast(topology: Topology, root: number, bytes: number, config: BaselineConfig): PlannedCollective
  /** The reduction (sum) of arrays of `elements` elements of `config.elementBytes` to `root`. */
  reduce(topology: Topology, root: number, elements: number, config: BaselineConfig): PlannedCollective
}
