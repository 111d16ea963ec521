/**
 * How a broadcast leaves its origin: its chunks, the kind of tree it takes (latency below
 * the switch point, bandwidth from it on, 003 §IV-D, unless the caller names one), whose
 * tree of that kind (the origin's own, or a tree root's: overlay/tree-roots.ts), and, for
 * a long one on the origin's own bandwidth tree, its stripes (overlay/stripes.ts).
 * Sans-IO: a pure function of its inputs.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeEntry } from '../trees/tree-ops.ts'
import type { TreeKind } from '../trees/tree-kind.ts'
import type { CoreConfig } from './config.ts'
import { chunkPayload } from './payload.ts'
import { planStripes, type StripePlan } from './stripes.ts'

/** What the origin knows that the plan depends on. */
export interface BroadcastOrigin {
  readonly self: PeerId
  readonly vnodeCount: number
  readonly owned: IntervalSet
  /** The root whose `kind` tree this peer's streams take (overlay/tree-roots.ts `treeRootOf`). */
  treeRoot (kind: TreeKind): PeerId
  /** The cluster entries of this peer's own bandwidth tree. */
  stripeEntries (): readonly TreeEntry[]
  isAlive (peer: PeerId): boolean
}

/** A broadcast ready to originate. */
export interface BroadcastPlan {
  readonly chunks: Uint8Array[]
  readonly totalBytes: number
  readonly mode: TreeKind
  readonly tree: PeerId
  /** Every virtual node. */
  readonly header: IntervalSet
  readonly stripes: StripePlan | undefined
}

/** Plans a broadcast of `payload`; InvalidArgumentError when it exceeds `maxPayloadBytes`. */
export function planBroadcast (payload: Uint8Array | readonly Uint8Array[], kind: 'auto' | TreeKind | undefined, config: CoreConfig, origin: BroadcastOrigin): BroadcastPlan {
  const chunks = chunkPayload(payload, config)
  const totalBytes = chunks.reduce((n, c) => n + c.length, 0)
  const mode: TreeKind = kind === undefined || kind === 'auto' ? (totalBytes >= config.switchPointBytes ? 'bw' : 'lat') : kind
  const tree = origin.treeRoot(mode)
  const header = IntervalSet.range(0, origin.vnodeCount)
  // Stripes need the cluster entries of the origin's own bandwidth tree.
  const striped = mode === 'bw' && tree === origin.self && totalBytes >= config.stripeMinBytes
  const stripes = striped ? planStripes(header, origin.owned, origin.stripeEntries(), origin.self, (p) => origin.isAlive(p), Math.min(config.stripeMaxCount, chunks.length)) : null
  return { chunks, totalBytes, mode, tree, header, stripes: stripes ?? undefined }
}
