/**
 * Lower bounds of the modelled network for a broadcast of `bytes` from `root`.
 *
 * Latency: the largest, over peers, of the shortest propagation delay from the root (a
 * shortest path over one-way delays, relays allowed). With a metric RTT matrix (the
 * default uniform one) this is the largest direct one-way delay root→peer; with an
 * arbitrary matrix a relay can be faster than the direct link, so the shortest path is
 * what bounds every schedule. Per-message CPU and serialization are not counted.
 *
 * Bandwidth: the capacity graph has, per peer, an uplink and a downlink at
 * `peerLinkBytesPerSec`; per cluster an "out" node (what its peers' uplinks emit) and an
 * "in" node (what its peers' downlinks can take), joined by an unlimited LAN; and one
 * WAN edge per directed cluster pair at that pair's rate, from out to in. Relaying
 * through a cluster therefore costs a peer's downlink and uplink, as in the simulator.
 * Every byte reaching a peer t crosses every cut separating root from t, so a broadcast
 * takes at least `bytes / maxflow(root, t)` for every t: the minimum over sinks is a valid
 * bound for a broadcast to everyone. In this fluid model it is also achievable (Edmonds'
 * branching theorem: a broadcast can run at min_t maxflow(root, t) by packing spanning
 * arborescences), so it is the tightest bound a cut argument gives; the simulator's
 * per-message costs, store-and-forward and propagation make real schedules slower. It
 * is not a single chain's rate: with k equal clusters, k-1 WAN links can feed each
 * cluster at once, so the cut is (k-1) times one WAN link. Headers are not counted, and
 * messages of up to `smallMessageBytes` take no modelled capacity, so a schedule made of
 * such messages is not bound by it.
 *
 * The peers of a cluster are interchangeable (the topology gives them equal links), so
 * the max-flow is computed for one sink per cluster (a non-root peer) only.
 */
import type { Topology } from '../sim/network.ts'
import type { LowerBounds } from './types.ts'

const UNLIMITED = Number.MAX_VALUE

/** Dinic's max-flow on a small graph with real capacities. */
class FlowGraph {
  private readonly head: number[]
  private readonly next: number[] = []
  private readonly to: number[] = []
  private readonly cap: number[] = []

  constructor(private readonly nodes: number) {
    this.head = new Array<number>(nodes).fill(-1)
  }

  addEdge(a: number, b: number, c: number): void {
    for (const [u, v, w] of [[a, b, c], [b, a, 0]] as const) {
      this.to.push(v)
      this.cap.push(w)
      this.next.push(this.head[u] as number)
      this.head[u] = this.to.length - 1
    }
  }

  /** Max-flow from `s` to `t` on a copy of the capacities. */
  maxFlow(s: number, t: number): number {
    const cap = this.cap.slice()
    const level = new Int32Array(this.nodes)
    const it = new Int32Array(this.nodes)
    const eps = 1e-9
    const bfs = (): boolean => {
      level.fill(-1)
      level[s] = 0
      const queue = [s]
      for (let i = 0; i < queue.length; i++) {
        const u = queue[i] as number
        for (let e = this.head[u] as number; e !== -1; e = this.next[e] as number) {
          const v = this.to[e] as number
          if ((cap[e] as number) > eps && level[v] === -1) {
            level[v] = (level[u] as number) + 1
            queue.push(v)
          }
        }
      }
      return level[t] !== -1
    }
    const dfs = (u: number, f: number): number => {
      if (u === t) return f
      for (; it[u] !== -1; it[u] = this.next[it[u] as number] as number) {
        const e = it[u] as number
        const v = this.to[e] as number
        if ((cap[e] as number) > eps && level[v] === (level[u] as number) + 1) {
          const d = dfs(v, Math.min(f, cap[e] as number))
          if (d > eps) {
            cap[e] = (cap[e] as number) - d
            cap[e ^ 1] = (cap[e ^ 1] as number) + d
            return d
          }
        }
      }
      return 0
    }
    let flow = 0
    while (bfs()) {
      for (let u = 0; u < this.nodes; u++) it[u] = this.head[u] as number
      for (let f = dfs(s, UNLIMITED); f > eps; f = dfs(s, UNLIMITED)) flow += f
    }
    return flow
  }
}

/** The capacity graph of `topology`: peers 0..n-1, then each cluster's out node, then its in node. */
function capacityGraph(topology: Topology): FlowGraph {
  const n = topology.peerCount
  const k = topology.clusters.length
  const g = new FlowGraph(n + 2 * k)
  const out = (c: number): number => n + c
  const inn = (c: number): number => n + k + c
  for (let p = 0; p < n; p++) {
    const c = topology.clusterOf(p)
    g.addEdge(p, out(c), topology.peerLinkBytesPerSec)
    g.addEdge(inn(c), p, topology.peerLinkBytesPerSec)
  }
  for (let a = 0; a < k; a++) {
    g.addEdge(out(a), inn(a), UNLIMITED)
    for (let b = 0; b < k; b++) if (a !== b) g.addEdge(out(a), inn(b), topology.wanLinkBytesPerSec[a]?.[b] as number)
  }
  return g
}

/** The minimum over peers t ≠ root of maxflow(root, t), bytes/s (Infinity for a lone peer). */
export function minCutBytesPerSec(topology: Topology, root: number): number {
  const g = capacityGraph(topology)
  let min = Infinity
  for (const c of topology.clusters) {
    const sink = c.firstPeer === root ? c.firstPeer + 1 : c.firstPeer
    if (sink >= c.firstPeer + c.peers) continue
    min = Math.min(min, g.maxFlow(root, sink))
  }
  return min
}

/** The largest shortest-path propagation delay from `root` to any peer, ms (dense Dijkstra). */
export function latencyBoundMs(topology: Topology, root: number): number {
  const n = topology.peerCount
  const dist = new Float64Array(n).fill(Infinity)
  const done = new Uint8Array(n)
  dist[root] = 0
  let max = 0
  for (let round = 0; round < n; round++) {
    let u = -1
    for (let p = 0; p < n; p++) if (done[p] === 0 && (u === -1 || (dist[p] as number) < (dist[u] as number))) u = p
    done[u] = 1
    const du = dist[u] as number
    max = Math.max(max, du)
    for (let p = 0; p < n; p++) {
      if (done[p] === 0) {
        const d = du + topology.oneWayDelayMs(u, p)
        if (d < (dist[p] as number)) dist[p] = d
      }
    }
  }
  return max
}

/** Both bounds for a broadcast of `bytes` from `root`. */
export function computeLowerBounds(topology: Topology, root: number, bytes: number): LowerBounds {
  const minCut = minCutBytesPerSec(topology, root)
  return { latencyMs: latencyBoundMs(topology, root), minCutBytesPerSec: minCut, bandwidthMs: bytes === 0 ? 0 : bytes * 1000 / minCut }
}
