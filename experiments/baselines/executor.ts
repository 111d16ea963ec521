/**
 * Runs a {@link Plan} on the simulator's `Network` (experiments/sim/network.ts: uplink,
 * shared WAN link per cluster pair, propagation, downlink, receiver CPU, small-message
 * interleaving) with its own `EventQueue`: the same model treecast runs on.
 *
 * The payload is cut into units at every byte offset where some send starts or ends, so
 * every send covers whole units. Each peer counts, per unit, the messages that brought it;
 * a send is ready when every unit of its range has been received `need` times (the root
 * of a broadcast holds every unit from the start). Data dependencies are therefore exact:
 * a peer forwards a segment only after receiving it, and pipelining falls out of cutting
 * the payload into segments.
 *
 * A reduction also tracks, per unit, how many peers' arrays a peer's partial result
 * already combines (itself included); a message carries the sender's counts and the
 * receiver adds them. The root holds the result when every unit combines all `n` arrays,
 * which checks the schedule: a lost or doubled contribution never completes. Combining
 * costs the receiver's CPU `perByteCostMs` per byte (0 by default), which the network
 * already charges on receipt, so no extra cost is added.
 */
import { EventQueue } from '../sim/event-queue.ts'
import { Network } from '../sim/network.ts'
import type { Topology } from '../sim/network.ts'
import { ScheduleDeadlockError } from './errors.ts'
import type { Plan } from './plan.ts'

/** What the executor measures; the caller adds the baseline's name and parameters. */
export interface Execution {
  /** Broadcast: ms until the peer holds every byte (0 at the root, Infinity if never). Reduction: NaN except at the root. */
  arrivalMs: Float64Array
  /** Largest arrival (broadcast) or the root's (reduction); Infinity if some peer never completes. */
  completionMs: number
  messages: number
  bytes: number
  wanBytes: number
  /** Directed cluster-to-cluster bytes, `[from][to]`. */
  bytesFromTo: number[][]
}

/** Options of one run. */
export interface ExecuteOptions {
  kind: 'broadcast' | 'reduce'
  root: number
  headerBytes: number
}

interface Compiled {
  /** Unit boundaries: unit u is `[bounds[u], bounds[u+1])`. */
  units: number
  unitStart: Int32Array
  unitEnd: Int32Array
  /** Per (peer, stream) queue: op indices in program order. */
  queues: Int32Array[][]
}

function lowerIndex(sorted: Float64Array, x: number): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if ((sorted[mid] as number) < x) lo = mid + 1
    else hi = mid
  }
  return lo
}

function compile(plan: Plan, n: number): Compiled {
  const all = new Float64Array(2 * plan.size + 2)
  all.set(plan.start.subarray(0, plan.size))
  all.set(plan.end.subarray(0, plan.size), plan.size)
  all[2 * plan.size + 1] = plan.totalBytes
  all.sort()
  let distinct = 0
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) all[distinct++] = all[i] as number
  const bounds = all.slice(0, distinct)
  const units = Math.max(1, bounds.length - 1)
  const unitStart = new Int32Array(plan.size)
  const unitEnd = new Int32Array(plan.size)
  const streams = 1 + plan.stream.subarray(0, plan.size).reduce((m, s) => Math.max(m, s), 0)
  const lengths = Array.from({ length: n }, () => new Int32Array(streams))
  for (let i = 0; i < plan.size; i++) {
    const s = plan.start[i] as number
    const e = plan.end[i] as number
    const a = lowerIndex(bounds, s)
    unitStart[i] = a
    // An empty range only occurs with an empty payload, whose single unit it then covers.
    unitEnd[i] = e > s ? lowerIndex(bounds, e) : Math.min(a + 1, units)
    const len = lengths[plan.from[i] as number] as Int32Array
    const st = plan.stream[i] as number
    len[st] = (len[st] as number) + 1
  }
  const queues = lengths.map(ls => Array.from(ls, l => new Int32Array(l)))
  const fill = lengths.map(() => new Int32Array(streams))
  for (let i = 0; i < plan.size; i++) {
    const p = plan.from[i] as number
    const st = plan.stream[i] as number
    const f = fill[p] as Int32Array
    ;(queues[p]?.[st] as Int32Array)[f[st] as number] = i
    f[st] = (f[st] as number) + 1
  }
  return { units, unitStart, unitEnd, queues }
}

