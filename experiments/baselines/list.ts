/**
 * The `list` baseline of 003 §V: every peer in one chain, the payload cut into segments
 * and pipelined along it, so no peer sends the same byte twice.
 *
 * Order: the root, then the rest of its cluster, then the other clusters one after the
 * other, each cluster's peers in peer order; so each wide-area link on the path is
 * crossed once. The cluster order maximizes the chain's bottleneck, the narrowest
 * wide-area link on the path (peer links are all equal): every order is tried for up to
 * 8 clusters (ties: the smallest sum of 1/rate over the path's WAN links, i.e. the
 * quickest pipeline fill, then the smallest sum of RTTs, then the first order found);
 * beyond that, a greedy walk to the widest (then nearest) unvisited cluster.
 * A reduction runs up the same chain: each peer adds its array to what it received from
 * the next peer, segment by segment, and passes it towards the root.
 */
import type { Topology } from '../sim/network.ts'
import type { BaselineImpl } from './baseline.ts'
import { Plan, elementAligned } from './plan.ts'
import { chainTree, clusterMembers, treeBroadcast, treeReduce } from './trees.ts'

const EXHAUSTIVE_MAX_CLUSTERS = 8

/** A path's bottleneck rate, its pipeline fill (sum of 1/rate over its WAN links) and its RTT sum. */
interface PathScore { bottleneck: number, fill: number, rtt: number }

function better(a: PathScore, b: PathScore): boolean {
  if (a.bottleneck !== b.bottleneck) return a.bottleneck > b.bottleneck
  if (a.fill !== b.fill) return a.fill < b.fill
  return a.rtt < b.rtt
}

function score(topology: Topology, path: readonly number[]): PathScore {
  let bottleneck = Infinity
  let fill = 0
  let rtt = 0
  for (let i = 1; i < path.length; i++) {
    const a = path[i - 1] as number
    const b = path[i] as number
    const rate = topology.wanLinkBytesPerSec[a]?.[b] as number
    bottleneck = Math.min(bottleneck, rate)
    fill += 1 / rate
    rtt += topology.interRttMs[a]?.[b] as number
  }
  return { bottleneck, fill, rtt }
}

/** The cluster order of the chain, starting with the root's cluster. */
export function listClusterOrder(topology: Topology, rootCluster: number): number[] {
  const k = topology.clusters.length
  const rest = Array.from({ length: k }, (_, i) => i).filter(i => i !== rootCluster)
  if (k <= EXHAUSTIVE_MAX_CLUSTERS) {
    let best: number[] = [rootCluster, ...rest]
    let bestScore = score(topology, best)
    const permute = (prefix: number[], left: number[]): void => {
      if (left.length === 0) {
        const s = score(topology, prefix)
        if (better(s, bestScore)) {
          best = prefix.slice()
          bestScore = s
        }
        return
      }
      for (let i = 0; i < left.length; i++) {
        prefix.push(left[i] as number)
        permute(prefix, [...left.slice(0, i), ...left.slice(i + 1)])
        prefix.pop()
      }
    }
    permute([rootCluster], rest)
    return best
  }
  const order = [rootCluster]
  const left = new Set(rest)
  while (left.size > 0) {
    const at = order[order.length - 1] as number
    let pick = -1
    let pickScore: PathScore = { bottleneck: -Infinity, fill: Infinity, rtt: Infinity }
    for (const c of left) {
      const s = score(topology, [at, c])
      if (better(s, pickScore)) { pick = c; pickScore = s }
    }
    order.push(pick)
    left.delete(pick)
  }
  return order
}

/** The chain: the root first, each cluster's peers together, clusters in {@link listClusterOrder}. */
export function listOrder(topology: Topology, root: number): number[] {
  const members = clusterMembers(topology)
  const order = [root]
  for (const c of listClusterOrder(topology, topology.clusterOf(root))) {
    for (const p of members[c] as number[]) if (p !== root) order.push(p)
  }
  return order
}

export const list: BaselineImpl = {
  broadcast(topology, root, bytes, config) {
    const order = listOrder(topology, root)
    const plan = new Plan(bytes)
    treeBroadcast(plan, chainTree(order), bytes, config.segmentBytes, 'segment-major')
    const clusters = listClusterOrder(topology, topology.clusterOf(root))
    return { plan, params: { algorithm: 'pipelined chain', clusterOrder: clusters.map(c => topology.clusters[c]?.name).join(' '), bottleneckBytesPerSec: Math.min(topology.peerLinkBytesPerSec, score(topology, clusters).bottleneck), segmentBytes: config.segmentBytes } }
  },
  reduce(topology, root, elements, config) {
    const order = listOrder(topology, root)
    const bytes = elements * config.elementBytes
    const segmentBytes = elementAligned(config.segmentBytes, config.elementBytes)
    const plan = new Plan(bytes)
    treeReduce(plan, chainTree(order), bytes, segmentBytes)
    const clusters = listClusterOrder(topology, topology.clusterOf(root))
    return { plan, params: { algorithm: 'pipelined chain reduction', clusterOrder: clusters.map(c => topology.clusters[c]?.name).join(' '), segmentBytes, elementBytes: config.elementBytes } }
  }
}
