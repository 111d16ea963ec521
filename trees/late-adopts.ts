/**
 * Adopts an old incarnation sent before it crashed, still on the wire when its restart is
 * heard of (messages carry no incarnation). Taken, such an adopt makes the new incarnation,
 * which points elsewhere or nowhere, a child here for ever: its old virtual nodes in this
 * peer's reach, a reduction here waiting for it. So from the restart on, an adopt from that
 * peer is refused (a disown, which the new incarnation answers with a detach) until an op
 * its new incarnation numbered arrives (a check it started, an unlock of one): links are
 * FIFO, so nothing of the old one follows. A new incarnation's adopt here always comes after
 * its check, and its unlock in the same message unless this peer is the root (whose answer
 * may then be refused once: the new incarnation tries again). The hold ends when the peer
 * is heard of as gone (the table refuses adopts from peers not alive: a leaver commits no
 * more), or restarts again (a new hold). Likewise a late reach from a gone peer that is no
 * child here is disowned but not held unanswered: it would never answer.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeOp } from './tree-ops.ts'

/** Restarted peers whose old incarnation's ops may still arrive, at most (oldest dropped). */
export const MAX_LATE_ADOPT_PEERS = 1024

/** Restarted peers whose old incarnation's adopts may still be on the wire. */
export class LateAdopts {
  private readonly held = new Map<PeerId, (id: number) => boolean>()

  /** `peer` restarted (`isNew` tells its new incarnation's check ids), or is gone (undefined: the hold ends). */
  hold (peer: PeerId, isNew: ((id: number) => boolean) | undefined): void {
    this.held.delete(peer)
    if (isNew === undefined) return
    if (this.held.size >= MAX_LATE_ADOPT_PEERS) this.held.delete(this.held.keys().next().value as PeerId)
    this.held.set(peer, isNew)
  }

  /** An op from `from`: one its new incarnation numbered ends the hold. */
  heard (from: PeerId, op: TreeOp): void {
    if (this.held.size === 0) return
    const isNew = this.held.get(from)
    if (isNew !== undefined && (op.op === 'check' || op.op === 'unlock') && op.origin === from && isNew(op.id)) this.held.delete(from)
  }

  /** Whether an adopt from `from` may be its old incarnation's. */
  isLate (from: PeerId): boolean {
    return this.held.size > 0 && this.held.has(from)
  }
}
