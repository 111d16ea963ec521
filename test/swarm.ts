/**
 * Random scenarios for swarm tests of the simulator: a small multi-cluster topology and a
 * few seconds of random broadcasts, reductions, joins, rejoins, leaves and crashes. The
 * scenario is a pure function of the seed (drawn from the simulator's own `Rng`), so a
 * failing seed replays exactly.
 */
import { isTreeRoot } from '../overlay/tree-roots.ts'
import { DEFAULT_CHUNK_BYTES, type CoreInit } from '../overlay/config.ts'
import { Rng } from '../experiments/sim/rng.ts'
import type { Action, Scenario } from '../experiments/sim/scenario.ts'
import { peerName } from '../experiments/sim/simulation.ts'
import type { SimReport } from '../experiments/sim/report.ts'

/** Overrides of the random shape. */
export interface SwarmOptions {
  /** Total peers in the topology (including those not started at time 0). @default 8-24 */
  peers?: number
  /** Number of clusters. @default 2-4 */
  clusters?: number
  /** Number of scheduled actions. @default 8-17 */
  events?: number
  /**
   * Broadcast sizes drawn log-uniformly from this range instead (the default draws 1 byte
   * to 600 KB, mostly below the switch point): long ones exercise the bandwidth tree and
   * striped broadcasts (overlay/stripes.ts). Absent: the default draws, so seeds replay.
   */
  broadcastBytes?: readonly [number, number]
  /**
   * The core's `treeRootStride` (overlay/tree-roots.ts): most roots broadcast and reduce
   * through another peer's trees, and some runs have no live tree root at all. Draws
   * nothing, so a seed's schedule is the same with and without it. @default 1
   */
  treeRootStride?: number
  /** More core options for every peer (drawing nothing, like `treeRootStride`). */
  core?: CoreInit
  /**
   * Every crash is followed by the crashed peers' rejoin within this many ms (drawn from 1
   * up), mostly before the others notice the crash: restarts that peers learn of as a newer
   * incarnation, in any order with the old one's death. Draws only when set. @default none
   */
  restartWithinMs?: number
  /**
   * Point-to-point messages (`send` actions) from the roots to random virtual nodes: this
   * many runs of them, each a message every few ms for a while, mostly of a few bytes, some
   * of several chunks. Drawn from a separate random stream, so the rest of a seed's
   * schedule is the same with and without them. @default 0
   */
  sendRuns?: number
  /**
   * The root of the first broadcast leaves gracefully 0 to 1.5 s after starting it (drawn
   * from a separate random stream), and starts nothing more, nor any reduction (whose result
   * it would hold): a leaving root drains its broadcasts first, so each must still be
   * acknowledged at its root and no leave may wait for its timeout. The schedule runs on
   * 12 s past the leave, so that it ends (drained, or at its 10 s timeout). @default false
   */
  rootLeaves?: boolean
}

/** Fewest running peers a leave or crash may leave behind. */
export const MIN_RUNNING = 3
/** When the random schedule starts and how long it spans (ms of virtual time). */
export const SCHEDULE_START_MS = 300
export const SCHEDULE_SPAN_MS = 3000
/** A peer that joined is used as a root only this long after its join (its join must have completed). */
const ROOT_AFTER_JOIN_MS = 400
const MAX_BROADCAST_BYTES = 600 * 1024
const OPS = ['sum', 'min', 'max'] as const

