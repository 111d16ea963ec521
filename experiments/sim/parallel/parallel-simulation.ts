/**
 * A simulation on several threads: a conservative parallel discrete-event simulation of
 * the same scenario (docs/SCALE.md, "the simulator on two threads"). Clusters are split
 * between partitions (cluster c to partition c mod threads), each a worker thread running
 * a PartitionSim. Nothing crosses partitions faster than the lookahead (half the smallest
 * RTT between clusters of different partitions), so the workers run windows of that length
 * in lockstep and exchange what crossed at each barrier. This thread orders the windows,
 * replays the partitions' records in (time, partition, order) to judge the whole overlay
 * (tree cycles, stability), and merges their shares of the report.
 *
 * A run is a pure function of scenario, seed and thread count. It is not byte-identical
 * to a one-thread run: events at equal times run in another order.
 */
import { Worker } from 'node:worker_threads'
import { fileURLToPath } from 'node:url'
import { Checker } from '../checker.ts'
import { resolveTopology, type Topology } from '../network.ts'
import { buildReport, type BcastTrack, type RedTrack, type SimReport } from '../report.ts'
import { InvalidScenarioError, parseScenario, type Scenario } from '../scenario.ts'
import { Stability, type StabilitySums } from '../stability.ts'
import { peerName } from '../topology.ts'
import { partitionOf, type Crossing, type PartitionRecords, type PartitionResult, type QuietPart } from './partition-sim.ts'
import type { PartitionOrder } from './partition-worker.ts'
import { mergeDeliveries, mergeTracks } from './merge-results.ts'

interface Reply { busy?: number, next?: number, crossings?: Crossing[], records?: PartitionRecords, quiet?: QuietPart, result?: PartitionResult, error?: string }

const LOADER = fileURLToPath(new URL('../../../bin/ts-loader.mjs', import.meta.url))
const WORKER = new URL('./partition-worker.ts', import.meta.url)
/** Actions a run on threads does not take yet (they change membership or need a per-message track). */
const UNSUPPORTED = new Set(['join', 'leave', 'crash', 'send'])

/** How a run on threads went (for benchmarks). */
export interface ParallelStats {
  /** Windows run (each a barrier). */
  windows: number
  /** Messages and markers that crossed partitions. */
  crossings: number
  /** Per partition, ms spent running its windows. */
  busyMs: number[]
  /** The sum over windows of the busiest partition's time: what the run took at best, given the split. */
  criticalMs: number
  /** Per partition, its heap in use at the end, bytes. */
  heapUsedBytes: number[]
}

/** One run of a scenario on `threads` worker threads. */
export class ParallelSimulation {
  readonly topology: Topology
  /** Length of a window, ms of virtual time. */
  readonly lookaheadMs: number
  private readonly vnodes: number
  private readonly initial: number
  /** Filled in by `run`. */
  stats: ParallelStats = { windows: 0, crossings: 0, busyMs: [], criticalMs: 0, heapUsedBytes: [] }

  /** @throws InvalidScenarioError when the scenario is not valid, or not one a run on threads takes yet */
  constructor (readonly scenario: Scenario, readonly seed: number = scenario.seed, readonly threads = 2) {
    parseScenario(scenario)
    if (!Number.isInteger(threads) || threads < 1 || threads > 64) throw new InvalidScenarioError(`threads must be an integer in 1..64, got ${threads}`)
    this.topology = resolveTopology(scenario.topology)
    const k = this.topology.clusters.length
    if (k < threads) throw new InvalidScenarioError(`a run on ${threads} threads needs at least ${threads} clusters (it splits whole clusters), the topology has ${k}`)
    for (const a of scenario.schedule) if (UNSUPPORTED.has(a.do)) throw new InvalidScenarioError(`a run on threads does not take '${a.do}' actions yet (at ${a.at} ms); run it on one thread`)
    let lookahead = Infinity
    for (let a = 0; a < k; a++) for (let b = 0; b < k; b++) if (partitionOf(a, threads) !== partitionOf(b, threads)) lookahead = Math.min(lookahead, (this.topology.interRttMs[a]?.[b] as number) / 2)
    if (threads > 1 && !(lookahead > 0)) throw new InvalidScenarioError('a run on threads needs a positive RTT between clusters of different partitions')
    this.lookaheadMs = lookahead
    this.initial = scenario.initialPeers ?? this.topology.peerCount
    this.vnodes = scenario.vnodes ?? this.initial
  }

