/**
 * Orphan records a view re-homed (successor rule, ORPHAN_VERSION_STEP) to other peers, by
 * assignee. Nobody tells such a peer, which claims nothing. Views that disagree on who is
 * alive pick different successors, and the one a view picked may be leaving already (its
 * departure not known there yet). Remembered so that when it turns out to be gone the
 * orphan is re-homed again (OwnershipEngine.rehomeOrphansOf). Sans-IO, bounded.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipRecord } from '../virtual-nodes/ownership-map.ts'

/** Orphan records remembered per assignee; older ones are forgotten. */
export const MAX_ORPHAN_RECORDS = 64

/** Orphan records by the peer this view re-homed them to. */
export class Orphans {
  private readonly byAssignee = new Map<PeerId, OwnershipRecord[]>()

  /** This view re-homed `record` to `assignee`. */
  remember (assignee: PeerId, record: OwnershipRecord): void {
    let list = this.byAssignee.get(assignee)
    if (list === undefined) { list = []; this.byAssignee.set(assignee, list) }
    list.push(record)
    if (list.length > MAX_ORPHAN_RECORDS) list.shift()
  }

  /** The records re-homed to `assignee`, forgotten here. */
  take (assignee: PeerId): OwnershipRecord[] {
    const list = this.byAssignee.get(assignee) ?? []
    this.byAssignee.delete(assignee)
    return list
  }

  /** Forgets what was re-homed to `assignee` (it is alive again, or dead: its ranges are taken over anyway). */
  forget (assignee: PeerId): void {
    this.byAssignee.delete(assignee)
  }
}
