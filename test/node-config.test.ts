/**
 * The node's network options (node/config.ts): defaults, and a named error for every bad value.
 */
import { describe, expect, it } from 'vitest'
import { DEFAULT_NODE_NET, MAX_TIMER_MS, resolveNodeConfig } from '../node/config.ts'
import { InvalidConfigError } from '../node/errors.ts'

describe('resolveNodeConfig', () => {
  it('fills every default and keeps given values', () => {
    expect(resolveNodeConfig()).toEqual(DEFAULT_NODE_NET)
    expect(DEFAULT_NODE_NET.bulkMinBytes).toBe(256 * 1024)
    const r = resolveNodeConfig({ bulkMinBytes: 1, heartbeatIntervalMs: 250.5 })
    expect(r.bulkMinBytes).toBe(1)
    expect(r.heartbeatIntervalMs).toBe(250.5)
    expect(r.maxQueuedBytes).toBe(DEFAULT_NODE_NET.maxQueuedBytes)
  })

  it('rejects bad values with InvalidConfigError', () => {
    for (const bad of [0, -1, Number.NaN, Infinity]) expect(() => resolveNodeConfig({ bulkMinBytes: bad })).toThrow(InvalidConfigError)
    expect(() => resolveNodeConfig({ bulkMinBytes: 1000.5 })).toThrow(/integer/)
    expect(() => resolveNodeConfig({ bulkMinBytes: '1' as unknown as number })).toThrow(InvalidConfigError)
    for (const bad of [0, 1.5]) expect(() => resolveNodeConfig({ dialAttempts: bad })).toThrow(InvalidConfigError)
    expect(resolveNodeConfig({}).dialAttempts).toBe(2)
    // A control-stream transfer may not fill the control queue.
    expect(() => resolveNodeConfig({ bulkMinBytes: 8 * 1024 * 1024 })).toThrow(/maxQueuedBytes \/ 8/)
    expect(resolveNodeConfig({ bulkMinBytes: 8 * 1024 * 1024, maxQueuedBytes: 64 * 1024 * 1024 }).bulkMinBytes).toBe(8 * 1024 * 1024)
    expect(() => resolveNodeConfig({ heartbeatIntervalMs: 3000, failureDetectionTimeoutMs: 5000 })).toThrow(/at least twice/)
    expect(() => resolveNodeConfig({ maxFrameBytes: 512 })).toThrow(/at least 1024/)
    // setTimeout fires a longer delay after 1 ms: a dial or heartbeat time past it is refused.
    for (const key of ['dialTimeoutMs', 'pruneIdleMs', 'bulkIdleMs'] as const) {
      expect(() => resolveNodeConfig({ [key]: MAX_TIMER_MS + 1 }), key).toThrow(/setTimeout's limit/)
      expect(resolveNodeConfig({ [key]: MAX_TIMER_MS })[key]).toBe(MAX_TIMER_MS)
    }
  })
})
