/**
 * The data plane of one peer: its streams (broadcast and point-to-point, overlay/streams.ts)
 * and its reductions (overlay/reduction.ts), wired to each other. A reduction's start
 * travels as a stream, so the two call into each other: a routed start makes the
 * reduction wait for the peers it went to, an acknowledged start tells it what they
 * cover, a partial sent away acknowledges the start early, and sibling combining plans
 * come from the near peers. Everything else they need from the peer (membership,
 * ownership, trees, outputs, timers) comes through {@link DataPlaneInit}, so the core
 * (overlay/core.ts) only says what it has. Sans-IO like the rest of overlay/.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { OwnershipMap } from '../virtual-nodes/ownership-map.ts'
import type { TreeTable } from '../trees/tree-table.ts'
import type { CoreConfig } from './config.ts'
import type { Membership } from './membership.ts'
import type { Message, ReduceStart } from './messages.ts'
import type { Output } from './outputs.ts'
import type { OpRegistry } from './reduce-ops.ts'
import { planCombine } from './combine-plan.ts'
import { claimFresh, latRoute } from './collective.ts'
import { Reductions, type ContributeFn } from './reduction.ts'
import { Streams } from './streams.ts'

/** What the data plane needs from the peer around it. */
export interface DataPlaneInit {
  readonly self: PeerId
  readonly config: CoreConfig
  readonly members: Membership
  readonly trees: TreeTable
  readonly ops: OpRegistry
  readonly contribute: ContributeFn
  now (): number
  view (): OwnershipMap
  vnodeCount (): number
  owned (): IntervalSet
  claimed (): IntervalSet
  /** A peer that left and whose virtual nodes have all been handed over (no longer reachable). */
  isDeparted (peer: PeerId): boolean
  /** Which peers are near this one (for sibling combining). */
  nearTest (): (peer: PeerId) => boolean
  /** Sends at once. */
  send (to: PeerId, msg: Message): void
  /** Sends at the end of the current event. */
  sendDeferred (to: PeerId, msg: Message): void
  emit (o: Output): void
  reduceTimer (at: number, id: string): void
  wantPark (): void
  reject (reason: string): void
}

/** The peer's streams and reductions, each the other's partner. */
export function createDataPlane (init: DataPlaneInit): { streams: Streams, reductions: Reductions } {
  const { self, config, members, trees } = init
  const isAlive = (p: PeerId): boolean => members.isAlive(p)
  // The two hosts call each other; the streams' host only after both exist.
  // eslint-disable-next-line prefer-const -- declared before the streams, assigned once after them
  let reductions: Reductions
  const streams = new Streams({
    self,
    get view () { return init.view() },
    owned: () => init.owned(),
    claimed: () => init.claimed(),
    isAlive,
    reachable: (p) => isAlive(p) || (members.statusOf(p) === 'left' && !init.isDeparted(p)),
    tree: (kind, root) => trees.get(kind, root),
    send: (to, m) => init.send(to, m),
    deliver: (t, vnodes) => {
      if (t.reduce === undefined) init.emit({ type: 'deliver', id: t.id, origin: t.origin, mode: t.mode, vnodes, chunks: t.chunks as Uint8Array[], totalBytes: t.totalBytes })
    },
    routed: (t, inc, fresh, fwd) => {
      if (t.reduce !== undefined) reductions.onRouted(init.now(), t.id, t.origin, t.reduce, inc.from, fresh, fwd, inc.combine)
    },
    routeAcked: (t, to, header, away) => { if (t.reduce !== undefined && !away) reductions.onStartAcked(t.id, to, header) },
    partialAway: (t, from) => reductions.partialAway(t.id, from),
    // At once, ahead of the partial (deferred to the end of the event): announced after it, collectors sent up early in test/core.test.ts's star.
    ackedAway: (t, from) => { const a = reductions.announcement(t.id, from); if (a !== undefined) init.send(a.to, a.msg) },
    planCombine: (t, children) => config.reduceCombine && (t.reduce?.length ?? 0) * 8 >= config.reduceCombineMinBytes ? planCombine(children, init.nearTest()) : new Map(),
    originDone: (t) => { if (t.reduce === undefined && t.mode !== 'direct') init.emit({ type: 'broadcast-done', id: t.id }) },
    wantPark: () => init.wantPark(),
    reject: (r) => init.reject(r),
    knowsOp: (op) => init.ops.has(op)
  }, config)
  reductions = new Reductions({
    self,
    get view () { return init.view() },
    vnodeCount: () => init.vnodeCount(),
    owned: () => init.owned(),
    isAlive,
    inFlight: (id) => streams.inFlight(id),
    // Partial results go out at the end of the event, after the acknowledgement of the
    // start that caused them: a long partial would otherwise hold the acknowledgement
    // back on the same link, and the receiver would not know the partial is under way.
    send: (to, m) => { if (to === self) init.reject('send-to-self'); else init.sendDeferred(to, m) },
    contribute: (id, start, v) => contribution(init, id, start, v),
    ops: init.ops,
    timeoutMs: () => Math.max(config.reduceTimeoutMinMs, config.reduceTimeoutFactor * trees.maxDistMs()),
    setTimer: (at, id) => init.reduceTimer(at, id),
    reduced: (id, value, covered, startedAt) => init.emit({ type: 'reduced', id, value, covered, startedAt }),
    failed: (id, missing) => init.emit({ type: 'reduce-failed', id, missing }),
    reject: (r) => init.reject(r),
    route: (root) => latRoute(trees, isAlive, root),
    claim: (id, v) => claimFresh(streams.delivered, id, v)
  }, config.reduceRetryMs, config.reduceMaxDurationMs, undefined, config.maxActiveTransfers)
  return { streams, reductions }
}

/**
 * The application's contribution, checked: anything but a Float64Array of the reduction's
 * length counts as NaN in every element, and is counted (`bad-contribution`). Taken as it
 * was, an array of another length made a result silently shorter or NaN-padded at the root
 * and its partials rejected elsewhere, and a throw would let a remote start (whose length
 * the application may not expect) crash the peer.
 */
function contribution (init: DataPlaneInit, id: string, start: ReduceStart, vnodes: IntervalSet): Float64Array {
  let v: unknown
  try { v = init.contribute(id, start, vnodes) } catch { v = undefined }
  if (v instanceof Float64Array && v.length === start.length) return v
  init.reject('bad-contribution')
  return new Float64Array(start.length).fill(NaN)
}
