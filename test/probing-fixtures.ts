/**
 * Fixtures shared by the probing tests: a fake host for `Probing` that records what it
 * sends, and the 64-peer, 4-cluster cold start the simulator tests of tree news and the
 * RTT survey run.
 */
import type { ProbingHost } from '../overlay/probing.ts'
import type { Message } from '../overlay/messages.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { CoreInit } from '../overlay/config.ts'
import { Simulation } from '../experiments/sim/simulation.ts'
import type { Scenario } from '../experiments/sim/scenario.ts'

/** A host named 'me' among `members`, with no trees to speak of; `over` replaces any field. */
export function fakeProbingHost (members: readonly PeerId[], sent: Array<{ to: PeerId, msg: Message }>, over: Partial<ProbingHost> = {}): ProbingHost {
  return {
    self: 'me',
    random: () => 0.5,
    alive: () => members,
    isAlive: (p) => members.includes(p),
    send: (to, msg) => { sent.push({ to, msg }) },
    setTimer: () => {},
    judged: () => {},
    parentlessCount: () => 0,
    isDetour: () => false,
    detourRoots: () => [],
    isRunning: () => true,
    ...over
  }
}

/** 64 peers in 4 clusters of 16 (0.3 ms inside, 6 ms between), cold start, run for 4 s. */
export function coldStart64 (name: string, seed: number, core: CoreInit): { sim: Simulation, report: ReturnType<Simulation['run']> } {
  const scenario: Scenario = {
    name,
    seed,
    topology: { clusters: [0, 1, 2, 3].map((i) => ({ name: `c${i}`, peers: 16 })), intraRttMs: 0.3, interRttMs: 6, peerLinkBytesPerSec: 125e6, wanLinkBytesPerSec: 12.5e6 },
    until: 4000,
    core,
    schedule: []
  }
  const sim = new Simulation(scenario, seed)
  return { sim, report: sim.run() }
}
