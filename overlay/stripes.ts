/**
 * Striped broadcasts: one long broadcast over several wide-area paths at once.
 *
 * A bandwidth tree enters each other cluster through one wide-area edge, so a broadcast
 * along it gets one wide-area link's rate into every cluster: a third of the minimum cut
 * with four equal clusters, whose peers could also be fed through the two other clusters'
 * links (fig7; Edmonds' branching theorem says a broadcast can run at the minimum cut by
 * packing spanning arborescences). With the tree's cluster entries known at the root
 * (trees/tree-entries.ts: e_1..e_k, each with the virtual nodes its cluster's part of the
 * tree reaches, R_1..R_k), the root deals the chunks into k stripes, chunk i into stripe
 * i mod k, and:
 *
 * - sends every chunk along its own tree for its own cluster's part (the header minus
 *   R_1..R_k), as an unstriped broadcast;
 * - sends stripe j straight to e_j with the header R_1 ∪ … ∪ R_k, telling it to relay
 *   R_m to e_m for every m ≠ j;
 * - each entry routes what it gets for its own cluster down its part of the tree.
 *
 * Stripe j thus crosses the link from the root's cluster to cluster j once, and the links
 * from cluster j to every other cluster once: every directed wide-area link carries one
 * stripe, and every cluster receives k stripes through k links. Inside a cluster every
 * stripe follows the same tree, so its peers forward k times a stripe's rate: the
 * bandwidth tree's fan-out is capped (`bwMaxChildren`).
 *
 * Correctness does not depend on the plan being right: each stripe is routed by 003's
 * header rules (a part that an entry's subtree no longer reaches goes on by rule III), the
 * stripes of one broadcast share one transfer (its delivered sets, its custody), and a
 * peer delivers its virtual nodes once it holds every chunk. A part a peer passes on when
 * it hands its virtual nodes over goes with every chunk, whatever stripe brought it.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeEntry } from '../trees/tree-ops.ts'
import type { StreamOpen, StripeRelay } from './messages.ts'
import type { Route, Transfer } from './streams.ts'
import { tagsOverlap } from './cluster-tag.ts'

/** Most stripes one broadcast is dealt into (and most relays a stream names). */
export const MAX_STRIPES = 16

/** Number of chunks of stripe `stripe` when `chunkCount` chunks are dealt into `stripes`. */
export function stripeChunkCount (chunkCount: number, stripes: number, stripe: number): number {
  if (stripe >= chunkCount) return 0
  return Math.floor((chunkCount - 1 - stripe) / stripes) + 1
}

/** The chunks a stream opened with `open` carries: all of them, or its stripe's. */
export function streamChunkCount (open: Pick<StreamOpen, 'chunkCount' | 'stripes' | 'stripe'>): number {
  return open.stripe === undefined ? open.chunkCount : stripeChunkCount(open.chunkCount, open.stripes ?? 1, open.stripe)
}

/** A striped broadcast as its origin sends it. */
export interface StripePlan {
  /** What the origin routes along its own tree with every chunk: its own cluster's part. */
  readonly local: IntervalSet
  /** Stripe j: the entry it goes to first, the header it carries there, and what that entry relays. */
  readonly stripes: ReadonlyArray<{ readonly to: PeerId, readonly header: IntervalSet, readonly relay: readonly StripeRelay[] }>
}

/**
 * Plans a striped broadcast of `header` from this peer (`own`: its virtual nodes), given
 * its bandwidth tree's cluster entries. Entries that are gone, this peer, or whose part of
 * `header` is empty are skipped, and parts are made disjoint (first entry first: reports
 * under way may overlap). Null when fewer than two parts remain, or more than `maxStripes`
 * stripes: then the tree alone carries it.
 *
 * Entries whose cluster tags overlap (overlay/cluster-tag.ts) are one cluster entered
 * twice: they share one stripe, or two stripes would share that cluster's wide-area link.
 * The stripe goes to the group's first entry, which passes the others' parts on inside the
 * cluster, and the relays of the other stripes to that entry name them too (nested
 * relays), so every cluster still receives each chunk once over the wide area. When every
 * entry is in one group (a single other cluster), each still gets its own stripe: half
 * stripes over one link beat the tree's two whole copies.
 */