/** Runs `plan` from time 0 until no event is left. */
export function execute(topology: Topology, plan: Plan, opts: ExecuteOptions): Execution {
  const n = topology.peerCount
  const { root, headerBytes } = opts
  const reduce = opts.kind === 'reduce'
  const { units: U, unitStart, unitEnd, queues } = compile(plan, n)
  const queue = new EventQueue<() => void>()
  let nowMs = 0
  const net = new Network(topology, (t, fn) => queue.push(t, fn))
  const count = new Int32Array(n * U)
  const held = new Int32Array(n)
  const weight = reduce ? new Float64Array(n * U).fill(1) : new Float64Array(0)
  let rootDone = 0
  const arrivalMs = new Float64Array(n).fill(reduce ? NaN : Infinity)
  if (reduce) {
    arrivalMs[root] = Infinity
    if (n === 1) arrivalMs[root] = 0
  } else {
    count.fill(1, root * U, root * U + U)
    held[root] = U
    arrivalMs[root] = 0
  }
  const heads = queues.map(qs => new Int32Array(qs.length))

  const ready = (p: number, op: number): boolean => {
    const need = plan.need[op] as number
    const base = p * U
    for (let u = unitStart[op] as number; u < (unitEnd[op] as number); u++) {
      if ((count[base + u] as number) < need) return false
    }
    return true
  }

  const deliver = (q: number, op: number, w: number | Float64Array): void => {
    const a = unitStart[op] as number
    const b = unitEnd[op] as number
    const base = q * U
    for (let u = a; u < b; u++) {
      const c = (count[base + u] as number) + 1
      count[base + u] = c
      if (reduce) {
        const total = (weight[base + u] as number) + (typeof w === 'number' ? w : w[u - a] as number)
        weight[base + u] = total
        if (q === root && total === n && ++rootDone === U) arrivalMs[root] = nowMs
      } else if (c === 1) {
        const h = (held[q] as number) + 1
        held[q] = h
        if (h === U) arrivalMs[q] = nowMs
      }
    }
    pump(q)
  }

  const issue = (p: number, op: number): void => {
    const to = plan.to[op] as number
    const a = unitStart[op] as number
    const b = unitEnd[op] as number
    let w: number | Float64Array = 0
    if (reduce) w = b - a === 1 ? weight[p * U + a] as number : weight.slice(p * U + a, p * U + b)
    const size = (plan.end[op] as number) - (plan.start[op] as number) + headerBytes
    net.send(nowMs, p, to, size, () => deliver(to, op, w))
  }

  function pump(p: number): void {
    const qs = queues[p] as Int32Array[]
    const hs = heads[p] as Int32Array
    for (let s = 0; s < qs.length; s++) {
      const q = qs[s] as Int32Array
      let h = hs[s] as number
      while (h < q.length && ready(p, q[h] as number)) issue(p, q[h++] as number)
      hs[s] = h
    }
  }

  for (let p = 0; p < n; p++) pump(p)
  for (let e = queue.pop(); e !== undefined; e = queue.pop()) {
    nowMs = e.timeMs
    e.item()
  }
  for (let p = 0; p < n; p++) {
    const qs = queues[p] as Int32Array[]
    qs.forEach((q, s) => {
      const h = (heads[p] as Int32Array)[s] as number
      if (h < q.length) throw new ScheduleDeadlockError(`peer ${p} stream ${s}: send ${h + 1} of ${q.length} never became ready`)
    })
  }
  const stats = net.stats()
  let completionMs = reduce ? arrivalMs[root] as number : 0
  if (!reduce) for (const t of arrivalMs) completionMs = Math.max(completionMs, t)
  const k = topology.clusters.length
  const bytesFromTo = Array.from({ length: k }, (_, a) => Array.from({ length: k }, (_, b) => stats.bytesFromTo(a, b)))
  return { arrivalMs, completionMs, messages: stats.messages, bytes: stats.bytes, wanBytes: stats.wanBytes, bytesFromTo }
}
