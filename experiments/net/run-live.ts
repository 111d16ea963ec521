/**
 * A scenario on real libp2p peers with the emulated topology: what
 * `npm run --silent sim -- <scenario.json> --network libp2p` runs.
 */
import '../../node/polyfill.ts'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { installLibp2pGuard } from '../../node/libp2p-guard.ts'
import type { SimReport } from '../sim/report.ts'
import type { Scenario } from '../sim/scenario.ts'
import { LiveRun } from './live-run.ts'
import { wanNetwork } from './wan-network.ts'

/** Peers beyond this share two cores too thinly for the run to mean much; it still runs. */
export const LIVE_PEERS_ADVISED = 64

export async function runLive (scenario: Scenario, seed: number, onProgress?: (line: string) => void, opts: { startAfterStableMaxMs?: number } = {}): Promise<SimReport> {
  installLibp2pGuard()
  const network = wanNetwork(scenario.topology)
  const total = scenario.topology.clusters.reduce((n, c) => n + c.peers, 0)
  if (total > LIVE_PEERS_ADVISED) console.error(`sim: ${total} real peers in one process: expect CPU saturation (advised at most ${LIVE_PEERS_ADVISED})`)
  const run = new LiveRun(scenario, seed, {
    network,
    keyFor: async () => await generateKeyPair('Ed25519'),
    ...(onProgress !== undefined ? { onProgress } : {}),
    ...opts
  })
  return await run.run()
}
