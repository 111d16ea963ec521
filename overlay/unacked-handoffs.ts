/**
 * Hand-offs this peer sent and that were not acknowledged yet, by receiver, with their
 * ranges, oldest first (a receiver acknowledges in the order it got them: one ordered
 * control lane per pair). A leaver waits for them. A receiver that left gracefully may
 * still acknowledge (it passes what reaches it while leaving on to its own successor), so
 * its hand-offs are known lost only when its connection closes after its last word: what
 * they carried is then the successor rule's, and their delivered marks are sent to whoever
 * the view names there (OwnershipEngine.connectionLost). Sans-IO.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'

export class UnackedHandoffs {
  private readonly byReceiver = new Map<PeerId, IntervalSet[]>()

  /** Receivers with a hand-off not acknowledged yet. */
  get size (): number { return this.byReceiver.size }

  /** A hand-off of `ranges` went to `to`. */
  sent (to: PeerId, ranges: IntervalSet): void {
    const list = this.byReceiver.get(to)
    if (list === undefined) this.byReceiver.set(to, [ranges])
    else list.push(ranges)
  }

  /** `from` acknowledged its oldest hand-off. */
  acked (from: PeerId): void {
    const list = this.byReceiver.get(from)
    list?.shift()
    if (list?.length === 0) this.byReceiver.delete(from)
  }

  /** The ranges of the hand-offs to `to` not acknowledged yet (it had not got them when it sent what arrives from it now). */
  to (to: PeerId): IntervalSet {
    let out = IntervalSet.EMPTY
    for (const r of this.byReceiver.get(to) ?? []) out = out.union(r)
    return out
  }

  /** `to` is gone: the ranges of its hand-offs not acknowledged (forgotten here). */
  take (to: PeerId): IntervalSet[] {
    const list = this.byReceiver.get(to) ?? []
    this.byReceiver.delete(to)
    return list
  }
}