/** A deterministic random scenario for `seed`. */
export function randomScenario (seed: number, opts: SwarmOptions = {}): Scenario {
  const rng = new Rng(seed).fork('swarm')
  const between = (lo: number, hi: number): number => lo + rng.int(hi - lo + 1)
  const ms = (lo: number, hi: number): number => Math.round((lo + rng.next() * (hi - lo)) * 10) / 10

  // Topology: k clusters, every cluster with at least one peer.
  const k = opts.clusters ?? between(2, 4)
  const total = Math.max(opts.peers ?? between(8, 24), k)
  const sizes = new Array<number>(k).fill(1)
  for (let i = k; i < total; i++) { const c = rng.int(k); sizes[c] = (sizes[c] as number) + 1 }
  const clusters = sizes.map((peers, i) => ({ name: String.fromCharCode(97 + i), peers }))
  const interRttMs: number[][] = Array.from({ length: k }, () => new Array<number>(k).fill(0))
  for (let i = 0; i < k; i++) {
    for (let j = i + 1; j < k; j++) {
      const rtt = ms(4, 8)
      ;(interRttMs[i] as number[])[j] = rtt
      ;(interRttMs[j] as number[])[i] = rtt
    }
  }

  // Some peers (the last ones in topology order) start later, through joins.
  const maxOff = Math.max(1, Math.min(4, total - 6))
  const off = Math.min(between(1, maxOff), total - MIN_RUNNING)
  const initial = total - off
  const vnodeChoice = rng.int(3)
  const vnodes = vnodeChoice === 0 ? initial : vnodeChoice === 1 ? initial * between(2, 4) : between(initial, 200)

  // Roots are named, so the simulator never picks them for a random leave or crash: a
  // collective whose root vanishes cannot complete, which would not be a protocol bug.
  const roots = rng.shuffle(Array.from({ length: initial }, (_, i) => i)).slice(0, between(2, 3)).map(peerName)
  /** Roots usable from a time on: the initial roots, and joined peers once their join is done. */
  const rootsFrom: Array<{ name: string, at: number }> = roots.map((name) => ({ name, at: 0 }))
  const notStarted = Array.from({ length: off }, (_, i) => peerName(initial + i))

  const n = opts.events ?? between(8, 17)
  const times = Array.from({ length: n }, () => SCHEDULE_START_MS + rng.int(SCHEDULE_SPAN_MS + 1)).sort((a, b) => a - b)

  // A lower bound of the running peers: joins of left or crashed peers are not counted, as
  // how many there are when the join runs depends on the run (a leave drains first).
  let running = initial
  const unprotected = (): number => running - roots.length
  let gone = 0
  const schedule: Action[] = []
  for (const at of times) {
    const kind = rng.int(100)
    if (kind < 35) {
      const usable = rootsFrom.filter((r) => r.at <= at)
      const range = opts.broadcastBytes
      const bytes = range !== undefined
        ? Math.round(Math.exp(Math.log(range[0]) + rng.next() * (Math.log(range[1]) - Math.log(range[0]))))
        : rng.int(4) === 0 ? between(1, 64) : Math.max(1, Math.round(Math.exp(rng.next() * Math.log(MAX_BROADCAST_BYTES))))
      schedule.push({ at, do: 'broadcast', root: rng.pick(usable).name, bytes })
    } else if (kind < 60) {
      const usable = rootsFrom.filter((r) => r.at <= at)
      const root = rng.pick(usable).name
      const reduce: Action = { at, do: 'reduce', root, op: rng.pick(OPS), length: between(1, 8) }
      // Every other one collective (from its time, not a draw: the seeds' other events stay as they were).
      // A collective needs a root with trees (overlay/tree-roots.ts): under a stride, other roots start theirs.
      schedule.push(at % 2 === 0 && isTreeRoot(root, opts.treeRootStride ?? 1) ? { ...reduce, collective: true } : reduce)
    } else if (kind < 85) {
      const count = between(1, 2)
      if (running - count < MIN_RUNNING || unprotected() <= 0) {
        // Not enough peers to lose: bring one in instead.
        if (notStarted.length > 0) pushJoin(at)
        continue
      }
      const removal = rng.int(2) === 0 ? 'leave' : 'crash'
      schedule.push({ at, do: removal, count })
      running -= count
      gone += count
      if (removal === 'crash' && opts.restartWithinMs !== undefined) schedule.push({ at: at + between(1, opts.restartWithinMs), do: 'join', peers: 'crashed', rejoin: true })
    } else if (notStarted.length > 0 && (gone === 0 || rng.int(2) === 0)) {
      pushJoin(at)
    } else if (gone > 0) {
      schedule.push({ at, do: 'join', peers: rng.int(3) === 0 ? 'crashed' : 'left', rejoin: true })
    }
  }

  function pushJoin (at: number): void {
    const count = Math.min(between(1, 2), notStarted.length)
    const names = notStarted.splice(0, count)
    schedule.push({ at, do: 'join', peers: names })
    running += count
    // A joined peer may serve as a root later; naming it protects it from random removal.
    if (rng.int(2) === 0) {
      const name = names[0] as string
      rootsFrom.push({ name, at: at + ROOT_AFTER_JOIN_MS })
      roots.push(name)
    }
  }

  if (opts.sendRuns !== undefined && opts.sendRuns > 0) {
    schedule.push(...sendRuns(new Rng(seed).fork('sends'), opts.sendRuns, rootsFrom, vnodes))
    schedule.sort((a, b) => a.at - b.at)
  }
  const leaveAt = opts.rootLeaves === true ? rootLeaves(new Rng(seed).fork('root-leaves'), schedule) : undefined
  const last = Math.max(schedule.reduce((m, a) => Math.max(m, a.at), 0), leaveAt === undefined ? 0 : leaveAt + 11_500)
  return {
    name: `swarm-${seed}`,
    seed,
    topology: { clusters, intraRttMs: 0.3, interRttMs },
    vnodes,
    initialPeers: initial,
    until: last + 500,
    drainMs: 20_000,
    schedule,
    ...(opts.core !== undefined || (opts.treeRootStride !== undefined && opts.treeRootStride > 1) ? { core: { ...(opts.treeRootStride !== undefined && opts.treeRootStride > 1 ? { treeRootStride: opts.treeRootStride } : {}), ...opts.core } } : {})
  }
}

