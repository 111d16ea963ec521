/**
 * `createTreecast(options)`: a libp2p host (TCP, Noise, Yamux) configured for many peers
 * on one machine, with the treecast service, wrapped in a small node object.
 */
import './polyfill.ts'
import type { PrivateKey } from '@libp2p/interface'
import { preSharedKey } from '@libp2p/pnet'
import { createLibp2p, type Libp2p, type Libp2pOptions } from 'libp2p'
import type { Multiaddr } from '@multiformats/multiaddr'
import { DEFAULT_NODE_NET, MAX_TIMER_MS } from './config.ts'
import { corkedTcp } from './corked-tcp.ts'
import { halfWindowYamux } from './half-window-yamux.ts'
import { quietNoise } from './quiet-noise.ts'
import { InvalidArgumentError, InvalidConfigError, NotStartedError } from './errors.ts'
import { unknownKey } from '../overlay/unknown-keys.ts'
import { CREATE_OPTIONS } from './init-options.ts'
import type { TreecastEvents } from './events.ts'
import type { CollectiveInit } from '../overlay/collective.ts'
import { treecast, type BroadcastHandle, type BroadcastOptions, type ReduceResult, type TreecastInit, type TreecastService, type TreeView } from './treecast-service.ts'
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { TreeKind } from '../trees/tree-kind.ts'
import type { LinkMeasurement } from './measurements.ts'

/** Options of {@link createTreecast}: the service's options plus the host's. */
export interface CreateTreecastInit extends TreecastInit {
  /**
   * Addresses to listen on. The first TCP/IPv4 one becomes the overlay id, so it must be
   * dialable by the other peers.
   * @default ['/ip4/127.0.0.1/tcp/0']
   */
  listen?: string[]
  /**
   * Addresses to announce instead of the listen addresses (behind a port mapping, say).
   * The first TCP/IPv4 one becomes the overlay id.
   * @default the listen addresses
   */
  announce?: string[]
  /**
   * A private network's pre-shared key, in the swarm.key format of libp2p's pnet (create
   * one with `generateKey` from @libp2p/pnet, or `treecast key generate-psk`). Peers
   * without the same key cannot connect at all.
   * @default no private network
   */
  psk?: Uint8Array
  /**
   * The libp2p identity. A daemon that restarts should keep its key.
   * @default a new Ed25519 key
   */
  privateKey?: PrivateKey
  /**
   * The transport, in place of `corkedTcp()` (for instance the wide-area emulator's, which
   * corks too). `corkedTcp` (node/corked-tcp.ts) is `tcp()` writing each send at once.
   * @default corkedTcp()
   */
  transport?: NonNullable<Libp2pOptions['transports']>[number]
  /**
   * Connections libp2p keeps at most (treecast itself keeps `maxPeers` control streams).
   * @default 256
   */
  maxConnections?: number
  /**
   * Incoming connections accepted per second per remote IP. Peers on one machine all
   * dial from 127.0.0.1, and libp2p's default (5) makes their dials fail.
   * @default 10000
   */
  inboundConnectionThreshold?: number
  /**
   * Incoming connections in their handshake at once (libp2p's default is 10).
   * @default 256
   */
  maxIncomingPendingConnections?: number
  /**
   * Yamux's largest per-stream receive window: what a paused stream may still receive.
   * Must stay under libp2p's 4 MiB read-buffer limit; 2 MiB covers a 40 ms link at 50 MB/s.
   * @default 2097152
   */
  maxStreamWindowBytes?: number
  /**
   * Longest wait for `stop()`: libp2p's own teardown can hang with many connections.
   * @default 5000
   */
  stopTimeoutMs?: number
}

/** A treecast peer: a libp2p host and the overlay service on it. */
export class TreecastNode {
  private stopped = false

  constructor (readonly libp2p: Libp2p<{ treecast: TreecastService }>, private readonly stopTimeoutMs: number) {}

  /** The overlay service (also an event target). */
  get overlay (): TreecastService { return this.libp2p.services.treecast }

  /** Starts listening. Then `bootstrap()` a new overlay or `join()` an existing one. */
  async start (): Promise<void> {
    if (this.stopped) throw new NotStartedError('a stopped node cannot be restarted; create a new one')
    await this.libp2p.start()
  }

