/**
 * The protocol options a node runs with: the core's defaults, except what node/ sets for
 * real networks (two pings per probe, an RTT survey of 6 peers, 63 KiB chunks), and
 * `init.core` over both.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { TreecastNode } from '../node/create-treecast.ts'
import { NODE_CHUNK_BYTES, NODE_NEAR_SURVEY_COUNT } from '../node/treecast-service.ts'
import { DEFAULT_CHUNK_BYTES, DEFAULT_PROBE_BYTES } from '../overlay/config.ts'
import { startNode, stopAll } from './node-helpers.ts'

describe('node defaults', () => {
  const made: TreecastNode[] = []
  afterAll(async () => { await stopAll(made) }, 60_000)

  it('runs the core with the node defaults (two pings per probe, a survey of 6, 63 KiB chunks) unless init.core says otherwise', async () => {
    const a = await startNode()
    made.push(a)
    expect(a.overlay.coreConfig.probePingCount).toBe(2)
    expect(a.overlay.coreConfig.nearSurveyCount).toBe(NODE_NEAR_SURVEY_COUNT)
    expect(NODE_NEAR_SURVEY_COUNT).toBe(6)
    expect(a.overlay.coreConfig.probeBytes).toBe(DEFAULT_PROBE_BYTES)
    expect(a.overlay.coreConfig.chunkBytes).toBe(NODE_CHUNK_BYTES)
    expect(NODE_CHUNK_BYTES).toBe(63 * 1024)
    const b = await startNode({ core: { nearSurveyCount: 0, probePingCount: 1, chunkBytes: DEFAULT_CHUNK_BYTES } })
    made.push(b)
    expect(b.overlay.coreConfig.nearSurveyCount).toBe(0)
    expect(b.overlay.coreConfig.probePingCount).toBe(1)
    expect(b.overlay.coreConfig.chunkBytes).toBe(DEFAULT_CHUNK_BYTES)
  })
})