/** The first broadcast's root leaves (see `rootLeaves` of SwarmOptions): edits `schedule` in place, returns when. */
function rootLeaves (rng: Rng, schedule: Action[]): number | undefined {
  const first = schedule.find((a) => a.do === 'broadcast')
  if (first?.do !== 'broadcast' || first.root === undefined) return undefined
  const root = first.root
  const at = first.at + rng.int(1501)
  const keep = schedule.filter((a) => !((a.do === 'reduce' && a.root === root) || (a.do === 'broadcast' && a.root === root && a.at > at) || (a.do === 'send' && a.from === root && a.at > at)))
  keep.push({ at, do: 'leave', peers: [root] })
  keep.sort((a, b) => a.at - b.at)
  schedule.splice(0, schedule.length, ...keep)
  return at
}

/**
 * `runs` runs of point-to-point messages from roots usable at their time (see `sendRuns` of
 * SwarmOptions), each to random virtual nodes or all to one (which may migrate meanwhile).
 */
function sendRuns (rng: Rng, runs: number, rootsFrom: ReadonlyArray<{ name: string, at: number }>, vnodes: number): Action[] {
  const out: Action[] = []
  for (let i = 0; i < runs; i++) {
    const at = SCHEDULE_START_MS + rng.int(SCHEDULE_SPAN_MS + 1)
    const usable = rootsFrom.filter((r) => r.at <= at)
    if (usable.length === 0) continue
    const bytes = rng.int(4) === 0 ? 1 + rng.int(3 * DEFAULT_CHUNK_BYTES) : 1 + rng.int(64)
    const every = 1 + rng.int(20)
    out.push({ at, do: 'send', from: rng.pick(usable).name, bytes, every, count: 1 + rng.int(bytes > 64 ? 10 : 100), vnode: rng.int(2) === 0 ? 'random' : rng.int(vnodes) })
  }
  return out
}

/** What the run got wrong, as readable lines (empty: nothing). */
export function swarmProblems (r: SimReport): string[] {
  const t = r.totals
  const out: string[] = r.violations.map((v) => `violation: ${v}`)
  if (t.lostDeliveries !== 0) out.push(`${t.lostDeliveries} lost deliveries`)
  if (t.duplicates !== 0) out.push(`${t.duplicates} duplicate deliveries`)
  if (t.reductionsWrong !== 0) out.push(`${t.reductionsWrong} reductions wrong`)
  if (t.reductionsIncomplete !== 0) out.push(`${t.reductionsIncomplete} reductions incomplete`)
  if (t.sendsLost !== 0) out.push(`${t.sendsLost} point-to-point messages lost`)
  if (t.sendDuplicates !== 0) out.push(`${t.sendDuplicates} duplicate point-to-point deliveries`)
  for (const b of r.broadcasts) if (b.missing !== 0 || b.completeMs === null) out.push(`broadcast ${b.id} (${b.bytes} B from ${b.root} at ${b.startMs} ms) incomplete: ${b.delivered}/${r.vnodes} delivered`)
  if (t.broadcastsComplete !== t.broadcasts) out.push(`${t.broadcasts - t.broadcastsComplete} of ${t.broadcasts} broadcasts incomplete`)
  // Roots are never removed: each must see its broadcast acknowledged, and no leave may wait for its timeout.
  for (const b of r.broadcasts) if (b.doneAtRootMs === null) out.push(`broadcast ${b.id} never acknowledged at its root`)
  if (t.leavesTimedOut !== 0) out.push(`${t.leavesTimedOut} leaves waited for their timeout`)
  return out
}
