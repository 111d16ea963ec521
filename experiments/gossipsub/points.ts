/**
 * Turns the message outcomes into the experiment's points: one flat record per message and
 * system, with its arrival percentiles and the traffic of its counting window (from its
 * publish to the next publish of the same system, or the end of the run), less the system's
 * background traffic (heartbeats) measured while idle.
 */
import type { Traffic } from './traffic-counter.ts'
import type { MessageOutcome } from './message-runner.ts'
import { percentile, round } from './stats.ts'

/** One point: a message of one system. */
export interface Point {
  system: 'treecast' | 'gossipsub'
  size: string
  bytes: number
  seq: number
  /** 'measure', or 'after-limit' for the 1 KB checks sent after the over-limit message. */
  phase: string
  root: number
  rootCluster: string
  peers: number
  expected: number
  delivered: number
  completeness: number
  completionMs: number | null
  doneAtRootMs: number | null
  p50Ms: number | null
  p90Ms: number | null
  p99Ms: number | null
  maxMs: number | null
  /** Per non-root peer, in peer order: ms from publish to first arrival (null: never). */
  arrivalsMs: Array<number | null>
  /** Bytes and writes on the system's streams in the window, background subtracted. */
  bytesSent: number
  writes: number
  /** The same, as counted (background included). */
  rawBytes: number
  rawWrites: number
  windowMs: number
  publishRecipients: number | null
  publishError: string | null
  stalled: boolean
  duplicates: number
  /** treecast: tree used and its shape (depth, edges between clusters, root's children). */
  tree: MessageOutcome['tree']
  [key: string]: unknown
}

/** Background traffic of a system, per ms. */
export interface Background { bytesPerMs: number, writesPerMs: number }

/** The points of `outcomes` (in the order run), given each system's traffic at the end. */
export function toPoints (
  outcomes: readonly MessageOutcome[],
  meta: { label: (bytes: number) => string, cluster: (peer: number) => string, phase: (o: MessageOutcome) => string, peers: number },
  end: { at: number, traffic: Record<'treecast' | 'gossipsub', Traffic> },
  background: Record<'treecast' | 'gossipsub', Background>
): Point[] {
  return outcomes.map((o) => {
    const next = outcomes.find((x) => x.system === o.system && x.startedAt > o.startedAt)
    const endAt = next?.startedAt ?? end.at
    const endTraffic = next?.trafficAtStart ?? end.traffic[o.system]
    const windowMs = endAt - o.startedAt
    const rawBytes = endTraffic.bytes - o.trafficAtStart.bytes
    const rawWrites = endTraffic.writes - o.trafficAtStart.writes
    const bg = background[o.system]
    const times = o.arrivalsMs.filter((x): x is number => x !== null)
    const pct = (p: number): number | null => round(percentile(times, p), 2)
    return {
      system: o.system,
      size: meta.label(o.bytes),
      bytes: o.bytes,
      seq: o.seq,
      phase: meta.phase(o),
      root: o.root,
      rootCluster: meta.cluster(o.root),
      peers: meta.peers,
      expected: o.expected,
      delivered: o.delivered,
      completeness: o.expected === 0 ? 1 : o.delivered / o.expected,
      completionMs: o.completionMs === null ? null : round(o.completionMs, 2),
      doneAtRootMs: o.doneAtRootMs === null ? null : round(o.doneAtRootMs, 2),
      p50Ms: pct(50),
      p90Ms: pct(90),
      p99Ms: pct(99),
      maxMs: pct(100),
      arrivalsMs: o.arrivalsMs.map((x) => x === null ? null : round(x, 2)),
      bytesSent: Math.max(0, Math.round(rawBytes - bg.bytesPerMs * windowMs)),
      writes: Math.max(0, Math.round(rawWrites - bg.writesPerMs * windowMs)),
      rawBytes,
      rawWrites,
      windowMs: round(windowMs, 1) ?? 0,
      publishRecipients: o.publishRecipients,
      publishError: o.publishError,
      stalled: o.stalled,
      duplicates: o.duplicates,
      tree: o.tree
    }
  })
}
