/**
 * The plots of a comparison as vega-lite specs with inline data (the harness renders them):
 * the 1 KB arrival-time CDF per system, and completion time per size and system.
 */
import type { Plot } from '../harness/types.ts'
import type { Point } from './points.ts'

const COLOR = { field: 'system', type: 'nominal', scale: { domain: ['treecast', 'gossipsub'] } }

/** CDF of per-peer arrival times of the 1 KB messages. */
function latencyCdf (points: readonly Point[]): Plot {
  const values = points
    .filter((p) => p.phase === 'measure' && p.size === '1 KB')
    .flatMap((p) => p.arrivalsMs.filter((x): x is number => x !== null).map((ms) => ({ system: p.system, ms })))
  return {
    id: 'latency-cdf',
    title: '1 KB: arrival time at each peer after the publish call',
    spec: {
      $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
      width: 480,
      height: 300,
      data: { values },
      transform: [{ window: [{ op: 'cume_dist', as: 'fraction' }], sort: [{ field: 'ms' }], groupby: ['system'] }],
      mark: { type: 'line', interpolate: 'step-after' },
      encoding: {
        x: { field: 'ms', type: 'quantitative', title: 'arrival after publish (ms)' },
        y: { field: 'fraction', type: 'quantitative', title: 'fraction of arrivals', scale: { domain: [0, 1] } },
        color: COLOR
      }
    }
  }
}

/** Completion time of every message, and the median per size, per system. */
function completion (points: readonly Point[]): Plot {
  const values = points
    .filter((p) => p.phase === 'measure' && p.completionMs !== null)
    .map((p) => ({ system: p.system, size: p.size, bytes: p.bytes, completionMs: p.completionMs }))
  const order = [...new Map(points.map((p) => [p.size, p.bytes])).entries()].sort((a, b) => a[1] - b[1]).map(([s]) => s)
  const x = { field: 'size', type: 'ordinal', sort: order, title: 'message size' }
  const y = { field: 'completionMs', type: 'quantitative', scale: { type: 'log' }, title: 'completion time (ms, log scale)' }
  return {
    id: 'completion',
    title: 'Completion time per size (every peer has the message); messages not delivered are left out',
    spec: {
      $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
      width: 480,
      height: 300,
      data: { values },
      layer: [
        { mark: { type: 'point', opacity: 0.5 }, encoding: { x, y, color: COLOR, xOffset: { field: 'system' } } },
        { mark: { type: 'line', point: true }, encoding: { x, y: { ...y, aggregate: 'median' }, color: COLOR } }
      ]
    }
  }
}

/** Every plot of the comparison. */
export function plotsOf (points: readonly Point[]): Plot[] {
  return [latencyCdf(points), completion(points)]
}
