/**
 * Holds: how a sender tells a transfer whose receivers are still busy from one they forgot.
 *
 * A peer keeps what it forwarded until each receiver acknowledges its whole part (custody,
 * overlay/streams.ts), and drops a transfer idle for `transferIdleMs`: a receiver that
 * refused the stream, or dropped its own copy, never acknowledges. But a peer that holds
 * every chunk and only waits for acknowledgements gets no chunk any more, and the core
 * cannot see its sends drain: a broadcast whose sending took longer than `transferIdleMs`
 * (300 MB over a 1 MB/s wide-area link) was dropped at its root before its receivers were
 * through, and never acknowledged there (test-slow-huge-broadcast).
 *
 * So a receiver that still holds an unacknowledged stream says so (`hold`), naming how long
 * ago it last saw progress on the transfer: a chunk arriving there, or a hold from its own
 * receivers. Holds go up the way the chunks came, at most once per incoming stream every
 * quarter of `transferIdleMs`, and only with progress newer than the last one reported. The
 * sender counts that progress as activity. Progress only starts at a chunk arriving
 * somewhere, so holds never keep alive a transfer where nothing moves: two peers that hold
 * streams from each other pass the same progress back and forth once, not for ever (its
 * age grows), and both still drop it when it is older than `transferIdleMs`.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { HoldMessage } from './messages.ts'
import type { Transfer } from './stream-state.ts'

/** A receiver tells its sender at most this often (as a fraction of `transferIdleMs`) that it still holds a stream. */
export const HOLD_EVERY_FRACTION = 1 / 4

/** The latest progress known on `t` here: a chunk received, or progress its receivers reported. */
export function progressOf (t: Transfer): number {
  return Math.max(t.lastActivity, t.heldAtMs)
}

/** Whether `t` saw no progress for longer than `idleMs` (it is then dropped). */
export function isIdle (t: Transfer, now: number, idleMs: number): boolean {
  return now - progressOf(t) > idleMs
}

/** A receiver of one of our streams reported progress `ageMs` (validated: >= 0) before `now`. */
export function noteHeld (t: Transfer, now: number, ageMs: number): void {
  t.heldAtMs = Math.max(t.heldAtMs, now - ageMs)
}

/** Tells `t`'s senders that their unacknowledged streams are still held here, where due (see the file comment). */
export function sendHolds (t: Transfer, now: number, everyMs: number, host: { send: (to: PeerId, msg: HoldMessage) => void }): void {
  const progress = progressOf(t)
  for (const inc of t.incoming) {
    if (inc.from === null || inc.acked || progress <= inc.holdProgressMs || now - inc.holdSentAtMs < everyMs) continue
    inc.holdSentAtMs = now
    inc.holdProgressMs = progress
    host.send(inc.from, { t: 'hold', stream: inc.stream, ageMs: Math.max(0, Math.floor(now - progress)) })
  }
}
