/**
 * A hand-driven host for one stream engine (overlay/streams.ts): its ownership view, who is
 * alive, and everything it sends, delivers and rejects, recorded. No trees: what the peer
 * does not own goes point-to-point to the owners (rule III), so a test decides every route.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { OwnershipMap } from '../virtual-nodes/ownership-map.ts'
import { Streams, type StreamHost, type Transfer } from '../overlay/streams.ts'
import type { ChunkMessage, Message, StreamOpen } from '../overlay/messages.ts'

export interface Sent { to: PeerId, msg: Message }

export class HostRig {
  readonly sent: Sent[] = []
  readonly delivered: Array<{ id: string, vnodes: IntervalSet }> = []
  readonly rejected: string[] = []
  readonly done: string[] = []
  readonly dead = new Set<PeerId>()
  owned: IntervalSet
  readonly view: OwnershipMap
  private version = 1
  readonly streams: Streams

  constructor (readonly self: PeerId, vnodes: number, owners: Record<PeerId, IntervalSet>, limits: Partial<ConstructorParameters<typeof Streams>[1]> = {}) {
    this.view = OwnershipMap.fromRecords(vnodes, Object.entries(owners).map(([owner, ranges]) => ({ ranges, owner, version: 0 })))
    this.owned = owners[self] ?? IntervalSet.EMPTY
    const rig = { sent: this.sent, delivered: this.delivered, rejected: this.rejected, done: this.done, dead: this.dead, get owned (): IntervalSet { return owned() } }
    const owned = (): IntervalSet => this.owned
    const view = this.view
    const host: StreamHost = {
      self,
      view,
      owned: () => rig.owned,
      claimed: () => IntervalSet.EMPTY,
      isAlive: (p) => !rig.dead.has(p),
      reachable: (p) => !rig.dead.has(p),
      tree: () => undefined,
      send: (to, msg) => { rig.sent.push({ to, msg }) },
      deliver: (t: Transfer, v) => { rig.delivered.push({ id: t.id, vnodes: v }) },
      routed: () => {},
      routeAcked: () => {},
      partialAway: () => false,
      ackedAway: () => {},
      planCombine: () => new Map(),
      originDone: (t) => { rig.done.push(t.id) },
      wantPark: () => {},
      reject: (r) => { rig.rejected.push(r) },
      knowsOp: () => true
    }
    this.streams = new Streams(host, { maxActiveTransfers: 64, maxHops: 64, maxPayloadBytes: 1 << 20, dedupeCapacity: 64, transferIdleMs: 120_000, fallbackFanout: 2, stripeResendMs: 2000, ...limits })
  }

  /** `ranges` now belong to `owner` in this peer's view (and to this peer's owned set when it is self). */
  give (ranges: IntervalSet, owner: PeerId): void {
    this.view.apply({ ranges, owner, version: ++this.version })
    this.owned = owner === this.self ? this.owned.union(ranges) : this.owned.difference(ranges)
  }

  /** The chunk messages sent to `to` (opens included), in order. */
  chunksTo (to: PeerId): ChunkMessage[] {
    return this.sent.filter((s) => s.to === to && s.msg.t === 'chunk').map((s) => s.msg as ChunkMessage)
  }

  /** The open of the latest stream sent to `to`. */
  lastOpenTo (to: PeerId): { stream: number, open: StreamOpen } | undefined {
    const o = this.chunksTo(to).filter((c) => c.open !== undefined).pop()
    return o === undefined ? undefined : { stream: o.stream, open: o.open as StreamOpen }
  }
}

/** The opening chunk of a stripe stream of a broadcast `id` from `origin` over `chunkCount` one-byte chunks. */
export function stripeOpen (id: string, origin: PeerId, header: IntervalSet, chunkCount: number, stripes: number, stripe: number | undefined, stream: number, index = stripe ?? 0): ChunkMessage {
  return { t: 'chunk', stream, index, data: Uint8Array.of(index), open: { id, origin, mode: 'bw', header, chunkCount, totalBytes: chunkCount, fallback: false, hops: 1, stripes, ...(stripe !== undefined ? { stripe } : {}) } }
}

/** Chunk `index` of stream `stream` (one byte). */
export function chunk (stream: number, index: number): ChunkMessage {
  return { t: 'chunk', stream, index, data: Uint8Array.of(index) }
}
