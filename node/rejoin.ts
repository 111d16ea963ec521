/**
 * Rejoining after an eviction. A peer the others declared dead while it was alive (it
 * hung, its event loop stalled past the failure-detection timeout, a partition healed) is
 * out: its old incarnation's ranges were taken over and its messages are dropped. A library
 * peer rejoins by itself, as a restarted daemon does: a new incarnation joins through a
 * member it still knows, asking for the virtual nodes it owned when it was evicted.
 * Each attempt is a new incarnation (the restart rule the overlay already has: a higher
 * incarnation supersedes every fact and record of a lower one), and a joining core takes
 * the welcome of its own contact only, so a late answer to an earlier attempt is dropped.
 */
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'

/** What a rejoin needs of the node. */
export interface RejoinHost {
  /** A fresh core with a new incarnation, then a join through `contact` asking for `want`; resolves once joined. */
  joinAfresh: (contact: string, want: IntervalSet) => Promise<void>
  /** False once the node stops: no further attempt. */
  running: () => boolean
}

/** How a rejoin ended. */
export type RejoinOutcome =
  | { readonly ok: true, readonly contact: string, readonly attempts: number }
  | { readonly ok: false, readonly attempts: number, readonly errors: readonly string[] }

/**
 * The members to try, in a random order (`random` in [0,1)): every member of `members`
 * except `self`. Members the evicted peer still counted as alive; some may be gone too.
 */
export function rejoinContacts (members: Iterable<string>, self: string, random: () => number): string[] {
  const out = [...members].filter((m) => m !== self)
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    const t = out[i] as string
    out[i] = out[j] as string
    out[j] = t
  }
  return out
}

/**
 * Tries `contacts` in order, at most `attempts` of them, until a join succeeds. Stops
 * early when the node stops. Never throws: the outcome lists each failure's message.
 */
export async function rejoin (host: RejoinHost, contacts: readonly string[], want: IntervalSet, attempts: number): Promise<RejoinOutcome> {
  const errors: string[] = []
  let tried = 0
  for (const contact of contacts) {
    if (tried >= attempts || !host.running()) break
    tried++
    try {
      await host.joinAfresh(contact, want)
      return { ok: true, contact, attempts: tried }
    } catch (err) {
      errors.push(`${contact}: ${(err as Error).message}`)
    }
  }
  if (contacts.length === 0) errors.push('no member left to join through')
  return { ok: false, attempts: tried, errors }
}