  /** Stops at once (no hand-off: to others this looks like a crash; `leave()` first for a graceful exit). */
  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([
      this.libp2p.stop(),
      new Promise<void>((resolve) => { timer = setTimeout(resolve, this.stopTimeoutMs) })
    ]).finally(() => { clearTimeout(timer) })
  }

  /** This peer's overlay id: its dialable multiaddr ending in /p2p/<peer id>. */
  get id (): string { return this.overlay.id }
  get state (): string { return this.overlay.state }

  bootstrap (vnodeCount?: number, founders?: readonly string[]): void { this.overlay.bootstrap(vnodeCount, founders) }
  async join (contact: string | Multiaddr, opts: { want?: IntervalSet, wantOf?: number } = {}): Promise<void> { await this.overlay.join(contact, opts) }
  async leave (): Promise<{ drained: boolean }> { return await this.overlay.leave() }
  async broadcast (payload: Uint8Array, opts?: BroadcastOptions): Promise<BroadcastHandle> { return await this.overlay.broadcast(payload, opts) }
  startBroadcast (payload: Uint8Array, opts?: BroadcastOptions): BroadcastHandle & { readonly sent: Promise<void> } { return this.overlay.startBroadcast(payload, opts) }
  send (vnode: number, payload: Uint8Array): string { return this.overlay.send(vnode, payload) }
  async reduce (op: string, length: number): Promise<ReduceResult> { return await this.overlay.reduce(op, length) }

  startReduce (op: string, length: number): { readonly id: string, readonly result: Promise<ReduceResult> } { return this.overlay.startReduce(op, length) }
  /** Takes part in a collective reduction (every peer calls it): the result at the root, null elsewhere. */
  async reduceCollective (init: CollectiveInit): Promise<ReduceResult | null> { return await this.overlay.reduceCollective(init) }

  owned (): IntervalSet { return this.overlay.owned() }
  vnodeCount (): number { return this.overlay.vnodeCount() }
  members (): string[] { return this.overlay.members() }
  tree (kind: TreeKind, root?: string): TreeView | undefined { return this.overlay.tree(kind, root) }
  trees (): TreeView[] { return this.overlay.trees() }
  measured (): ReadonlyMap<string, LinkMeasurement> { return this.overlay.measured() }

  addEventListener<K extends keyof TreecastEvents> (type: K, listener: (evt: TreecastEvents[K]) => void, options?: { once?: boolean, signal?: AbortSignal }): void {
    this.overlay.addEventListener(type, listener, options)
  }

  removeEventListener<K extends keyof TreecastEvents> (type: K, listener: (evt: TreecastEvents[K]) => void): void {
    this.overlay.removeEventListener(type, listener)
  }
}

/** Creates a treecast node (not started). */
export async function createTreecast (init: CreateTreecastInit = {}): Promise<TreecastNode> {
  const unknown = unknownKey(init, CREATE_OPTIONS)
  if (unknown !== undefined) throw new InvalidConfigError(`${unknown} is not an option of createTreecast (CreateTreecastInit, node/create-treecast.ts)`)
  const stopTimeoutMs = init.stopTimeoutMs ?? 5000
  if (!(stopTimeoutMs > 0 && stopTimeoutMs <= MAX_TIMER_MS)) throw new InvalidArgumentError(`stopTimeoutMs must be positive and at most ${MAX_TIMER_MS}, got ${String(stopTimeoutMs)}`)
  const libp2p = await createLibp2p({
    start: false,
    ...(init.privateKey !== undefined ? { privateKey: init.privateKey } : {}),
    addresses: { listen: init.listen ?? ['/ip4/127.0.0.1/tcp/0'], ...(init.announce !== undefined ? { announce: init.announce } : {}) },
    ...(init.psk !== undefined ? { connectionProtector: preSharedKey({ psk: init.psk }) } : {}),
    transports: [init.transport ?? corkedTcp()],
    // Noise and Yamux with two per-read and per-frame costs taken out (node/quiet-noise.ts,
    // node/half-window-yamux.ts; the wire protocols are unchanged).
    connectionEncrypters: [quietNoise()],
    // A paused stream stops yamux's window updates, so at most one window arrives while
    // paused; libp2p resets a stream whose read buffer passes 4 MiB, so the window must
    // stay below it (yamux's default maximum is 16 MiB).
    streamMuxers: [halfWindowYamux({ streamOptions: { maxStreamWindowSize: init.maxStreamWindowBytes ?? 2 * 1024 * 1024 } })],
    connectionManager: {
      maxConnections: init.maxConnections ?? 256,
      inboundConnectionThreshold: init.inboundConnectionThreshold ?? 10_000,
      maxIncomingPendingConnections: init.maxIncomingPendingConnections ?? 256,
      // One attempt may take dialTimeoutMs (libp2p's per-address limit is 6 s otherwise),
      // and so may the peer's side of the handshake.
      dialTimeout: init.dialTimeoutMs ?? DEFAULT_NODE_NET.dialTimeoutMs,
      addressDialTimeout: init.dialTimeoutMs ?? DEFAULT_NODE_NET.dialTimeoutMs,
      inboundUpgradeTimeout: init.dialTimeoutMs ?? DEFAULT_NODE_NET.dialTimeoutMs
    },
    // The monitor pings every connection and closes slow ones: treecast has its own
    // heartbeats, and under emulated delay or a busy CPU the monitor kills live links.
    connectionMonitor: { enabled: false },
    services: { treecast: treecast(init) }
  })
  return new TreecastNode(libp2p, stopTimeoutMs)
}
