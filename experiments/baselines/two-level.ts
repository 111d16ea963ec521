/**
 * The two static topology-aware baselines that are told the clusters:
 *
 * - `magpie` (Kielmann et al.'s MagPIe, as 003 §V ran it): the root sends the payload to
 *   one coordinator per cluster over the wide area (a flat tree), then each coordinator
 *   runs MPICH's broadcast inside its cluster (binomial for short payloads, scatter then
 *   allgather for long ones: mpich.ts).
 * - `mpich-g2` (papers 000 and 001, Karonis et al.): multilevel topology trees, a flat tree
 *   at the wide-area level and binomial trees below, whatever the size; for a root that
 *   is not its cluster's master, the root substitutes for that master (000 Fig. 5).
 *
 * Both: the coordinator (master) of a cluster is its first peer, except in the root's
 * cluster where it is the root. The root's wide-area sends are concurrent non-blocking
 * sends (segment-major: each segment to every coordinator in cluster order, so the
 * uplink is shared and every wide-area link is fed from the start) in one stream, the
 * local broadcast in another. Coordinators forward segments as they arrive (pipelining).
 *
 * Reductions: a binomial reduction inside each cluster to its coordinator, then every
 * coordinator sends its partial array to the root (flat tree), pipelined per segment.
 * On a two-level topology (clusters and the wide area, which is all the simulator
 * models) this is the same schedule for both baselines, and the two broadcasts differ
 * only in the intra-cluster algorithm for payloads of at least 12 KB.
 */
import type { Topology } from '../sim/network.ts'
import type { BaselineImpl, PlannedCollective } from './baseline.ts'
import type { BaselineConfig } from './config.ts'
import { mpichBroadcast } from './mpich.ts'
import { Plan, elementAligned } from './plan.ts'
import { binomialTree, clusterMembers, coordinators, flatTree, mergeTrees, treeBroadcast, treeReduce } from './trees.ts'

const WAN_STREAM = 0
const LOCAL_STREAM = 1

function wideAreaBroadcast(plan: Plan, topology: Topology, root: number, bytes: number, segmentBytes: number): number[] {
  const coords = coordinators(topology, root)
  treeBroadcast(plan, flatTree(coords, root), bytes, segmentBytes, 'segment-major', WAN_STREAM)
  return coords
}

/** Local binomial reductions to the coordinators, then a flat tree of coordinators to the root. */
function twoLevelReduce(topology: Topology, root: number, elements: number, config: BaselineConfig): PlannedCollective {
  const bytes = elements * config.elementBytes
  const segmentBytes = elementAligned(config.segmentBytes, config.elementBytes)
  const coords = coordinators(topology, root)
  const members = clusterMembers(topology)
  const local = members.map((g, c) => binomialTree(g, g.indexOf(coords[c] as number)))
  const tree = mergeTrees(root, [flatTree(coords, root), ...local])
  const plan = new Plan(bytes)
  treeReduce(plan, tree, bytes, segmentBytes)
  return { plan, params: { wideArea: 'flat', intraCluster: 'binomial', coordinators: coords.join(' '), segmentBytes, elementBytes: config.elementBytes } }
}

export const magpie: BaselineImpl = {
  broadcast(topology, root, bytes, config) {
    const plan = new Plan(bytes)
    const coords = wideAreaBroadcast(plan, topology, root, bytes, config.segmentBytes)
    const algorithms = new Set<string>()
    clusterMembers(topology).forEach((g, c) => {
      algorithms.add(mpichBroadcast(plan, g, g.indexOf(coords[c] as number), bytes, config.segmentBytes, LOCAL_STREAM))
    })
    return { plan, params: { wideArea: 'flat', intraCluster: [...algorithms].join(' '), coordinators: coords.join(' '), segmentBytes: config.segmentBytes } }
  },
  reduce: twoLevelReduce
}

export const mpichG2: BaselineImpl = {
  broadcast(topology, root, bytes, config) {
    const plan = new Plan(bytes)
    const coords = wideAreaBroadcast(plan, topology, root, bytes, config.segmentBytes)
    clusterMembers(topology).forEach((g, c) => {
      treeBroadcast(plan, binomialTree(g, g.indexOf(coords[c] as number)), bytes, config.segmentBytes, 'child-major', LOCAL_STREAM)
    })
    return { plan, params: { wideArea: 'flat', intraCluster: 'binomial', coordinators: coords.join(' '), rootSubstitution: coords[topology.clusterOf(root)] !== topology.clusters[topology.clusterOf(root)]?.firstPeer, segmentBytes: config.segmentBytes } }
  },
  reduce: twoLevelReduce
}
