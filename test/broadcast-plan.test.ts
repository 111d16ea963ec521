/**
 * How a broadcast leaves its origin (overlay/broadcast-plan.ts): the tree kind by size or
 * by the caller, whose tree, and stripes only on the origin's own bandwidth tree.
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { resolveCoreConfig } from '../overlay/config.ts'
import { InvalidArgumentError } from '../overlay/errors.ts'
import { planBroadcast, type BroadcastOrigin } from '../overlay/broadcast-plan.ts'

const config = resolveCoreConfig({ chunkBytes: 1024, switchPointBytes: 4096, stripeMinBytes: 4096, maxPayloadBytes: 1 << 20 })

function origin (treeRoot: string): BroadcastOrigin {
  return {
    self: 'p0',
    vnodeCount: 32,
    owned: IntervalSet.range(0, 8),
    treeRoot: () => treeRoot,
    // Two other clusters, entered through p9 and p17.
    stripeEntries: () => [{ peer: 'p9', reach: IntervalSet.range(8, 16) }, { peer: 'p17', reach: IntervalSet.range(16, 32) }],
    isAlive: () => true
  }
}

describe('planBroadcast', () => {
  it('short payloads take the latency tree, long ones the bandwidth tree, unless the caller names one', () => {
    const short = planBroadcast(new Uint8Array(100), undefined, config, origin('p0'))
    expect([short.mode, short.chunks.length, short.totalBytes, short.tree]).toEqual(['lat', 1, 100, 'p0'])
    expect(short.header.equals(IntervalSet.range(0, 32))).toBe(true)
    expect(planBroadcast(new Uint8Array(5000), 'auto', config, origin('p0')).mode).toBe('bw')
    expect(planBroadcast(new Uint8Array(5000), 'lat', config, origin('p0')).mode).toBe('lat')
    expect(() => planBroadcast(new Uint8Array((1 << 20) + 1), undefined, config, origin('p0'))).toThrow(InvalidArgumentError)
  })

  it('a long broadcast is striped on the origin\'s own bandwidth tree only', () => {
    const own = planBroadcast(new Uint8Array(8192), undefined, config, origin('p0'))
    expect(own.stripes?.stripes.length).toBeGreaterThan(1)
    const other = planBroadcast(new Uint8Array(8192), undefined, config, origin('p5'))
    expect(other.tree).toBe('p5')
    expect(other.stripes).toBeUndefined()
  })
})
