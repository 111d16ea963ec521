/**
 * Static description of the simulated network: clusters of peers (LANs), round-trip
 * times inside and between clusters, link rates and receiver CPU costs. Re-exported by
 * network.ts, which is the module to import.
 */
import { InvalidTopologyError } from './errors.ts'
import { unknownKey } from '../../overlay/unknown-keys.ts'

/** Intra-cluster RTT default: a few hundred microseconds (003 §V). */
export const DEFAULT_INTRA_RTT_MS = 0.3
/** Inter-cluster RTT default. */
export const DEFAULT_INTER_RTT_MS = 6
/** Peer NIC rate default: 1 Gb/s. */
export const DEFAULT_PEER_LINK_BYTES_PER_SEC = 125_000_000
/** Shared wide-area link rate default: 100 Mb/s. */
export const DEFAULT_WAN_LINK_BYTES_PER_SEC = 12_500_000
/** Receiver CPU cost per message default. */
export const DEFAULT_PER_MESSAGE_COST_MS = 0.005
/** Receiver CPU cost per byte default. */
export const DEFAULT_PER_BYTE_COST_MS = 0
/** One Ethernet MTU: a message that fits in a packet interleaves with bulk flows. */
export const DEFAULT_SMALL_MESSAGE_BYTES = 1500

/** One cluster (a LAN) of a topology. */
export interface ClusterInit {
  /** Unique, non-empty name. */
  name: string
  /** Number of peers, an integer >= 1. */
  peers: number
}

/** Topology options; everything but `clusters` has a default. */
export interface TopologyInit {
  /** The clusters, at least one. Peers are numbered 0..N-1 cluster by cluster, in this order. */
  clusters: readonly ClusterInit[]
  /**
   * RTT between two peers of the same cluster: one value, or one per cluster.
   * @default 0.3
   */
  intraRttMs?: number | readonly number[]
  /**
   * RTT between peers of different clusters: one value, or a symmetric cluster×cluster
   * matrix whose diagonal is ignored.
   * @default 6
   */
  interRttMs?: number | readonly (readonly number[])[]
  /**
   * Each peer's full-duplex NIC rate; uplink and downlink are independent.
   * @default 125_000_000
   */
  peerLinkBytesPerSec?: number
  /**
   * Rate of the one wide-area link each unordered cluster pair shares, in each direction:
   * one value, or a symmetric cluster×cluster matrix whose diagonal is ignored.
   * @default 12_500_000
   */
  wanLinkBytesPerSec?: number | readonly (readonly number[])[]
  /**
   * Receiver CPU time per message (the CPU is a FIFO per peer).
   * @default 0.005
   */
  perMessageCostMs?: number
  /**
   * Receiver CPU time per byte.
   * @default 0
   */
  perByteCostMs?: number
  /**
   * Messages up to this size model packet-level interleaving: they do not wait behind
   * other flows' queued bulk data (only behind earlier messages of the same peer pair).
   * 0 turns this off (every message queues FIFO).
   * @default 1500
   */
  smallMessageBytes?: number
  /**
   * How a wide-area link serves the flows that cross it (a flow is one lane of a directed
   * peer pair, like one stream of a connection): 'fair' takes one message from each
   * backlogged flow in turn (like TCP connections sharing a bottleneck and yamux streams
   * sharing a connection; the real-network emulator is round-robin too), 'fifo' serves
   * messages in arrival order, so a message waits behind every other flow's queued data.
   * @default 'fair'
   */
  wanQueueing?: 'fair' | 'fifo'
  /**
   * How a peer's uplink serves its flows (a flow is one lane of a directed peer pair):
   * 'fair' takes one message from each backlogged flow in turn, as the kernel's TCP
   * connections share a NIC, so a 128 KB probe reply waits for one chunk of each other
   * backlogged flow, not for every megabyte queued before it; 'fifo' serves messages in
   * send order.
   * @default 'fair'
   */
  uplinkQueueing?: 'fair' | 'fifo'
}

/** A cluster of a resolved topology. */
export interface ResolvedCluster {
  /** The cluster's name. */
  readonly name: string
  /** Number of peers. */
  readonly peers: number
  /** Number of the cluster's first peer; its peers are `firstPeer .. firstPeer + peers - 1`. */
  readonly firstPeer: number
}

