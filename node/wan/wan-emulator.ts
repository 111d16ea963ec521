/**
 * An in-process wide-area network for real libp2p nodes on one machine (the kernel here
 * has no netem). Peers are assigned to named clusters; a connection between two clusters
 * crosses one shared link per direction (rate cap, FIFO/round-robin, then propagation
 * delay); a connection inside a cluster gets an optional delay and no cap. Shaping happens
 * below Noise and Yamux, on the dialing side only (see shaped-transport.ts).
 *
 * @example
 * ```ts
 * const wan = new WanEmulator({ clusters: ['eu', 'us'], interDelayMs: 40, wanRateBytesPerSec: 12_500_000 })
 * const node = await createLibp2p({ transports: [wan.transport()], ... })
 * wan.assign(node.peerId.toString(), 'eu')
 * ```
 */
import type { PeerId, Transport } from '@libp2p/interface'
import type { TCPOptions } from '@libp2p/tcp'
import type { Topology, TopologyInit } from '../../experiments/sim/topology.ts'
import { defaultBacklogBytes, resolveWanConfig, type ResolvedWanConfig, type WanEmulatorInit } from './config.ts'
import { InvalidWanConfigError } from './errors.ts'
import { Poller } from './alarm.ts'
import { Pipe, type PipeStats } from './pipe.ts'
import { shapedTcp, type ShapedRoute, type ShapedTcpComponents } from './shaped-transport.ts'
import { wanInitFromTopology, type WanTopologyOptions } from './topology.ts'

/** Counters of one direction of one cluster pair (`from === to` for intra-cluster traffic). */
export type WanPipeStats = PipeStats

/** The emulated network. One instance is shared by all the nodes of a process. */
export class WanEmulator {
  /** The validated options, resolved to cluster×cluster tables. */
  readonly config: ResolvedWanConfig
  private readonly clusterIndex: ReadonlyMap<string, number>
  private readonly peers = new Map<string, number>()
  /** `pipes[i][j]`: the link from cluster i to cluster j (the diagonal: intra-cluster). */
  private readonly pipes: readonly (readonly Pipe[])[]
  /** the clock-polling loop shared by all the pipes (and connect delays) of this emulator */
  private readonly poller: Poller

  /** Throws {@link InvalidWanConfigError} when `init` is invalid. */
  constructor(init: WanEmulatorInit) {
    const config = resolveWanConfig(init)
    this.config = config
    this.clusterIndex = new Map(config.clusters.map((name, i) => [name, i]))
    const poller = new Poller(config.pollBudgetShare)
    this.poller = poller
    this.pipes = config.clusters.map((from, i) => config.clusters.map((to, j) => {
      const rateBytesPerSec = config.rateBytesPerSec[i]?.[j] as number
      return new Pipe({
        from,
        to,
        delayMs: config.delayMs[i]?.[j] as number,
        rateBytesPerSec,
        quantumBytes: config.roundRobinQuantumBytes,
        backlogHighWaterBytes: config.backlogHighWaterBytes ?? defaultBacklogBytes(rateBytesPerSec),
        maxInFlightBytes: config.maxInFlightBytes
      }, poller)
    }))
  }

  /**
   * An emulator reproducing the simulator's `topology` (see {@link wanInitFromTopology});
   * assign peer number i to `clusterNameOfPeer(topology, i)`.
   */
  static fromTopology(topology: TopologyInit | Topology, options?: WanTopologyOptions): WanEmulator {
    return new WanEmulator(wanInitFromTopology(topology, options))
  }

  /** The cluster names, in the order given. */
  get clusters(): readonly string[] {
    return this.config.clusters
  }

  /**
   * Puts `peer` (a peer id or its string form) in `cluster`. Connections dialed afterwards
   * are shaped; open ones keep their links. Throws {@link InvalidWanConfigError} for an
   * unknown cluster.
   */
  assign(peer: string | PeerId, cluster: string): void {
    this.peers.set(peer.toString(), this.indexOf(cluster))
  }

  /** Removes `peer` from its cluster: its future connections are unshaped. */
  unassign(peer: string | PeerId): void {
    this.peers.delete(peer.toString())
  }

  /** The cluster of `peer`, or undefined if it was never assigned. */
  clusterOf(peer: string | PeerId): string | undefined {
    const i = this.peers.get(peer.toString())
    return i === undefined ? undefined : this.config.clusters[i]
  }

  /** One-way delay from cluster `from` to cluster `to`, ms (the intra delay when equal). */
  delayMs(from: string, to: string): number {
    return this.config.delayMs[this.indexOf(from)]?.[this.indexOf(to)] as number
  }

  /** Round-trip propagation time between two clusters, ms. */
  rttMs(a: string, b: string): number {
    return this.delayMs(a, b) + this.delayMs(b, a)
  }

  /** Link rate from cluster `from` to cluster `to`, bytes/s (`Infinity` inside a cluster or uncapped). */
  rateBytesPerSec(from: string, to: string): number {
    return this.config.rateBytesPerSec[this.indexOf(from)]?.[this.indexOf(to)] as number
  }

  /**
   * A transport factory to put in libp2p's `transports: [...]` in place of `tcp(tcpInit)`.
   * Connections this node dials to an assigned peer (the address must end in
   * `/p2p/<peer id>`, as libp2p's dials by peer id do) are shaped when this node is assigned
   * too; inbound connections are shaped by their dialer.
   */
  transport(tcpInit?: TCPOptions): (components: ShapedTcpComponents) => Transport {
    return shapedTcp((local, remote) => this.route(local, remote), tcpInit, this.poller)
  }

  /**
   * How a connection dialed from `local` to `remote` (peer id strings) is shaped, or
   * undefined when it is not (a peer unassigned, or nothing to emulate between them).
   */
  route(local: string, remote: string): ShapedRoute | undefined {
    const a = this.peers.get(local)
    const b = this.peers.get(remote)
    if (a === undefined || b === undefined) return undefined
    const up = this.pipes[a]?.[b] as Pipe
    const down = this.pipes[b]?.[a] as Pipe
    const transparent = (p: Pipe): boolean => p.init.delayMs === 0 && p.init.rateBytesPerSec === Infinity
    if (transparent(up) && transparent(down)) return undefined
    return {
      link: { up, down },
      connectDelayMs: this.config.connectDelay ? up.init.delayMs + down.init.delayMs : 0
    }
  }

  /**
   * Bytes carried and current backlog of every pipe: one per ordered pair of distinct
   * clusters, and one per cluster for intra-cluster traffic (both directions).
   */
  stats(): WanPipeStats[] {
    return this.pipes.flatMap(row => row.map(pipe => pipe.stats()))
  }

  /** The stats of the link from cluster `from` to cluster `to`. */
  linkStats(from: string, to: string): WanPipeStats {
    return (this.pipes[this.indexOf(from)]?.[this.indexOf(to)] as Pipe).stats()
  }

  private indexOf(cluster: string): number {
    const i = this.clusterIndex.get(cluster)
    if (i === undefined) throw new InvalidWanConfigError(`unknown cluster '${String(cluster)}' (known: ${this.config.clusters.join(', ')})`)
    return i
  }
}
