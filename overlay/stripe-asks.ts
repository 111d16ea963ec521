/**
 * Stripe plans for origins that root no trees. A long broadcast is striped along the
 * cluster entries of the bandwidth tree it takes (overlay/stripes.ts), and only that tree's
 * root knows them: cluster entries travel up the tree with the reach sets
 * (trees/tree-entries.ts). A peer that roots no trees (`treeRootStride`,
 * overlay/tree-roots.ts) therefore asks its tree root for them (`entries-req`), holds the
 * broadcast until the answer (`entries-rep`: one round trip, inside its cluster as a rule),
 * and then plans the stripes from itself with those entries, exactly as the tree root would
 * for its own broadcast: its own cluster's part along the tree (up and down from its place
 * in it), stripe j straight to entry j. Without an answer within `stripeAskTimeoutMs` (a
 * tree root that died, or an older peer that does not know the question) it sends the
 * broadcast unstriped, as before.
 *
 * Correctness does not depend on the entries being fresh: headers stay disjoint interval
 * sets routed by 003's rules, whatever the plan (overlay/stripes.ts).
 */
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeEntry } from '../trees/tree-ops.ts'
import type { BroadcastPlan } from './broadcast-plan.ts'
import type { Message } from './messages.ts'
import { planStripes, type StripePlan } from './stripes.ts'

/** Broadcasts one peer holds for entries at most; beyond, new ones go unstriped at once. */
export const MAX_HELD_BROADCASTS = 64

/** What the asks need from the peer around them. */
export interface StripeAskHost {
  readonly self: PeerId
  send (to: PeerId, msg: Message): void
  /** Starts held broadcast `id` (with its stripes, if any). */
  originate (now: number, id: string, plan: BroadcastPlan, stripes: StripePlan | undefined): void
  /** Arms a deadline; its expiry calls {@link StripeAsks.onTimeout} with `id`. */
  setTimer (at: number, id: string): void
  owned (): IntervalSet
  isAlive (peer: PeerId): boolean
  reject (reason: string): void
}

/** Limits of the asks. */
export interface StripeAskLimits {
  /** `stripeAskTimeoutMs`: 0 never asks. */
  readonly timeoutMs: number
  /** `stripeMaxCount`. */
  readonly maxStripes: number
  /** `stripeMinBytes`: shorter broadcasts are not striped. */
  readonly minBytes: number
}

/** Broadcasts held for their tree root's entries. */
export class StripeAsks {
  private readonly held = new Map<string, BroadcastPlan>()

  constructor (private readonly host: StripeAskHost, private readonly limits: StripeAskLimits) {}

  /** Number of broadcasts held. */
  get size (): number { return this.held.size }

  /**
   * Starts broadcast `id` as planned, or, when it is long, takes the bandwidth tree of
   * another (live) root and may be striped, holds it and asks that root for its entries.
   */
  start (now: number, id: string, plan: BroadcastPlan): void {
    if (!this.shouldAsk(plan)) { this.host.originate(now, id, plan, plan.stripes); return }
    this.held.set(id, plan)
    this.host.send(plan.tree, { t: 'entries-req', id })
    this.host.setTimer(now + this.limits.timeoutMs, id)
  }

  private shouldAsk (plan: BroadcastPlan): boolean {
    if (plan.mode !== 'bw' || plan.tree === this.host.self || plan.totalBytes < this.limits.minBytes || plan.stripes !== undefined) return false
    if (this.limits.timeoutMs <= 0 || this.limits.maxStripes < 2 || plan.chunks.length < 2) return false
    return this.held.size < MAX_HELD_BROADCASTS && this.host.isAlive(plan.tree)
  }

  /** The tree root answered: stripe broadcast `id` along its entries (unstriped if they make no plan). */
  onEntries (now: number, from: PeerId, id: string, entries: readonly TreeEntry[]): void {
    const plan = this.held.get(id)
    if (plan === undefined || plan.tree !== from) { this.host.reject('unknown-entries'); return }
    this.held.delete(id)
    const stripes = planStripes(plan.header, this.host.owned(), entries, this.host.self, (p) => this.host.isAlive(p), Math.min(this.limits.maxStripes, plan.chunks.length))
    this.host.originate(now, id, plan, stripes ?? undefined)
  }

  /** No answer in time: broadcast `id` goes unstriped (nothing if it went already). */
  onTimeout (now: number, id: string): void {
    const plan = this.held.get(id)
    if (plan === undefined) return
    this.held.delete(id)
    this.host.originate(now, id, plan, undefined)
  }

  /** Sends every held broadcast unstriped now (this peer is leaving). */
  releaseAll (now: number): void {
    const all = [...this.held]
    this.held.clear()
    for (const [id, plan] of all) this.host.originate(now, id, plan, undefined)
  }
}
