/**
 * Every knob of the gossipsub-compare experiment, for the quick and the full mode: the
 * emulated topology, the message sizes and counts, the gossipsub options (its defaults, with
 * the two exceptions explained below) and the treecast options (its defaults).
 */
import type { GossipsubOpts } from '@libp2p/gossipsub'
import type { CoreInit } from '../../overlay/config.ts'
import type { TopologyInit } from '../sim/network.ts'

export const KiB = 1024
export const MiB = 1024 * 1024

/** The gossipsub topic every peer subscribes to. */
export const TOPIC = 'treecast/gossipsub-compare'

/**
 * gossipsub's default size limit: it-length-prefixed's `MAX_DATA_LENGTH` (4 MiB), applied to
 * each whole RPC frame both when encoding (the sender) and decoding (`maxInboundDataLength`).
 */
export const GOSSIPSUB_DEFAULT_MAX_RPC_BYTES = 4 * MiB

/**
 * Bytes an RPC carrying one signed message adds to its payload (StrictSign, Ed25519 key,
 * this topic): measured with gossipsub's own encoder, 188 bytes for 1 KiB, 192 for 4 MiB.
 * The largest payload gossipsub sends here is thus 4 MiB - 192 = 4,194,112 bytes.
 */
export const GOSSIPSUB_RPC_OVERHEAD_BYTES = 192

/**
 * The gossipsub options: its defaults (D = 6, Dlo = 4, Dhi = 12, Dlazy = 6, 1 s heartbeat,
 * floodPublish, StrictSign, fallbackToFloodsub, `maxInboundDataLength` unset = 4 MiB, no
 * outbound buffer limit), `emitSelf` false, and one change for the loopback setup: every
 * peer here has the address 127.0.0.1, and gossipsub's IP-colocation penalty (weight -5 past
 * 10 peers per IP) would push every score below the graylist threshold from 11 peers on,
 * which peers with their own addresses never see. 127.0.0.1 is whitelisted for that penalty.
 */
export function gossipsubOptions (): Partial<GossipsubOpts> {
  return {
    emitSelf: false,
    scoreParams: { IPColocationFactorWhitelist: new Set(['127.0.0.1']) }
  }
}

/** The gossipsub options as recorded in the parameters (JSON-friendly). */
export const GOSSIPSUB_RECORDED = {
  package: '@libp2p/gossipsub@17.1.1',
  D: 6,
  Dlo: 4,
  Dhi: 12,
  Dlazy: 6,
  heartbeatIntervalMs: 1000,
  floodPublish: true,
  fallbackToFloodsub: true,
  globalSignaturePolicy: 'StrictSign',
  emitSelf: false,
  maxInboundDataLength: 'default (unset: 4 MiB per RPC frame, it-length-prefixed MAX_DATA_LENGTH)',
  maxOutboundBufferSize: 'default (unset: no limit)',
  scoreParams: 'defaults, except IPColocationFactorWhitelist = {127.0.0.1} (all peers share the loopback address)',
  topic: TOPIC
}

/** One message size of a run. */
export interface SizeSpec {
  /** Payload bytes. */
  bytes: number
  /** '1 KB', '128 KB', ... (binary units). */
  label: string
  /** Messages per system at this size, each from a seeded random root. */
  messages: number
  /** Which systems send it: both, or gossipsub only (the quick mode's size-limit check). */
  systems: ReadonlyArray<'treecast' | 'gossipsub'>
}

/** The plan of one run. */
export interface Plan {
  peers: number
  topology: TopologyInit
  sizes: SizeSpec[]
  /** Idle time over which each system's background traffic (heartbeats) is measured. */
  idleMs: number
  /** Pause between two messages once the network is quiet. */
  gapMs: number
  /** A message with no new arrival and no new traffic of its system for this long has stalled. */
  stallMs: number
  /** Longest wait for one message. */
  maxMessageMs: number
  /** Longest wait for treecast's trees to be stable. */
  stableTimeoutMs: number
  /** Longest wait for the gossipsub mesh. */
  meshTimeoutMs: number
  /** Heartbeats to wait once the mesh looks complete (the mesh keeps adjusting). */
  meshSettleHeartbeats: number
  /** treecast's protocol options (`core` of its init): its defaults unless a variant says otherwise. */
  treecastCore: CoreInit
  /** Extra wait after treecast's trees are first stable (lets steady probing improve them). */
  treecastSettleMs: number
}

/** What a variant run may change. */
export interface PlanOverrides {
  peers?: number
  treecastCore?: CoreInit
  treecastSettleMs?: number
}

/** Four clusters, peers spread as evenly as possible (the first clusters get the extra ones). */
export function clustersOf (peers: number): Array<{ name: string, peers: number }> {
  return ['c0', 'c1', 'c2', 'c3'].map((name, i) => ({ name, peers: Math.floor(peers / 4) + (i < peers % 4 ? 1 : 0) }))
}

/** The emulated wide-area topology: 0.3 ms inside a cluster, 10 ms between, 12.5 MB/s shared links. */
export function topologyOf (peers: number): TopologyInit {
  return {
    clusters: clustersOf(peers),
    intraRttMs: 0.3,
    interRttMs: 10,
    wanLinkBytesPerSec: 12_500_000
  }
}

/** The plan for `quick` or full mode, with a variant's overrides. */
export function planOf (quick: boolean, overrides: PlanOverrides = {}): Plan {
  const n = overrides.peers ?? (quick ? 8 : 24)
  const both = ['treecast', 'gossipsub'] as const
  const sizes: SizeSpec[] = quick
    ? [
        { bytes: KiB, label: '1 KB', messages: 4, systems: both },
        { bytes: 128 * KiB, label: '128 KB', messages: 2, systems: both },
        { bytes: MiB, label: '1 MB', messages: 2, systems: both },
        { bytes: 4 * MiB, label: '4 MB', messages: 1, systems: ['gossipsub'] }
      ]
    : [
        { bytes: KiB, label: '1 KB', messages: 16, systems: both },
        { bytes: 128 * KiB, label: '128 KB', messages: 5, systems: both },
        { bytes: MiB, label: '1 MB', messages: 5, systems: both },
        { bytes: 4 * MiB, label: '4 MB', messages: 3, systems: both }
      ]
  return {
    peers: n,
    topology: topologyOf(n),
    sizes,
    idleMs: quick ? 1000 : 3000,
    gapMs: quick ? 100 : 300,
    stallMs: 3000,
    maxMessageMs: 60_000,
    stableTimeoutMs: quick ? 30_000 : 90_000,
    meshTimeoutMs: quick ? 20_000 : 60_000,
    meshSettleHeartbeats: quick ? 1 : 2,
    treecastCore: overrides.treecastCore ?? {},
    treecastSettleMs: overrides.treecastSettleMs ?? 0
  }
}
