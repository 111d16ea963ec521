/**
 * Helpers for the real-network tests (test/node-integration.test.ts): clusters of real
 * treecast peers (TCP + Noise + Yamux on loopback, in this process), bounded waits, a
 * delivery recorder that counts how many times each virtual node received each payload,
 * and bounded teardown. Nothing here asserts a wall-clock duration: times are measured
 * only to be reported.
 */
import { performance } from 'node:perf_hooks'
import { createTreecast, type CreateTreecastInit, type TreecastNode } from '../node/create-treecast.ts'
import type { DeliveryEvent } from '../node/events.ts'
import type { StreamMode } from '../overlay/messages.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'

/** Resolves after `ms`. */
export async function sleep (ms: number): Promise<void> {
  await new Promise<void>((resolve) => { setTimeout(resolve, ms) })
}

/** `p`, or a rejection naming `what` after `ms`. */
export async function withTimeout<T> (p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([
      p,
      new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`timed out after ${ms} ms: ${what}`)) }, ms) })
    ])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Polls `cond` every `intervalMs` until it holds; throws after `timeoutMs`, with
 * `describe()` (the state that kept it false) in the message. Returns the time waited.
 */
export async function waitFor (cond: () => boolean, opts: { timeoutMs: number, what: string, intervalMs?: number, describe?: () => string }): Promise<number> {
  const t0 = performance.now()
  const interval = opts.intervalMs ?? 50
  for (;;) {
    if (cond()) return performance.now() - t0
    if (performance.now() - t0 > opts.timeoutMs) {
      throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${opts.what}${opts.describe !== undefined ? `: ${opts.describe()}` : ''}`)
    }
    await sleep(interval)
  }
}

/** A short label for a peer in messages: the last characters of its libp2p peer id. */
export function short (id: string): string {
  return id.slice(-6)
}

/** The id of a node, or '(stopped)' when it can no longer say. */
export function idOf (n: TreecastNode): string {
  try { return n.id } catch { return '(stopped)' }
}

/** Options of {@link startCluster}. */
export interface ClusterOptions {
  /** Virtual nodes of the overlay. */
  vnodes: number
  /** Options of peer i (0 founds the overlay). */
  init?: (index: number) => CreateTreecastInit
  /** Longest wait for one join. @default 30000 */
  joinTimeoutMs?: number
}

/** A running cluster and what it took to build. */
export interface Cluster {
  readonly nodes: TreecastNode[]
  readonly vnodes: number
  /** Time from the first start to the last join (ms, for the report). */
  readonly joinMs: number
}

/** Creates and starts one node (not yet a member). */
export async function startNode (init: CreateTreecastInit = {}): Promise<TreecastNode> {
  const n = await createTreecast(init)
  await n.start()
  return n
}

/**
 * Joins `n` through the member that owns the most virtual nodes, so shares stay even
 * (the default join policy halves the contact's share) and joins go through many contacts.
 */
export async function joinMostLoaded (n: TreecastNode, members: readonly TreecastNode[], timeoutMs = 30_000): Promise<void> {
  let contact: TreecastNode | undefined
  for (const m of members) if (contact === undefined || m.owned().size > contact.owned().size) contact = m
  if (contact === undefined) throw new Error('no member to join through')
  await withTimeout(n.join(contact.id), timeoutMs, `join of ${short(idOf(n))} through ${short(contact.id)}`)
}

/**
 * Starts `count` peers: the first bootstraps an overlay of `vnodes` virtual nodes, the
 * others join one after another. On failure every node created so far is stopped.
 */
export async function startCluster (count: number, opts: ClusterOptions): Promise<Cluster> {
  const t0 = performance.now()
  const nodes: TreecastNode[] = []
  try {
    for (let i = 0; i < count; i++) nodes.push(await createTreecast(opts.init?.(i) ?? {}))
    await Promise.all(nodes.map(async (n) => { await n.start() }))
    const first = nodes[0]
    if (first === undefined) throw new Error('a cluster needs at least one peer')
    first.bootstrap(opts.vnodes)
    for (let i = 1; i < count; i++) await joinMostLoaded(nodes[i] as TreecastNode, nodes.slice(0, i), opts.joinTimeoutMs)
  } catch (err) {
    await stopAll(nodes)
    throw err
  }
  return { nodes, vnodes: opts.vnodes, joinMs: performance.now() - t0 }
}

/**
 * Why `nodes` are not a stable overlay (undefined when they are): one of them still
 * probes, some view of the members differs from `nodes`, or the owned sets do not
 * partition 0..V-1.
 */
export function instability (nodes: readonly TreecastNode[], vnodes: number): string | undefined {
  const probing = nodes.filter((n) => n.overlay.probing)
  if (probing.length > 0) return `${probing.length} peer(s) still probing: ${probing.map((n) => short(n.id)).join(' ')}`
  const ids = nodes.map((n) => n.id).sort()
  for (const n of nodes) {
    const view = n.members().sort()
    if (view.join(',') !== ids.join(',')) return `${short(n.id)} sees ${view.length} members [${view.map(short).join(' ')}], expected ${ids.length}`
  }
  return ownershipProblem(nodes, vnodes)
}

/**
 * Waits until `nodes` are stable (see {@link instability}) and stay so for `settleMs`
 * (probing ends, then a late fact can start it again). Returns the time waited (ms).
 */
export async function waitStable (nodes: readonly TreecastNode[], vnodes: number, timeoutMs = 60_000, settleMs = 300): Promise<number> {
  const t0 = performance.now()
  for (;;) {
    const left = timeoutMs - (performance.now() - t0)
    await waitFor(() => instability(nodes, vnodes) === undefined, {
      timeoutMs: Math.max(0, left),
      what: `a stable overlay of ${nodes.length} peers`,
      describe: () => instability(nodes, vnodes) ?? 'stable'
    })
    await sleep(settleMs)
    if (instability(nodes, vnodes) === undefined) return performance.now() - t0
  }
}

/**
 * Why the owned sets of `nodes` do not partition 0..V-1 (undefined when they do):
 * overlaps between two peers, or virtual nodes nobody owns.
 */
export function ownershipProblem (nodes: readonly TreecastNode[], vnodes: number): string | undefined {
  let union = IntervalSet.EMPTY
  for (const n of nodes) {
    const owned = n.owned()
    const overlap = union.intersection(owned)
    if (!overlap.isEmpty) return `${short(n.id)} owns ${overlap.toString()} also owned by another peer`
    union = union.union(owned)
  }
  const all = IntervalSet.range(0, vnodes)
  if (!union.equals(all)) return `nobody owns ${all.difference(union).toString()}; owned outside 0..V-1: ${union.difference(all).toString()}`
  return undefined
}

/** The node that owns virtual node `v` (the first one that says so). */
export function ownerOf (nodes: readonly TreecastNode[], v: number): TreecastNode | undefined {
  return nodes.find((n) => n.owned().has(v))
}

/** Stops every node (abruptly) with a bound on the whole teardown; never throws. */
export async function stopAll (nodes: readonly TreecastNode[], timeoutMs = 20_000): Promise<void> {
  await withTimeout(Promise.allSettled(nodes.map(async (n) => { await n.stop() })), timeoutMs, 'teardown').catch((err: unknown) => {
    console.warn(String(err))
  })
}

// ---- payloads ------------------------------------------------------------------------

/** A payload of `size` bytes whose content depends on `seed` and the offset. */
export function patterned (size: number, seed: number): Uint8Array {
  const out = new Uint8Array(size)
  let x = (seed * 2654435761) >>> 0
  for (let i = 0; i < size; i++) {
    x = (x + 0x9e3779b9) >>> 0
    out[i] = (x ^ (x >>> 13) ^ i) & 0xff
  }
  return out
}

/** FNV-1a over the bytes (with the length), to compare payloads without keeping them. */
export function fingerprint (bytes: Uint8Array): string {
  let h = 0x811c9dc5
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ (bytes[i] as number), 0x01000193)
  return `${bytes.length}:${(h >>> 0).toString(16)}`
}

// ---- delivery recorder ----------------------------------------------------------------

/** One 'deliver' event as recorded. */
export interface Delivery {
  /** Index of the receiving node in the recorder's attach order, and its id. */
  readonly peer: number
  readonly peerId: string
  readonly origin: string
  readonly mode: StreamMode
  readonly vnodes: IntervalSet
  readonly bytes: number
  readonly fingerprint: string
  /** The delivered virtual nodes were all owned by the receiver at delivery time. */
  readonly owned: boolean
  /** performance.now() at delivery. */
  readonly at: number
}

/** Per virtual node, how many times it received a payload. */
export interface DeliveryCount {
  readonly missing: IntervalSet
  readonly duplicated: IntervalSet
  /** Virtual nodes delivered exactly once. */
  readonly once: IntervalSet
}

/**
 * Records every 'deliver' event of the attached nodes, keyed by payload id, and counts
 * per virtual node how many times it was delivered (from `detail.vnodes` ranges).
 */
export class DeliveryRecorder {
  private readonly byId = new Map<string, Delivery[]>()
  private readonly nodes: TreecastNode[] = []
  private readonly peerIds: string[] = []

  constructor (readonly vnodes: number) {}

  /** Records the deliveries of `n` from now on; returns its index. */
  attach (n: TreecastNode): number {
    const index = this.nodes.length
    this.nodes.push(n)
    const peerId = n.id
    this.peerIds.push(peerId)
    n.addEventListener('deliver', (e: CustomEvent<DeliveryEvent>) => {
      const d = e.detail
      let owned: boolean
      try { owned = n.owned().containsAll(d.vnodes) } catch { owned = false }
      const list = this.byId.get(d.id) ?? []
      list.push({ peer: index, peerId, origin: d.origin, mode: d.mode, vnodes: d.vnodes, bytes: d.payload.byteLength, fingerprint: fingerprint(d.payload), owned, at: performance.now() })
      this.byId.set(d.id, list)
    })
    return index
  }

  /** Every delivery of payload `id` (optionally only at the peers `at`). */
  deliveries (id: string, at?: (peer: number) => boolean): Delivery[] {
    const list = this.byId.get(id) ?? []
    return at === undefined ? list : list.filter((d) => at(d.peer))
  }

  /** Payload ids seen so far. */
  ids (): string[] { return [...this.byId.keys()] }

  /** How many times each virtual node had `id` delivered (optionally only at the peers `at`). */
  count (id: string, at?: (peer: number) => boolean): DeliveryCount {
    const counts = new Uint32Array(this.vnodes)
    let outside = IntervalSet.EMPTY
    for (const d of this.deliveries(id, at)) {
      for (const [s, e] of d.vnodes.ranges) {
        if (e > this.vnodes) outside = outside.union(IntervalSet.range(Math.max(s, this.vnodes), e))
        for (let v = s; v < Math.min(e, this.vnodes); v++) counts[v] = (counts[v] as number) + 1
      }
    }
    const missing: number[] = []
    const duplicated: number[] = []
    const once: number[] = []
    counts.forEach((c, v) => { (c === 0 ? missing : c === 1 ? once : duplicated).push(v) })
    return { missing: IntervalSet.of(...missing), duplicated: IntervalSet.of(...duplicated).union(outside), once: IntervalSet.of(...once) }
  }

  /** A one-line description of the deliveries of `id` for failure messages. */
  describe (id: string): string {
    const c = this.count(id)
    const per = this.deliveries(id).map((d) => `${d.peer}:${d.vnodes.toString()}`).join(' ')
    return `missing ${c.missing.toString()} duplicated ${c.duplicated.toString()}; deliveries ${per}`
  }

  /** Waits until every virtual node had `id` delivered at least once. */
  async waitCovered (id: string, timeoutMs: number, at?: (peer: number) => boolean): Promise<number> {
    return await waitFor(() => this.count(id, at).missing.isEmpty, { timeoutMs, what: `delivery of ${id} to every virtual node`, describe: () => this.describe(id) })
  }
}
