/**
 * One partition of a simulation on threads (experiments/sim/parallel/parallel-simulation.ts):
 * the cores of whole clusters with their event queue and network, run window by window as
 * the coordinator says. A message to a peer of another partition leaves at the network's
 * border once it has crossed its sender's uplink and the wide-area link, encoded with the
 * wire codec, and is imported by that partition at the next barrier. What judges the whole
 * overlay (tree cycles, stability) is recorded for the coordinator; what is per virtual
 * node or per broadcast (deliveries, traffic) is kept here and merged at the end.
 *
 * Every partition runs the whole schedule: actions decide from statuses, names and the
 * scenario's random stream only, so each takes the same decisions and acts on its own
 * peers. Peers of other partitions count as running without a core here.
 */
import { decodeMessage, encodeMessage } from '../../../overlay/codec.ts'
import type { Output } from '../../../overlay/outputs.ts'
import type { NetworkBorder } from '../network.ts'
import type { BcastTrack, RedTrack, ReportInput } from '../report.ts'
import type { Scenario } from '../scenario.ts'
import type { Ev, SimPeer } from '../sim-peer.ts'
import { Simulation } from '../simulation.ts'
import { StreamTraffic } from '../stream-traffic.ts'
import type { StabilitySums } from '../stability.ts'

/** What crossed the border (Crossing.k): a bulk message announced, arriving, a small message, a bulk message lost. */
export const ANNOUNCE = 0
export const BULK = 1
export const SMALL = 2
export const LOST = 3

/** One crossing, as plain data for `postMessage`. `t`: arrival (BULK) or unhindered arrival (SMALL). */
export interface Crossing { k: number, from: number, to: number, lane: number, seq: number, t: number, sizeBytes: number, incarnation: number, msg: Uint8Array | null }

/** Records for the coordinator, in the order this partition made them: [t, kind (0 lat, 1 bw), root, peer, parent or -1]... */
export interface PartitionRecords { parents: number[], sums: Array<[number, StabilitySums]> }

/** A delivery record as plain data. */
export interface DeliveryPart { at: Int32Array, firstMs: Float64Array, delivered: number, duplicates: number, lastDeliveryMs: number }

/** What a partition adds to the report at the end: its counts, and its shares of the tracks and deliveries. */
export type PartitionResult = Pick<ReportInput, 'probes' | 'probesLight' | 'offers' | 'rejected' | 'net' | 'nowMs' | 'violations' | 'leavesTimedOut' | 'joinsFailed' | 'everStarted'> & {
  broadcasts: BcastTrack[]
  /** Traffic counted here for broadcasts rooted in another partition. */
  shadows: BcastTrack[]
  reductions: RedTrack[]
  deliveries: Array<[string, DeliveryPart]>
  /** Per virtual node, 1 if a live peer of this partition owns it. */
  owned: Uint8Array
  running: number
  /** Set by the worker: ms spent in windows, heap in use at the end. */
  busyMs: number
  heapUsedBytes: number
}

/** Per broadcast this partition knows: delivered here, and (if its root is here) done at the root. */
export interface QuietPart { bcasts: Array<[string, number, boolean | null]>, redsOpen: number }

/** Which partition runs peer `i`'s cluster. */
export function partitionOf (cluster: number, count: number): number { return cluster % count }

/** One partition: its share of the peers, the border, and the records. */
export class PartitionSim extends Simulation {
  private readonly exports: Crossing[] = []
  private records: PartitionRecords = { parents: [], sums: [] }
  private seq = 0
  private lastChanges = -1
  private readonly shadows = new Map<string, BcastTrack>()
  private readonly mine: Uint8Array

  constructor (scenario: Scenario, seed: number, readonly index: number, readonly count: number) {
    super(scenario, seed)
    this.mine = new Uint8Array(this.topology.peerCount)
    for (let i = 0; i < this.topology.peerCount; i++) this.mine[i] = partitionOf(this.topology.clusterOf(i), count) === index ? 1 : 0
    // Traffic of broadcasts rooted elsewhere counts on a shadow track, added to the real one at the end.
    this.traffic = new StreamTraffic({ get: (id) => this.bcasts.get(id) ?? this.shadowOf(id) }, (peer) => this.mine[peer] === 0)
    const border: NetworkBorder<Ev> = {
      isRemote: (peer) => this.mine[peer] === 0,
      nextSeq: () => this.seq++,
      announce: (from, to, lane, seq) => { this.exports.push({ k: ANNOUNCE, from, to, lane, seq, t: 0, sizeBytes: 0, incarnation: 0, msg: null }) },
      bulk: (t, from, to, lane, seq, sizeBytes, ev) => { this.exports.push(this.crossing(BULK, t, from, to, lane, seq, sizeBytes, ev)) },
      small: (t, from, to, lane, seq, ev) => { this.exports.push(this.crossing(SMALL, t, from, to, lane, seq, 0, ev)) },
      lost: (from, to, lane, seq) => { this.exports.push({ k: LOST, from, to, lane, seq, t: 0, sizeBytes: 0, incarnation: 0, msg: null }) }
    }
    this.net.border = border
  }

  /** Starts this partition's founders and queues the schedule. */
  start (): void {
    this.begin((i) => this.mine[i] === 1)
  }

