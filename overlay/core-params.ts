/**
 * The public types of a protocol core (overlay/core.ts): what it is built from, its
 * lifecycle and its counters.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { CoreInit } from './config.ts'
import type { CombineFn } from './reduce-ops.ts'
import type { ContributeFn } from './reduction.ts'

/** The lifecycle of a core. */
export type CoreState = 'idle' | 'joining' | 'running' | 'leaving' | 'left' | 'evicted'

/** What a core is built from. */
export interface CoreParams {
  /** This peer's id. */
  readonly self: PeerId
  /** Uniform random numbers in [0,1): the only source of randomness. */
  readonly random: () => number
  /**
   * The application's contribution to reductions, per set of owned virtual nodes: a
   * Float64Array of `start.length` elements. Anything else (or a throw) counts as NaN in
   * every element and is counted in `stats.rejected['bad-contribution']`.
   */
  readonly contribute?: ContributeFn
  /** Custom reduction operations by name. */
  readonly ops?: Readonly<Record<string, CombineFn>>
  readonly config?: CoreInit
}

/** Counters of one core. */
export interface CoreStats {
  rejected: Record<string, number>
  /** Probe replies received. */
  probes: number
  /** Of those, light ones (no download: the bandwidth measured recently was reused). */
  probesLight: number
  /** Tree-news offers received (each may start a probe of its sender: overlay/probing.ts `offered`). */
  offers: number
  messagesOut: number
}
