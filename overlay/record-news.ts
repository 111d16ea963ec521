/**
 * Ownership records told to peers whose views may lack them: the records that beat one a
 * peer stated (spread to every member), and those that beat a record a peer was sent (told
 * back to its sender). Both close the same gap: a take-over guessed by one view goes to its
 * successor alone, and the views that applied the record it beat, or that guessed another
 * successor, otherwise keep the loser for good (test/migration-fuzz seeds 3181, 7726, 9170).
 */
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { OwnershipMap, OwnershipRecord } from '../virtual-nodes/ownership-map.ts'
import type { FactsMessage } from './messages.ts'

/** What telling needs of the peer around it. */
export interface RecordNewsHost {
  readonly self: PeerId
  readonly view: OwnershipMap
  alive (): Iterable<PeerId>
  vnodeCount (): number
  send (to: PeerId, msg: FactsMessage): void
}

function facts (host: RecordNewsHost, records: OwnershipRecord[]): FactsMessage {
  return { t: 'facts', vnodeCount: host.vnodeCount(), members: [], records, welcome: false }
}

/**
 * Tells every member `records` that beat one this peer stated (a claim, a hand-off's
 * re-claim, an ownership): a yield, or a claim settled under another record. Each member
 * gets those not naming it: an owner named got its hand-off (before it, else it would
 * claim them), and still needs the others (a claim beaten by two owners).
 */
export function spreadRecords (host: RecordNewsHost, records: OwnershipRecord[]): void {
  if (records.length === 0) return
  const owners = new Set(records.map((r) => r.owner))
  const all = facts(host, records)
  for (const p of host.alive()) {
    if (p === host.self) continue
    const rs = owners.has(p) ? records.filter((r) => r.owner !== p) : records
    if (rs.length > 0) host.send(p, rs === records ? all : facts(host, rs))
  }
}

/** Sends `to` the records of this view in `ranges` that name another owner than `owner`, if any (a claim's answer; a lost record's). */
export function tellOthers (host: RecordNewsHost, to: PeerId, ranges: IntervalSet, owner: PeerId): void {
  const other = host.view.recordsIn(ranges).filter((r) => r.owner !== owner)
  if (other.length > 0) host.send(to, facts(host, other))
}

/**
 * Sends `record`'s owner the record: one naming an incarnation older than the one alive, whose own
 * hand-off or notice went to that incarnation. In its own view it claims it or answers with what beat it.
 */
export function tellOwner (host: RecordNewsHost, record: OwnershipRecord): void {
  host.send(record.owner, facts(host, [record]))
}

/**
 * `rec` (naming another peer, `won` where it won) lost here to successors this view guessed and told nobody (`guessed`: over
 * records older than `rec`): each guessed owner alive is told its record, to claim it or answer what beat it. Views that knew
 * different members re-home an orphan (+1) to different successors; the real one's record ties and can lose to the guess, which
 * then, untold, would win for good here and in snapshots sent from here (seed 64537).
 */
export function tellGuessed (host: RecordNewsHost, rec: OwnershipRecord, won: IntervalSet, guessed: IntervalSet): void {
  const lost = guessed.isEmpty ? guessed : rec.ranges.difference(won).intersection(guessed)
  if (lost.isEmpty) return
  const alive = new Set(host.alive())
  for (const r of host.view.recordsIn(lost)) if (r.owner !== host.self && r.owner !== rec.owner && alive.has(r.owner)) tellOwner(host, r)
}