  /** Takes what crossed from other partitions, in the order they exported it. */
  importCrossings (crossings: readonly Crossing[]): void {
    for (const c of crossings) {
      if (c.lane < 0 || c.lane > 15) throw new RangeError(`crossing: lane must be an integer in 0..15, got ${c.lane}`)
      switch (c.k) {
        case ANNOUNCE: this.net.importAnnounce(this.now, c.from, c.to, c.lane, c.seq); break
        case BULK: this.net.importBulk(this.now, c.t, c.from, c.to, c.lane, c.seq, c.sizeBytes, this.arrival(c)); break
        case SMALL: this.net.importSmall(this.now, c.t, c.from, c.to, c.lane, c.seq, this.arrival(c)); break
        case LOST: this.net.importLost(this.now, c.from, c.to, c.lane, c.seq); break
        default: throw new Error(`unknown crossing kind ${c.k}`)
      }
    }
  }

  /**
   * Runs the events before `endMs` (and at it, with `inclusive`); returns the time of the
   * next one. With `untilMs` (a partition that is the whole run), it stops, as the one-thread
   * loop does, before the first event past `untilMs` at which the run is quiet.
   */
  runWindow (endMs: number, inclusive: boolean, untilMs?: number): number | undefined {
    for (;;) {
      const t = this.queue.peekTime()
      if (t === undefined || t > endMs || (t === endMs && !inclusive)) return t
      if (untilMs !== undefined && t > untilMs && this.quiet()) return t
      this.now = t
      this.dispatch(this.queue.popItem())
    }
  }

  /** The crossings made since the last call. */
  takeExports (): Crossing[] { return this.exports.splice(0) }

  /** The records made since the last call. */
  takeRecords (): PartitionRecords {
    const r = this.records
    this.records = { parents: [], sums: [] }
    return r
  }

  /** What the coordinator needs to tell whether the whole run is quiet. */
  quietPart (): QuietPart {
    const bcasts: Array<[string, number, boolean | null]> = []
    for (const [id, d] of this.checker.deliveries) bcasts.push([id, d.delivered, null])
    for (const b of this.bcasts.values()) {
      const root = this.peers[this.byName.get(b.root) ?? -1]
      bcasts.push([b.id, 0, b.doneAtRootMs !== null || root?.status !== 'running'])
    }
    // A collective's track is in every partition; only its root's ends it.
    let redsOpen = 0
    for (const r of this.reds.values()) if (r.endMs === null && this.mine[this.byName.get(r.root) ?? -1] === 1) redsOpen++
    return { bcasts, redsOpen }
  }

  /** What this partition adds to the report. */
  result (): PartitionResult {
    const x = this.reportInput()
    return {
      broadcasts: [...x.broadcasts],
      shadows: [...this.shadows.values()],
      reductions: [...x.reductions],
      deliveries: [...this.checker.deliveries].map(([id, d]) => [id, { at: d.at, firstMs: d.firstMs, delivered: d.delivered, duplicates: d.duplicates, lastDeliveryMs: d.lastDeliveryMs }]),
      owned: this.checker.ownedMask(),
      probes: x.probes,
      probesLight: x.probesLight,
      offers: x.offers,
      rejected: x.rejected,
      net: { messages: x.net.messages, bytes: x.net.bytes, wanBytes: x.net.wanBytes },
      nowMs: this.now,
      violations: [...x.violations],
      leavesTimedOut: x.leavesTimedOut,
      joinsFailed: x.joinsFailed,
      everStarted: x.everStarted,
      running: this.running,
      busyMs: 0,
      heapUsedBytes: 0
    }
  }

  protected override after (p: SimPeer): void {
    super.after(p)
    if (this.stability.changes !== this.lastChanges) {
      this.lastChanges = this.stability.changes
      this.records.sums.push([this.now, this.stability.sums])
    }
  }

  protected override output (p: SimPeer, o: Output): void {
    if (o.type !== 'tree') { super.output(p, o); return }
    // Cycles may run through several partitions: the coordinator replays every parent change.
    const root = this.byName.get(o.root)
    if (root === undefined) return
    const parent = o.parent === null ? -1 : this.byName.get(o.parent) ?? -1
    this.records.parents.push(this.now, o.kind === 'bw' ? 1 : 0, root, p.index, parent)
  }

  private crossing (k: number, t: number, from: number, to: number, lane: number, seq: number, sizeBytes: number, ev: Ev): Crossing {
    if (typeof ev === 'function' || ev.k !== 'msg') throw new Error('a run on threads carries only messages across partitions (a leave notice or a refusal crossed; not supported yet)')
    return { k, from, to, lane, seq, t, sizeBytes, incarnation: ev.incarnation, msg: encodeMessage(ev.msg) }
  }

  private arrival (c: Crossing): Ev {
    const msg = decodeMessage(c.msg as Uint8Array)
    // Its acknowledgement and holds are sent (and counted) here: they need to know the stream.
    if (msg.t === 'chunk' && msg.open !== undefined) this.traffic.opened(c.from, msg)
    return { k: 'msg', from: this.peers[c.from] as SimPeer, to: c.to, msg, incarnation: c.incarnation }
  }

  private shadowOf (id: string): BcastTrack {
    let b = this.shadows.get(id)
    if (b === undefined) {
      b = { id, root: '', bytes: 0, tree: '', startMs: 0, doneAtRootMs: null, fallback: 0, messages: 0, bytesSent: 0, streams: 0, stripes: 1, backToBack: null }
      this.shadows.set(id, b)
    }
    return b
  }
}
