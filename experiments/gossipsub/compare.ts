// PLACEHOLDER being replaced by the gossipsub-compare helper.
import type { Experiment } from '../harness/types.ts'

export const gossipsubCompare: Experiment = {
  name: 'gossipsub-compare',
  description: 'treecast against @libp2p/gossipsub on real in-process libp2p peers (4 emulated clusters)',
  run: async () => { throw new Error('gossipsub-compare is not implemented yet') }
}
