/**
 * Messages from strangers: senders with no entry in this peer's member list. A stranger
 * is never declared dead or gone here, so anything keyed by its id would stay for ever;
 * and the ids it names inside its messages (a check's origin, a result's path) need not
 * be peers at all, while a send to an id makes the real node dial it. A joiner is
 * announced by its contact before it can probe anyone, so a member almost never speaks
 * as a stranger; when it does, what is refused here costs it a retry, not correctness.
 *
 * Refused from strangers: tree operations (one that names this peer its parent, `adopt`
 * or `reach`, is told it is not: trees/tree-ops.ts `disownsFor`, without waiting for an
 * answer; a `disown` gets the `detach` its sender waits for), and the messages that only
 * a member has reason to send and that make state or work here: `resend` (a stripe relay
 * asking for a striped payload again), `reduce-ack` (it would be watched for liveness as
 * an awaited peer) and `pull` (it would make the application compute its contribution and
 * fan out to the other owners). Everything else is handled as from anyone: joins, facts,
 * hand-offs, probes (answered, not measured: overlay/probing.ts `requested`), stream data
 * and partial results (any peer that can connect is believed, README "Known limits"; the
 * fuzz test, test/core-fuzz.test.ts, checks that strangers' data cannot break exactly-once
 * delivery).
 */
import { disownsFor, type TreeOp } from '../trees/tree-ops.ts'
import type { Message } from './messages.ts'

/** Disowns sent to a stranger for one message at most. */
export const MAX_STRANGER_DISOWNS = 1024

const REFUSED: ReadonlySet<Message['t']> = new Set(['tree', 'resend', 'reduce-ack', 'pull'])

/** Whether a stranger's `msg` is refused (dropped, and counted by the caller). */
export function refusedFromStranger (msg: Message): boolean {
  return REFUSED.has(msg.t)
}

/**
 * The tree operations that answer a stranger's tree message, once per tree: its adopts and
 * reaches disowned, its disowns answered with a detach (a new incarnation that does not know
 * this peer yet may be disowned by it, and the disowner waits for that answer).
 */
export function strangerDisowns (msg: Message): TreeOp[] {
  if (msg.t !== 'tree') return []
  const seen = new Set<string>()
  const out: TreeOp[] = []
  for (const op of disownsFor(msg.ops)) {
    const key = `${op.op}:${op.kind}:${op.root}`
    if (seen.has(key)) continue
    seen.add(key)
    out.push(op)
    if (out.length >= MAX_STRANGER_DISOWNS) break
  }
  return out
}