/** A validated topology with every option resolved to per-cluster arrays. */
export interface Topology {
  /** The clusters, in peer-numbering order. */
  readonly clusters: readonly ResolvedCluster[]
  /** Intra-cluster RTT per cluster. */
  readonly intraRttMs: readonly number[]
  /** Full cluster×cluster RTT matrix, symmetric; the diagonal holds `intraRttMs`. */
  readonly interRttMs: readonly (readonly number[])[]
  /** Each peer's NIC rate, per direction. */
  readonly peerLinkBytesPerSec: number
  /** Cluster×cluster WAN link rate, symmetric; the unused diagonal is `Infinity`. */
  readonly wanLinkBytesPerSec: readonly (readonly number[])[]
  /** Receiver CPU time per message. */
  readonly perMessageCostMs: number
  /** Receiver CPU time per byte. */
  readonly perByteCostMs: number
  readonly smallMessageBytes: number
  /** How a wide-area link serves the flows crossing it. */
  readonly wanQueueing: 'fair' | 'fifo'
  /** How a peer's uplink serves its flows. */
  readonly uplinkQueueing: 'fair' | 'fifo'
  /** Total number of peers N; peers are numbered 0..N-1. */
  readonly peerCount: number
  /** The cluster index of `peer`; throws a `RangeError` for a peer outside 0..N-1. */
  clusterOf(peer: number): number
  /** Propagation delay from `a` to `b`: half their RTT (0 when `a === b`). */
  oneWayDelayMs(a: number, b: number): number
  /** Round-trip propagation time between `a` and `b` (0 when `a === b`). */
  rttMs(a: number, b: number): number
}

function fail(message: string): never {
  throw new InvalidTopologyError(message)
}

function checkNumber(field: string, v: unknown, min: 'zero' | 'positive'): number {
  const ok = typeof v === 'number' && Number.isFinite(v) && (min === 'zero' ? v >= 0 : v > 0)
  if (!ok) fail(`${field} must be a finite number ${min === 'zero' ? '>= 0' : '> 0'}, got ${String(v)}`)
  return v
}

function resolveVector(field: string, v: unknown, k: number): number[] {
  if (typeof v === 'number') return Array.from({ length: k }, () => checkNumber(field, v, 'zero'))
  if (!Array.isArray(v) || v.length !== k) fail(`${field} must be a number or an array of ${k} numbers (one per cluster)`)
  return v.map((x: unknown, i) => checkNumber(`${field}[${i}]`, x, 'zero'))
}

/** A symmetric k×k matrix from one value or a matrix; the diagonal is replaced by `diagonal(i)`. */
function resolveMatrix(field: string, v: unknown, k: number, min: 'zero' | 'positive', diagonal: (i: number) => number): number[][] {
  if (typeof v === 'number') {
    checkNumber(field, v, min)
    return Array.from({ length: k }, (_, i) => Array.from({ length: k }, (_, j) => i === j ? diagonal(i) : v))
  }
  if (!Array.isArray(v) || v.length !== k || !v.every(row => Array.isArray(row) && row.length === k)) {
    fail(`${field} must be a number or a ${k}×${k} matrix (cluster×cluster)`)
  }
  const m = v as readonly (readonly unknown[])[]
  return Array.from({ length: k }, (_, i) => Array.from({ length: k }, (_, j) => {
    if (i === j) return diagonal(i)
    const x = checkNumber(`${field}[${i}][${j}]`, m[i]?.[j], min)
    if (m[j]?.[i] !== x) fail(`${field} must be symmetric: ${field}[${i}][${j}] is ${x} but ${field}[${j}][${i}] is ${String(m[j]?.[i])}`)
    return x
  }))
}

/** Peer names sort in index order: p0000, p0001, ... */
export function peerName (i: number): string {
  return `p${String(i).padStart(4, '0')}`
}

/** Every field of TopologyInit (the type checker keeps the list complete). */
const TOPOLOGY_FIELDS: ReadonlySet<string> = new Set(Object.keys({
  clusters: true, intraRttMs: true, interRttMs: true, peerLinkBytesPerSec: true, wanLinkBytesPerSec: true, perMessageCostMs: true, perByteCostMs: true, smallMessageBytes: true, wanQueueing: true, uplinkQueueing: true
} satisfies Record<keyof TopologyInit, true>))

