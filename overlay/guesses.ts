/**
 * Successors this peer's view guessed: virtual nodes whose record in the view is a
 * successor this peer computed for another peer (a take-over with someone else as
 * successor) and that no claim heard since has replaced, each with the version of the
 * record the guess replaced. Nobody told that successor; a hand-off from a peer that
 * really held such a range, newer than what the guess was built on, beats the guess
 * (OwnershipEngine.onHandoff). At most MAX_GUESSES (the oldest is forgotten).
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { OwnershipMap, OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'

/** Guesses remembered; the oldest is forgotten past it. */
export const MAX_GUESSES = 256

export class Guesses {
  private readonly list: Array<{ ranges: IntervalSet, baseVersion: number }> = []

  /** The view now names a guessed successor for `ranges`, replacing a record of `baseVersion`. */
  add (ranges: IntervalSet, baseVersion: number): void {
    if (ranges.isEmpty) return
    this.list.push({ ranges, baseVersion })
    if (this.list.length > MAX_GUESSES) this.list.shift()
  }

  /**
   * A record from elsewhere (or this peer's own claim) was applied to `view`: where the
   * view now names its owner, the record won or confirmed the guess (the real claim of the
   * successor this view guessed ties with the guess), so it is no guess any more.
   */
  heard (view: OwnershipMap, rec: OwnershipRecord): void {
    if (this.list.length === 0) return
    const named = view.partition(rec.ranges).get(rec.owner)
    if (named !== undefined) this.forget(named)
  }

  /** `set` is no guess any more. */
  forget (set: IntervalSet): void {
    if (set.isEmpty) return
    for (let i = this.list.length - 1; i >= 0; i--) {
      const g = this.list[i] as { ranges: IntervalSet, baseVersion: number }
      g.ranges = g.ranges.difference(set)
      if (g.ranges.isEmpty) this.list.splice(i, 1)
    }
  }

  /** Guessed virtual nodes that `view` names as `peer`'s. */
  of (view: OwnershipMap, peer: PeerId): IntervalSet {
    let out = IntervalSet.EMPTY
    for (const g of this.list) out = out.union(g.ranges)
    return out.isEmpty ? out : out.intersection(view.rangesOf(peer))
  }

  /** Guessed virtual nodes whose guess replaced a record older than `version`. */
  below (version: number): IntervalSet {
    let out = IntervalSet.EMPTY
    for (const g of this.list) if (g.baseVersion < version) out = out.union(g.ranges)
    return out
  }
}
