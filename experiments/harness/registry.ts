/** Every experiment `npm run experiment -- <name>` knows, in the order `--help` lists them. */
import { fig6Latency } from '../figures/fig6-latency.ts'
import { fig7Bandwidth } from '../figures/fig7-bandwidth.ts'
import { fig8Reduction } from '../figures/fig8-reduction.ts'
import { fig9Churn } from '../figures/fig9-churn.ts'
import { scale } from '../figures/scale.ts'
import { gossipsubCompare } from '../gossipsub/compare.ts'
import type { Experiment } from './types.ts'

export const EXPERIMENTS: readonly Experiment[] = [fig6Latency, fig7Bandwidth, fig8Reduction, fig9Churn, scale, gossipsubCompare]

/** The experiment called `name`, or undefined. */
export function findExperiment (name: string): Experiment | undefined {
  return EXPERIMENTS.find((e) => e.name === name)
}
