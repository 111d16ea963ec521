/**
 * The `model` baseline (paper 002): a pLogP-style model (plogp.ts) picks each cluster's
 * algorithm and segment size for the payload size, and ECEF-LAt (ecef.ts) schedules the
 * wide-area sends between cluster coordinators (the root in its cluster, else the
 * cluster's first peer).
 *
 * Broadcast: a coordinator forwards the payload to the coordinators the schedule gives it
 * (in schedule order, segment by segment, messages of `segmentBytes`) in one stream, and
 * runs its cluster's chosen algorithm (flat, binomial, segmented chain, or scatter + ring
 * allgather) in another, both as segments arrive.
 * Reduction: each cluster reduces to its coordinator with its chosen algorithm (flat,
 * binomial or chain, pipelined per segment); the coordinators then reduce along the
 * wide-area broadcast tree reversed (a coordinator combines its cluster's result with
 * its wide-area children's before sending to its wide-area parent).
 */
import type { Topology } from '../sim/network.ts'
import type { BaselineImpl } from './baseline.ts'
import type { BaselineConfig } from './config.ts'
import { ecefSchedule } from './ecef.ts'
import type { WideAreaSend } from './ecef.ts'
import { mpichBroadcast } from './mpich.ts'
import { Plan, elementAligned } from './plan.ts'
import { chooseIntra, clusterParams } from './plogp.ts'
import type { IntraAlgorithm, IntraChoice } from './plogp.ts'
import { binomialTree, chainTree, clusterMembers, coordinators, flatTree, treeBroadcast, treeReduce } from './trees.ts'
import type { Tree } from './trees.ts'

const BROADCAST_ALGORITHMS: readonly IntraAlgorithm[] = ['flat', 'binomial', 'chain', 'scatter-ring']
const REDUCE_ALGORITHMS: readonly IntraAlgorithm[] = ['flat', 'binomial', 'chain']
const WAN_STREAM = 0
const LOCAL_STREAM = 1

interface Design {
  coords: number[]
  members: number[][]
  choices: IntraChoice[]
  schedule: WideAreaSend[]
  predictedMs: number
}

function design(topology: Topology, root: number, bytes: number, config: BaselineConfig, algorithms: readonly IntraAlgorithm[], align: number, wanSegmentBytes: number): Design {
  const coords = coordinators(topology, root)
  const members = clusterMembers(topology)
  const choices = members.map((_, c) => chooseIntra(clusterParams(topology, c, config.headerBytes), bytes, algorithms, align))
  const rootCluster = topology.clusterOf(root)
  const schedule = ecefSchedule({ topology, rootCluster, bytes, segmentBytes: wanSegmentBytes, headerBytes: config.headerBytes, intraMs: choices.map(c => c.predictedMs) })
  const ready = new Map<number, number>([[rootCluster, 0]])
  for (const s of schedule) ready.set(s.to, s.readyMs)
  const predictedMs = Math.max(...choices.map((c, i) => (ready.get(i) as number) + c.predictedMs))
  return { coords, members, choices, schedule, predictedMs }
}

/** The local tree of `algorithm` rooted at `coord` (not used for scatter-ring). */
function localTree(algorithm: IntraAlgorithm, group: readonly number[], coord: number): Tree {
  if (algorithm === 'flat') return flatTree(group, coord)
  if (algorithm === 'chain') return chainTree([coord, ...group.filter(p => p !== coord)])
  return binomialTree(group, group.indexOf(coord))
}

function wideAreaTree(d: Design, root: number): Tree {
  const t: Tree = { root, children: new Map(), parent: new Map() }
  for (const s of d.schedule) {
    const from = d.coords[s.from] as number
    const to = d.coords[s.to] as number
    const cs = t.children.get(from)
    if (cs === undefined) t.children.set(from, [to])
    else cs.push(to)
    t.parent.set(to, from)
  }
  return t
}

function describe(topology: Topology, d: Design): Record<string, string | number | boolean> {
  const name = (c: number): string => topology.clusters[c]?.name as string
  return {
    wideArea: 'ECEF-LAt',
    wideAreaTree: d.schedule.map(s => `${name(s.from)}>${name(s.to)}`).join(' '),
    intraCluster: d.choices.map((c, i) => `${name(i)}:${c.algorithm}/${c.segmentBytes}`).join(' '),
    coordinators: d.coords.join(' '),
    predictedMs: d.predictedMs
  }
}

export const model: BaselineImpl = {
  broadcast(topology, root, bytes, config) {
    const d = design(topology, root, bytes, config, BROADCAST_ALGORITHMS, 1, config.segmentBytes)
    const plan = new Plan(bytes)
    treeBroadcast(plan, wideAreaTree(d, root), bytes, config.segmentBytes, 'segment-major', WAN_STREAM)
    d.members.forEach((g, c) => {
      const { algorithm, segmentBytes } = d.choices[c] as IntraChoice
      const coord = d.coords[c] as number
      if (algorithm === 'scatter-ring') mpichBroadcast(plan, g, g.indexOf(coord), bytes, segmentBytes, LOCAL_STREAM, 'scatter-ring')
      else treeBroadcast(plan, localTree(algorithm, g, coord), bytes, segmentBytes, algorithm === 'binomial' ? 'child-major' : 'segment-major', LOCAL_STREAM)
    })
    return { plan, params: { ...describe(topology, d), segmentBytes: config.segmentBytes } }
  },
  reduce(topology, root, elements, config) {
    const bytes = elements * config.elementBytes
    const wanSegmentBytes = elementAligned(config.segmentBytes, config.elementBytes)
    const d = design(topology, root, bytes, config, REDUCE_ALGORITHMS, config.elementBytes, wanSegmentBytes)
    const plan = new Plan(bytes)
    const localChildren = new Map<number, number>()
    d.members.forEach((g, c) => {
      const { algorithm, segmentBytes } = d.choices[c] as IntraChoice
      const coord = d.coords[c] as number
      const tree = localTree(algorithm, g, coord)
      localChildren.set(coord, tree.children.get(coord)?.length ?? 0)
      treeReduce(plan, tree, bytes, segmentBytes)
    })
    const wan = wideAreaTree(d, root)
    treeReduce(plan, wan, bytes, wanSegmentBytes, 0, p => localChildren.get(p) ?? 0)
    return { plan, params: { ...describe(topology, d), segmentBytes: wanSegmentBytes, elementBytes: config.elementBytes } }
  }
}
