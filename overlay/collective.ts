/**
 * Collective reductions (003 §IV-E as the paper runs them: every peer calls the reduction,
 * leaves begin by sending their data up, and no start travels down from the root). The
 * checks on a local call, and what a peer needs of the root's latency tree to take part.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeTable } from '../trees/tree-table.ts'
import { InvalidArgumentError } from './errors.ts'

/** A collective reduction as every peer's application calls it. */
export interface CollectiveInit {
  /**
   * The reduction's name, the same at every peer (e.g. a step number): 1 to
   * {@link MAX_COLLECTIVE_ID_LENGTH} characters, no `/` (ids with `/` are the core's own).
   */
  readonly id: string
  /** The peer the result is delivered at (it calls the reduction too). */
  readonly root: PeerId
  /** A registered operation (sum, prod, min, max, band, bor, bxor or a custom one). */
  readonly op: string
  /** Elements of the array every virtual node contributes. */
  readonly length: number
}

/** Longest collective reduction id. */
export const MAX_COLLECTIVE_ID_LENGTH = 128

/** Throws {@link InvalidArgumentError} when `init` cannot be a collective reduction here (`member`: a live member or this peer). */
export function checkCollective (init: CollectiveInit, known: { op: (op: string) => boolean, maxLength: number, member: (p: PeerId) => boolean }): void {
  const { id, op, length, root } = init
  if (typeof id !== 'string' || id.length < 1 || id.length > MAX_COLLECTIVE_ID_LENGTH || id.includes('/')) {
    throw new InvalidArgumentError(`a collective reduction id must be 1..${MAX_COLLECTIVE_ID_LENGTH} characters without '/', got ${JSON.stringify(id)}`)
  }
  checkReduceArgs(op, length, known)
  if (typeof root !== 'string' || !known.member(root)) throw new InvalidArgumentError(`root ${String(root)} is not a live member`)
}

/** Throws {@link InvalidArgumentError} on an unknown operation or a length outside 1..maxLength. */
export function checkReduceArgs (op: string, length: number, known: { op: (op: string) => boolean, maxLength: number }): void {
  if (!known.op(op)) throw new InvalidArgumentError(`unknown reduction operation '${op}'`)
  if (!Number.isInteger(length) || length < 1 || length > known.maxLength) throw new InvalidArgumentError(`length must be an integer in 1..${known.maxLength}`)
}

/**
 * This peer's place in `root`'s latency tree: its parent (null when it has none, or is the
 * root) and what its live children reach, which it waits for.
 */
export function latRoute (trees: TreeTable, isAlive: (p: PeerId) => boolean, root: PeerId): { parent: PeerId | null, below: IntervalSet } {
  const st = trees.get('lat', root)
  if (st === undefined) return { parent: null, below: IntervalSet.EMPTY }
  let below = IntervalSet.EMPTY
  for (const [child, reach] of st.children) if (isAlive(child)) below = below.union(reach)
  return { parent: st.parent, below }
}

/** Throws {@link InvalidArgumentError} unless collective reduction `id` may be called here, given its state. */
export function checkCollectiveState (id: string, state: 'new' | 'relaying' | 'called' | 'ended' | 'mismatch' | 'full'): void {
  if (state === 'new' || state === 'relaying') return
  const why = state === 'full' ? 'too many reductions in flight' : state === 'mismatch' ? 'it runs with another root, operation or length' : `already ${state}`
  throw new InvalidArgumentError(`collective reduction '${id}' cannot be called here: ${why}`)
}

/**
 * Of `vnodes`, those with no contribution to collective reduction `id` yet, now marked as
 * contributed in `delivered`: the per-stream record that hand-offs carry, so that a new
 * owner does not contribute a virtual node again.
 */
export function claimFresh (delivered: { get: (id: string) => IntervalSet, set: (id: string, v: IntervalSet) => void }, id: string, vnodes: IntervalSet): IntervalSet {
  const fresh = vnodes.difference(delivered.get(id))
  if (!fresh.isEmpty) delivered.set(id, delivered.get(id).union(fresh))
  return fresh
}