export function planStripes (header: IntervalSet, own: IntervalSet, entries: readonly TreeEntry[], self: PeerId, isAlive: (p: PeerId) => boolean, maxStripes: number): StripePlan | null {
  const parts: Array<{ peer: PeerId, part: IntervalSet }> = []
  let far = IntervalSet.EMPTY
  for (const e of entries) {
    if (e.peer === self || !isAlive(e.peer) || parts.some((p) => p.peer === e.peer)) continue
    const part = e.reach.intersection(header).difference(own).difference(far)
    if (part.isEmpty) continue
    parts.push({ peer: e.peer, part })
    far = far.union(part)
  }
  const groups = clusterGroups(parts, entries)
  const dealt = groups.length >= 2 ? groups : parts.map((p) => [p])
  if (parts.length < 2 || dealt.length > Math.min(maxStripes, MAX_STRIPES)) return null
  const rest = (g: Part[]): StripeRelay[] => g.slice(1).map((q) => ({ to: q.peer, header: q.part }))
  const relayTo = (g: Part[]): StripeRelay => {
    const first = g[0] as Part
    return g.length === 1 ? { to: first.peer, header: first.part } : { to: first.peer, header: IntervalSet.unionAll(g.map((q) => q.part)), relay: rest(g) }
  }
  return {
    local: header.difference(far),
    stripes: dealt.map((g, j) => ({
      to: (g[0] as Part).peer,
      header: far,
      relay: [...rest(g), ...dealt.filter((_, m) => m !== j).map(relayTo)]
    }))
  }
}

interface Part { readonly peer: PeerId, readonly part: IntervalSet }

/** `parts` grouped by overlapping cluster tags (transitively), in the order of their first part. */
function clusterGroups (parts: readonly Part[], entries: readonly TreeEntry[]): Part[][] {
  const tagOf = (peer: PeerId): readonly PeerId[] | undefined => entries.find((e) => e.peer === peer)?.near
  const groups: Array<{ parts: Part[], tags: Array<readonly PeerId[]> }> = []
  for (const p of parts) {
    const tag = tagOf(p.peer)
    const joined = groups.filter((g) => g.tags.some((t) => tagsOverlap(t, tag)))
    const into = joined[0] ?? { parts: [], tags: [] }
    if (joined.length === 0) groups.push(into)
    into.parts.push(p)
    if (tag !== undefined) into.tags.push(tag)
    // A part that joins two groups merges them (the later into the first).
    for (const other of joined.slice(1)) {
      into.parts.push(...other.parts)
      into.tags.push(...other.tags)
      groups.splice(groups.indexOf(other), 1)
    }
  }
  return groups.map((g) => g.parts)
}

/** Whether `t` holds every chunk of `stripe` (undefined: every chunk). */
export function hasChunks (t: Transfer, stripe: number | undefined): boolean {
  // Every chunk here (the origin's own counts no stripes): every stripe's too.
  if (t.received === t.chunkCount) return true
  if (stripe === undefined || t.stripeReceived === null) return false
  return t.stripeReceived[stripe] === stripeChunkCount(t.chunkCount, t.stripes, stripe)
}

/**
 * Whether something here still needs chunks of `stripe` (undefined: of any): virtual nodes
 * waiting for the payload, or an open route that carries them, other than a route to
 * `except`. A route of one stripe whose chunks are all here needs none: three leavers that
 * passed parts of one stripe round a cycle each waited for the next one's acknowledgement
 * until their leave timed out (a review's striped fuzz, seed 812).
 */
export function chunksNeeded (t: Transfer, stripe: number | undefined, except: PeerId | null = null): boolean {
  for (const i of t.incoming) {
    if (!i.pending.isEmpty) return true
    for (const r of i.routes) {
      if (r.acked || r.to === except || (r.stripe !== undefined && stripe !== undefined && r.stripe !== stripe)) continue
      if (r.stripe !== undefined && hasChunks(t, r.stripe)) continue
      return true
    }
  }
  return false
}

/** A remote open's stripe fields make sense: a count of 2..MAX_STRIPES, a stripe below it with chunks, relays only on a stripe. */
export function validStripes (o: StreamOpen): boolean {
  if (o.stripes === undefined) return o.stripe === undefined && o.relay === undefined
  if (!Number.isInteger(o.stripes) || o.stripes < 2 || o.stripes > MAX_STRIPES || o.reduce !== undefined || o.mode === 'direct') return false
  if (o.stripe !== undefined && (!Number.isInteger(o.stripe) || o.stripe < 0 || o.stripe >= o.stripes || o.stripe >= o.chunkCount)) return false
  return o.relay === undefined || (o.stripe !== undefined && o.relay.length < MAX_STRIPES)
}

/** The open of route `r`'s stream (built field by field: one per chunk-0 sent, on the hot path). */
export function openOf (t: Transfer, r: Route, hops: number): StreamOpen {
  const o: { -readonly [K in keyof StreamOpen]: StreamOpen[K] } = { id: t.id, origin: t.origin, mode: t.mode, header: r.header, chunkCount: t.chunkCount, totalBytes: t.totalBytes, fallback: r.fallback, hops }
  if (t.tree !== t.origin) o.tree = t.tree
  if (t.reduce !== undefined) o.reduce = t.reduce
  if (r.combine !== undefined) o.combine = r.combine
  if (t.stripes > 1) o.stripes = t.stripes
  if (r.stripe !== undefined) o.stripe = r.stripe
  if (r.relay !== undefined && r.relay.length > 0) o.relay = r.relay
  return o
}
