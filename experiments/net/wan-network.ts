/**
 * The emulated wide-area network of a live run: the simulator's topology reproduced by
 * the in-process link emulator (node/wan/), one shared pipe per cluster pair.
 */
import { WanEmulator } from '../../node/wan/wan-emulator.ts'
import type { TopologyInit } from '../sim/network.ts'
import type { LiveNetwork } from './live-run.ts'

/** A {@link LiveNetwork} on the link emulator. */
export function wanNetwork (topology: TopologyInit): LiveNetwork & { readonly emulator: WanEmulator } {
  const emulator = WanEmulator.fromTopology(topology)
  return {
    emulator,
    transportFor: (peerId, cluster) => {
      emulator.assign(peerId, cluster)
      return emulator.transport()
    },
    wanBytes: () => emulator.stats().filter((s) => s.from !== s.to).reduce((n, s) => n + s.bytesCarried, 0)
  }
}