  /** Runs the scenario and returns its report; `progress` is told the virtual time now and then. */
  async run (progress?: (simulatedMs: number, untilMs: number) => void): Promise<SimReport> {
    const until = this.scenario.until
    const hardStop = until + (this.scenario.drainMs ?? 30_000)
    const workers = Array.from({ length: this.threads }, (_, index) => new Worker(WORKER, {
      workerData: { scenario: this.scenario, seed: this.seed, index, count: this.threads },
      execArgv: ['--import', LOADER]
    }))
    let now = 0
    const parents = new Checker(this.vnodes, () => true, () => now)
    const stability = new Stability()
    const sums: StabilitySums[] = workers.map(() => [0, 0, 0, 0, 0, 0])
    // One answer awaited per worker at a time; an error or exit fails it.
    const waiting: Array<{ resolve: (r: Reply) => void, reject: (e: Error) => void } | null> = workers.map(() => null)
    workers.forEach((w, i) => {
      const fail = (e: Error): void => { const p = waiting[i]; waiting[i] = null; p?.reject(e) }
      w.on('message', (r: Reply) => { const p = waiting[i]; waiting[i] = null; if (r.error !== undefined) p?.reject(new Error(r.error)); else p?.resolve(r) })
      w.on('error', fail)
      w.on('exit', (code) => { fail(new Error(`partition ${i} exited (code ${code})`)) })
    })
    const ask = async (order: (i: number) => PartitionOrder): Promise<Reply[]> => await Promise.all(workers.map(async (w, i) => await new Promise<Reply>((resolve, reject) => {
      waiting[i] = { resolve, reject }
      w.postMessage(order(i))
    })))
    /** Routes what crossed to the partitions it goes to; the earliest event time now known. */
    const route = (replies: Reply[]): { inbound: Crossing[][], next: number | undefined } => {
      const inbound: Crossing[][] = workers.map(() => [])
      let next: number | undefined
      const earliest = (t: number | undefined): void => { if (t !== undefined && (next === undefined || t < next)) next = t }
      for (const r of replies) {
        earliest(r.next)
        this.stats.crossings += r.crossings?.length ?? 0
        for (const c of r.crossings ?? []) {
          (inbound[partitionOf(this.topology.clusterOf(c.to), this.threads)] as Crossing[]).push(c)
          if (c.msg !== null) earliest(c.t)
        }
      }
      return { inbound, next }
    }
    /** Replays a window's records in (time, partition, order): windows in order, each while the workers run the next. */
    const replay = (replies: Reply[]): void => { this.replay(replies.map((r) => r.records as PartitionRecords), (t) => { now = t }, parents, stability, sums) }
    try {
      let replies = await ask(() => ({ t: 'start' }))
      let { inbound, next } = route(replies)
      // Whether the run is quiet in the state the last window left (known once a window reached `until`).
      let quiet: boolean | undefined
      for (let n = 1; next !== undefined; n++) {
        if (progress !== undefined && (n & 0x3ff) === 0) progress(next, until)
        // As the one-thread loop, past `until` stop at the first event at which the run is quiet:
        // nothing happens between windows, so the state after the last one is the state then.
        if (next > until) quiet ??= this.quiet((await ask(() => ({ t: 'quiet' }))).map((r) => r.quiet as QuietPart))
        if (next > until && (next > hardStop || quiet === true)) break
        this.stats.windows++
        const endMs = next <= until ? Math.min(next + this.lookaheadMs, until) : Math.min(next + this.lookaheadMs, hardStop)
        const inclusive = endMs === until || endMs === hardStop
        const wantQuiet = endMs >= until
        // One partition is the whole run: it checks quiet before each event past `until` itself.
        const untilMs = this.threads === 1 ? until : undefined
        const asked = ask((i) => ({ t: 'window', crossings: inbound[i] as Crossing[], endMs, inclusive, quiet: wantQuiet, ...(untilMs !== undefined ? { untilMs } : {}) }))
        asked.catch(() => {}) // awaited below; a replay that throws must not leave it unhandled
        replay(replies)
        replies = await asked
        this.stats.criticalMs += Math.max(...replies.map((r) => r.busy ?? 0))
        ;({ inbound, next } = route(replies))
        quiet = wantQuiet ? this.quiet(replies.map((r) => r.quiet as QuietPart)) : undefined
      }
      replay(replies)
      const results = (await ask(() => ({ t: 'finish' }))).map((r) => r.result as PartitionResult)
      this.stats.busyMs = results.map((r) => r.busyMs)
      this.stats.heapUsedBytes = results.map((r) => r.heapUsedBytes)
      return this.report(results, Math.max(...results.map((r) => r.nowMs), until), parents, stability)
    } catch (err) {
      throw new Error(`simulation of ${this.scenario.name}, seed ${this.seed}, on ${this.threads} threads, threw near ${now} ms of virtual time: ${String(err)}`, { cause: err })
    } finally {
      await Promise.all(workers.map(async (w) => await w.terminate()))
    }
  }

