/**
 * How ranges are first spread, split on join, and taken over on leave or crash.
 * All functions are deterministic: every peer that computes them with the same inputs
 * gets the same answer, which is what makes crash take-over agree without a vote.
 */
import { IntervalSet } from './interval-set.ts'
import { InvalidIntervalError } from './errors.ts'
import { comparePeerIds, type PeerId } from './peer-id.ts'

/**
 * Spreads 0..vnodeCount-1 evenly over `peers` (in the given order): contiguous ranges,
 * sizes differing by at most one.
 */
export function initialAssignment (vnodeCount: number, peers: readonly PeerId[]): Map<PeerId, IntervalSet> {
  if (!Number.isInteger(vnodeCount) || vnodeCount < 0) throw new InvalidIntervalError(`vnodeCount must be a non-negative integer, got ${vnodeCount}`)
  if (peers.length === 0) throw new InvalidIntervalError('initialAssignment needs at least one peer')
  if (new Set(peers).size !== peers.length) throw new InvalidIntervalError('initialAssignment peers must be distinct')
  const out = new Map<PeerId, IntervalSet>()
  const base = Math.floor(vnodeCount / peers.length)
  const extra = vnodeCount % peers.length
  let start = 0
  peers.forEach((peer, i) => {
    const n = base + (i < extra ? 1 : 0)
    out.set(peer, IntervalSet.range(start, start + n))
    start += n
  })
  return out
}

/**
 * The part of `owned` a donor gives a joiner by default: the upper floor(size/2) virtual
 * nodes, so the donor keeps at least half (and a donor with one virtual node keeps it).
 */
export function joinShare (owned: IntervalSet): IntervalSet {
  return owned.take(Math.ceil(owned.size / 2))[1]
}

/**
 * The deterministic successor of `gone` among `alive`: the next peer id after it in the
 * global order, wrapping around. Undefined when nobody is left.
 */
export function successorOf (gone: PeerId, alive: Iterable<PeerId>): PeerId | undefined {
  let next: PeerId | undefined
  let first: PeerId | undefined
  for (const p of alive) {
    if (p === gone) continue
    if (first === undefined || comparePeerIds(p, first) < 0) first = p
    if (comparePeerIds(p, gone) > 0 && (next === undefined || comparePeerIds(p, next) < 0)) next = p
  }
  return next ?? first
}

/** The most loaded peer in `loads`, ties broken by the lowest id. */
export function mostLoaded (loads: ReadonlyMap<PeerId, number>, among: ReadonlySet<PeerId>): PeerId | undefined {
  let best: PeerId | undefined
  let bestLoad = -1
  for (const [peer, load] of loads) {
    if (!among.has(peer)) continue
    if (load > bestLoad || (load === bestLoad && best !== undefined && comparePeerIds(peer, best) < 0)) {
      best = peer
      bestLoad = load
    }
  }
  return best
}