function resolveClusters(v: unknown): ResolvedCluster[] {
  if (!Array.isArray(v) || v.length === 0) fail('clusters must be a non-empty array')
  const names = new Set<string>()
  let firstPeer = 0
  return v.map((c: unknown, i): ResolvedCluster => {
    const { name, peers } = (typeof c === 'object' && c !== null ? c : {}) as Partial<Record<'name' | 'peers', unknown>>
    const unknown = typeof c === 'object' && c !== null ? unknownKey(c, ['name', 'peers']) : undefined
    if (unknown !== undefined) fail(`clusters[${i}].${unknown} is not a cluster field (name, peers)`)
    if (typeof name !== 'string' || name === '') fail(`clusters[${i}].name must be a non-empty string`)
    if (names.has(name)) fail(`clusters[${i}].name '${name}' is not unique`)
    names.add(name)
    if (typeof peers !== 'number' || !Number.isSafeInteger(peers) || peers < 1) {
      fail(`clusters[${i}].peers must be an integer >= 1, got ${String(peers)}`)
    }
    const out = { name, peers, firstPeer }
    firstPeer += peers
    return out
  })
}

/**
 * Validates `init` and resolves every option to its per-cluster form. Peers are numbered
 * 0..N-1 cluster by cluster. Throws {@link InvalidTopologyError} naming the bad field.
 */
export function resolveTopology(init: TopologyInit): Topology {
  if (typeof init !== 'object' || init === null) fail('topology must be an object')
  const unknown = unknownKey(init, TOPOLOGY_FIELDS)
  if (unknown !== undefined) fail(`${unknown} is not a topology field (experiments/README.md)`)
  const clusters = resolveClusters(init.clusters)
  const k = clusters.length
  const intraRttMs = resolveVector('intraRttMs', init.intraRttMs ?? DEFAULT_INTRA_RTT_MS, k)
  const interRttMs = resolveMatrix('interRttMs', init.interRttMs ?? DEFAULT_INTER_RTT_MS, k, 'zero', i => intraRttMs[i] as number)
  const peerLinkBytesPerSec = checkNumber('peerLinkBytesPerSec', init.peerLinkBytesPerSec ?? DEFAULT_PEER_LINK_BYTES_PER_SEC, 'positive')
  const wanLinkBytesPerSec = resolveMatrix('wanLinkBytesPerSec', init.wanLinkBytesPerSec ?? DEFAULT_WAN_LINK_BYTES_PER_SEC, k, 'positive', () => Infinity)
  const perMessageCostMs = checkNumber('perMessageCostMs', init.perMessageCostMs ?? DEFAULT_PER_MESSAGE_COST_MS, 'zero')
  const perByteCostMs = checkNumber('perByteCostMs', init.perByteCostMs ?? DEFAULT_PER_BYTE_COST_MS, 'zero')
  const smallMessageBytes = checkNumber('smallMessageBytes', init.smallMessageBytes ?? DEFAULT_SMALL_MESSAGE_BYTES, 'zero')
  const wanQueueing = init.wanQueueing ?? 'fair'
  if (wanQueueing !== 'fair' && wanQueueing !== 'fifo') fail(`wanQueueing must be 'fair' or 'fifo', got ${String(wanQueueing)}`)
  const uplinkQueueing = init.uplinkQueueing ?? 'fair'
  if (uplinkQueueing !== 'fair' && uplinkQueueing !== 'fifo') fail(`uplinkQueueing must be 'fair' or 'fifo', got ${String(uplinkQueueing)}`)
  const last = clusters[k - 1] as ResolvedCluster
  const peerCount = last.firstPeer + last.peers
  const clusterIndex = new Uint32Array(peerCount)
  clusters.forEach((c, i) => clusterIndex.fill(i, c.firstPeer, c.firstPeer + c.peers))
  const clusterOf = (peer: number): number => {
    if (!Number.isInteger(peer) || peer < 0 || peer >= peerCount) throw new RangeError(`peer must be an integer in 0..${peerCount - 1}, got ${peer}`)
    return clusterIndex[peer] as number
  }
  const rttMs = (a: number, b: number): number => {
    const ca = clusterOf(a)
    const cb = clusterOf(b)
    return a === b ? 0 : (interRttMs[ca] as number[])[cb] as number
  }
  return {
    clusters,
    intraRttMs,
    interRttMs,
    peerLinkBytesPerSec,
    wanLinkBytesPerSec,
    perMessageCostMs,
    perByteCostMs,
    smallMessageBytes,
    wanQueueing,
    uplinkQueueing,
    peerCount,
    clusterOf,
    rttMs,
    oneWayDelayMs: (a, b) => rttMs(a, b) / 2
  }
}