  /** Replays records of one window: parent changes into the cycle check, sums into the stability tracker. */
  private replay (records: PartitionRecords[], setNow: (t: number) => void, parents: Checker, stability: Stability, sums: StabilitySums[]): void {
    const pi = records.map(() => 0)
    const si = records.map(() => 0)
    for (;;) {
      // The earliest record left; ties go to the lower partition, parents before sums.
      let best = -1
      let bestT = Infinity
      let bestKind = 0
      records.forEach((r, p) => {
        const tp = r.parents[pi[p] as number]
        if (tp !== undefined && tp < bestT) { best = p; bestT = tp; bestKind = 0 }
        const ts = r.sums[si[p] as number]?.[0]
        if (ts !== undefined && ts < bestT) { best = p; bestT = ts; bestKind = 1 }
      })
      if (best < 0) return
      setNow(bestT)
      const r = records[best] as PartitionRecords
      if (bestKind === 0) {
        const i = pi[best] as number
        const parent = r.parents[i + 4] as number
        parents.parent(r.parents[i + 1] === 1 ? 'bw' : 'lat', r.parents[i + 2] as number, r.parents[i + 3] as number, parent === -1 ? null : parent)
        pi[best] = i + 5
      } else {
        sums[best] = (r.sums[si[best] as number] as [number, StabilitySums])[1]
        si[best] = (si[best] as number) + 1
        const total: StabilitySums = [0, 0, 0, 0, 0, 0]
        for (const s of sums) for (let j = 0; j < 6; j++) total[j] = (total[j] as number) + (s[j] as number)
        stability.load(total)
        stability.check(bestT, this.initial)
      }
    }
  }

  /** Every broadcast delivered to every virtual node and done at its root (if it runs), every reduction ended. */
  private quiet (parts: QuietPart[]): boolean {
    const delivered = new Map<string, number>()
    const done = new Map<string, boolean>()
    for (const q of parts) {
      if (q.redsOpen > 0) return false
      for (const [id, n, d] of q.bcasts) {
        delivered.set(id, (delivered.get(id) ?? 0) + n)
        if (d !== null) done.set(id, d)
      }
    }
    for (const [id, d] of done) if (!d || delivered.get(id) !== this.vnodes) return false
    return true
  }

  private report (results: PartitionResult[], nowMs: number, parents: Checker, stability: Stability): SimReport {
    const first = results[0] as PartitionResult
    const index = new Map(Array.from({ length: this.topology.peerCount }, (_, i) => [peerName(i), i]))
    const rootPart = (root: string): number => partitionOf(this.topology.clusterOf(index.get(root) ?? 0), this.threads)
    const owned = new Uint8Array(this.vnodes)
    const owners: string[] = []
    for (const r of results) {
      r.owned.forEach((o, v) => {
        if (o !== 1) return
        if (owned[v] === 1 && owners.length < 100) owners.push(`t=${nowMs.toFixed(3)}ms virtual node ${v} owned by live peers of two partitions`)
        owned[v] = 1
      })
    }
    const rejected: Record<string, number> = {}
    for (const r of results) for (const [k, v] of Object.entries(r.rejected)) rejected[k] = (rejected[k] ?? 0) + v
    const sum = (f: (r: PartitionResult) => number): number => results.reduce((a, r) => a + f(r), 0)
    const { deliveries, violations } = mergeDeliveries(results.map((r) => r.deliveries), this.vnodes)
    const { broadcasts, reductions } = mergeTracks(results, rootPart)
    return buildReport({
      scenario: this.scenario.name,
      seed: this.seed,
      peers: { initial: this.initial, final: first.running, total: this.topology.peerCount },
      vnodes: this.vnodes,
      nowMs,
      broadcasts: broadcasts as BcastTrack[],
      reductions: reductions as RedTrack[],
      sends: [],
      deliveries,
      probes: sum((r) => r.probes),
      probesLight: sum((r) => r.probesLight),
      offers: sum((r) => r.offers),
      everStarted: first.everStarted,
      rejected,
      net: { messages: sum((r) => r.net.messages), bytes: sum((r) => r.net.bytes), wanBytes: sum((r) => r.net.wanBytes) },
      unowned: owned.reduce((a, o) => a + (o === 1 ? 0 : 1), 0),
      leavesTimedOut: sum((r) => r.leavesTimedOut),
      joinsFailed: sum((r) => r.joinsFailed),
      firstStableMs: stability.firstStableMs,
      repairs: stability.repairs,
      violations: [...results.flatMap((r) => r.violations), ...violations, ...owners, ...parents.violations]
    })
  }
}

