/**
 * How a burst of probes ends (overlay/probing.ts): whichever lane takes the schedule's
 * last probe, the end is seen once, and what the end does (detour probes) is done.
 */
import { describe, expect, it } from 'vitest'
import { Probing } from '../overlay/probing.ts'
import type { Message } from '../overlay/messages.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { fakeProbingHost } from './probing-fixtures.ts'

const CFG = { probeExtraCount: 1, steadyProbeIntervalMs: 0, probeTimeoutMs: 1000, probeBytes: 1000, probePingCount: 1, probeNearFraction: 0.75, probeNearLane: true, probeDetour: true, probeBandwidthReuseMs: 0, probeNearLaneGapMs: 0, treeNewsGapMs: 0, nearSurveyCount: 0, probeDownloadOnDemand: false }

const nonceOf = (m: Message): number => (m as { nonce: number }).nonce

describe('burst ends', () => {
  it('a burst that the near lane ends while the main lane probes still queues its detours: the main lane probes the root next', () => {
    const sent: Array<{ to: PeerId, msg: Message }> = []
    // 'r' is the root of a latency tree reached through a far parent (a detour) when the burst ends.
    const probing = new Probing(fakeProbingHost(['me', 'n1', 'r', 'f'], sent, {
      random: () => 0.99, // the main lane picks at random, the last of the others
      isDetour: (root) => root === 'r',
      detourRoots: () => ['r']
    }), CFG)
    // n1 is near (it probed us): the near lane has a peer to probe, and a far parent is 4 x 0.3 ms.
    probing.pinged(0, 'n1', 2)
    probing.requested(0.3, 'n1', 2)
    probing.trigger(1)
    // Every parent is there: the burst is the one extra probe, which the main lane takes
    // (a far peer); the near lane then finds the schedule over.
    const pings = sent.filter((s) => s.msg.t === 'ping')
    expect(pings.map((s) => s.to)).toEqual(['f'])
    expect(probing.isProbing).toBe(true)
    // The main lane's probe ends: the burst is over, and its detour is probed once.
    probing.onPong(20, 'f', nonceOf((pings[0] as { msg: Message }).msg))
    const req = sent.at(-1) as { to: PeerId, msg: Message }
    expect(req.msg.t).toBe('probe-req')
    probing.onReply(40, 'f', { t: 'probe-rep', nonce: nonceOf(req.msg), trees: [], padding: 1000 })
    expect(sent.at(-1)).toMatchObject({ to: 'r', msg: { t: 'ping' } })
  })
})
