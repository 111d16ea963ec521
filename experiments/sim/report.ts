/**
 * The report of a simulated run: plain JSON, byte-identical for the same scenario and seed.
 */
import type { DeliveryRecord } from './checker.ts'
import type { Action } from './scenario.ts'
import type { SendTrack } from './sends.ts'

/** What the simulator tracks of a broadcast it started. */
export interface BcastTrack { id: string, root: string, bytes: number, tree: string, startMs: number, doneAtRootMs: number | null, fallback: number, messages: number, bytesSent: number, streams: number, stripes: number, backToBack: Extract<Action, { do: 'broadcast' }> | null, treeRoot?: string }
/** What the simulator tracks of a reduction it started. */
export interface RedTrack { id: string, root: string, op: string, length: number, startMs: number, endMs: number | null, correct: boolean, complete: boolean, collective?: { callers: number } }

/** Everything a report is built from. */
export interface ReportInput {
  scenario: string
  seed: number
  peers: { initial: number, final: number, total: number }
  vnodes: number
  nowMs: number
  broadcasts: readonly BcastTrack[]
  reductions: readonly RedTrack[]
  sends: readonly SendTrack[]
  deliveries: ReadonlyMap<string, DeliveryRecord>
  probes: number
  /** Probes that reused a recent bandwidth (no download). */
  probesLight: number
  /** Tree-news offers received. */
  offers: number
  everStarted: number
  rejected: Record<string, number>
  net: { messages: number, bytes: number, wanBytes: number }
  unowned: number
  leavesTimedOut: number
  joinsFailed: number
  firstStableMs: number | null
  repairs: readonly RepairReport[]
  violations: readonly string[]
}

/** Builds the report (times rounded to the microsecond). */
export function buildReport (x: ReportInput): SimReport {
  const broadcasts: BroadcastReport[] = x.broadcasts.map((b) => {
    const d = x.deliveries.get(b.id)
    const delivered = d?.delivered ?? 0
    const complete = delivered === x.vnodes && d !== undefined
    return {
      id: b.id,
      root: b.root,
      bytes: b.bytes,
      tree: b.tree,
      startMs: round(b.startMs),
      completeMs: complete ? round(d.lastDeliveryMs) : null,
      durationMs: complete ? round(d.lastDeliveryMs - b.startMs) : null,
      doneAtRootMs: b.doneAtRootMs === null ? null : round(b.doneAtRootMs),
      delivered,
      missing: x.vnodes - delivered,
      duplicates: d?.duplicates ?? 0,
      fallbackSends: b.fallback,
      messages: b.messages,
      bytesSent: b.bytesSent,
      streams: b.streams,
      stripes: b.stripes,
      ...(b.treeRoot !== undefined ? { treeRoot: b.treeRoot } : {})
    }
  })
  const reductions: ReductionReport[] = x.reductions.map((r) => ({
    id: r.id, root: r.root, op: r.op, length: r.length, startMs: round(r.startMs), durationMs: r.endMs === null ? null : round(r.endMs - r.startMs), complete: r.complete, correct: r.correct,
    ...(r.collective !== undefined ? { collective: r.collective } : {})
  }))
  const sends: SendReport[] = x.sends.map((s) => {
    const d = x.deliveries.get(s.id)
    const at = d === undefined ? NaN : d.firstMs[s.vnode] as number
    const delivered = !Number.isNaN(at)
    return { id: s.id, from: s.from, vnode: s.vnode, bytes: s.bytes, startMs: round(s.startMs), deliveredMs: delivered ? round(at) : null, durationMs: delivered ? round(at - s.startMs) : null, duplicates: d?.duplicates ?? 0 }
  })
  return {
    scenario: x.scenario,
    seed: x.seed,
    peers: x.peers,
    vnodes: x.vnodes,
    simulatedMs: round(x.nowMs),
    broadcasts,
    reductions,
    sends,
    totals: {
      broadcasts: broadcasts.length,
      broadcastsComplete: broadcasts.filter((b) => b.missing === 0).length,
      lostDeliveries: broadcasts.reduce((n, b) => n + b.missing, 0),
      duplicates: broadcasts.reduce((n, b) => n + b.duplicates, 0),
      fallbackSends: broadcasts.reduce((n, b) => n + b.fallbackSends, 0),
      reductions: reductions.length,
      reductionsWrong: reductions.filter((r) => r.complete && !r.correct).length,
      reductionsIncomplete: reductions.filter((r) => !r.complete).length,
      sends: sends.length,
      sendsLost: sends.filter((s) => s.deliveredMs === null).length,
      sendDuplicates: sends.reduce((n, s) => n + s.duplicates, 0),
      messages: x.net.messages,
      bytes: x.net.bytes,
      wanBytes: x.net.wanBytes,
      unownedVnodesAtEnd: x.unowned,
      leavesTimedOut: x.leavesTimedOut,
      joinsFailed: x.joinsFailed
    },
    stability: { firstStableMs: x.firstStableMs === null ? null : round(x.firstStableMs), repairs: x.repairs.map((r) => ({ ...r, atMs: round(r.atMs), treesRepairedAfterMs: r.treesRepairedAfterMs === null ? null : round(r.treesRepairedAfterMs), stableAfterMs: r.stableAfterMs === null ? null : round(r.stableAfterMs) })) },
    probes: { total: x.probes, perPeerMean: round(x.probes / Math.max(1, x.everStarted)), light: x.probesLight, offers: x.offers },
    rejected: x.rejected,
    violations: [...x.violations],
    replay: `npm run --silent sim -- ${x.scenario}.json --seed ${x.seed}`
  }
}

function round (v: number): number {
  return Math.round(v * 1000) / 1000
}

export interface BroadcastReport {
  id: string
  root: string
  bytes: number
  tree: string
  startMs: number
  completeMs: number | null
  durationMs: number | null
  doneAtRootMs: number | null
  delivered: number
  missing: number
  duplicates: number
  fallbackSends: number
  messages: number
  bytesSent: number
  /** Streams opened (each acknowledged once): one per non-root peer on a stable tree, more when striped. */
  streams: number
  /** Stripes the root dealt the payload into (1: not striped; overlay/stripes.ts). */
  stripes: number
  /** The tree root whose trees carried it, when not the root's own (overlay/tree-roots.ts). */
  treeRoot?: string
}

export interface ReductionReport {
  id: string
  root: string
  op: string
  length: number
  startMs: number
  durationMs: number | null
  complete: boolean
  correct: boolean
  /** A collective reduction (every running peer called it): how many peers called it. */
  collective?: { callers: number }
}

/** A point-to-point message (a scenario's `send`). */
export interface SendReport {
  id: string
  from: string
  vnode: number
  bytes: number
  startMs: number
  /** When it was first delivered (at the owner of `vnode` then); null: never (lost). */
  deliveredMs: number | null
  durationMs: number | null
  /** Deliveries in one ownership lineage beyond the first (must be 0). */
  duplicates: number
}

/**
 * One membership change and how long the trees took to recover. `treesRepairedAfterMs`:
 * every running peer knows exactly the running peers, has a parent in every tree and has
 * stopped probing (peers still leaving, already out of every tree, aside). `stableAfterMs`:
 * that, and every leaver gone (done passing on the data it had accepted).
 */
export interface RepairReport { atMs: number, event: string, treesRepairedAfterMs: number | null, stableAfterMs: number | null, interrupted: boolean }

export interface SimReport {
  scenario: string
  seed: number
  peers: { initial: number, final: number, total: number }
  vnodes: number
  simulatedMs: number
  broadcasts: BroadcastReport[]
  reductions: ReductionReport[]
  sends: SendReport[]
  totals: {
    broadcasts: number
    broadcastsComplete: number
    lostDeliveries: number
    duplicates: number
    fallbackSends: number
    reductions: number
    reductionsWrong: number
    reductionsIncomplete: number
    /** Point-to-point messages (`send` actions), those never delivered, and duplicate deliveries of them. */
    sends: number
    sendsLost: number
    sendDuplicates: number
    messages: number
    bytes: number
    wanBytes: number
    unownedVnodesAtEnd: number
    /** Graceful leaves that hit `leaveTimeoutMs` before their data drained (0 when nothing is stuck). */
    leavesTimedOut: number
    /** Joins given up because the contact went down before its welcome (the joiner then counts as crashed). */
    joinsFailed: number
  }
  stability: { firstStableMs: number | null, repairs: RepairReport[] }
  /** `light`: probes that reused a bandwidth measured recently instead of downloading (`probeBandwidthReuseMs`). */
  probes: { total: number, perPeerMean: number, light: number, offers: number }
  rejected: Record<string, number>
  violations: string[]
  replay: string
}

/** A short human summary of a report. */
export function summarize (r: SimReport, wallMs?: number, live = false): string {
  const t = r.totals
  const lines = [
    `scenario ${r.scenario}, seed ${r.seed}: ${r.peers.initial} peers at start, ${r.peers.final} at end, ${r.vnodes} virtual nodes, ${(r.simulatedMs / 1000).toFixed(2)} s ${live ? 'of schedule on real peers' : 'simulated'}${wallMs !== undefined ? ` in ${(wallMs / 1000).toFixed(1)} s wall` : ''}`,
    `trees first stable at ${fmtMs(r.stability.firstStableMs)}; repairs: ${r.stability.repairs.map((x) => `${x.event}@${fmtMs(x.atMs)} -> ${x.interrupted ? 'interrupted by the next change' : `trees ${fmtMs(x.treesRepairedAfterMs)}, leavers gone ${fmtMs(x.stableAfterMs)}`}`).join(', ') || 'none'}`,
    `probes: ${r.probes.total} (${r.probes.perPeerMean.toFixed(1)} per peer; ${r.probes.light} light, without download; ${r.probes.offers} tree-news offers received)`,
    `broadcasts: ${t.broadcastsComplete}/${t.broadcasts} complete, ${t.lostDeliveries} lost deliveries, ${t.duplicates} duplicates, ${t.fallbackSends} point-to-point fallback sends`,
    `reductions: ${t.reductions - t.reductionsWrong - t.reductionsIncomplete}/${t.reductions} correct, ${t.reductionsWrong} wrong, ${t.reductionsIncomplete} incomplete`,
    ...(t.sends > 0 ? [`point-to-point: ${t.sends - t.sendsLost}/${t.sends} delivered, ${t.sendsLost} lost, ${t.sendDuplicates} duplicates`] : []),
    `traffic: ${t.messages} messages, ${(t.bytes / 1e6).toFixed(1)} MB (${(t.wanBytes / 1e6).toFixed(1)} MB over wide-area links)`
  ]
  const shown = r.broadcasts.slice(0, 8)
  for (const b of shown) {
    lines.push(`  broadcast ${b.id} from ${b.root}: ${b.bytes} B on ${b.tree}${b.treeRoot !== undefined ? ` of ${b.treeRoot}` : ''}, ${fmtMs(b.durationMs)}, ${b.delivered} delivered, ${b.missing} missing, ${b.fallbackSends} fallback`)
  }
  if (r.broadcasts.length > shown.length) lines.push(`  ... ${r.broadcasts.length - shown.length} more broadcasts`)
  for (const x of r.reductions.slice(0, 8)) lines.push(`  reduction ${x.id} (${x.op}, ${x.length}): ${fmtMs(x.durationMs)}, ${x.correct ? 'correct' : x.complete ? 'WRONG' : 'INCOMPLETE'}`)
  if (r.violations.length > 0) {
    lines.push(`INVARIANT VIOLATIONS (${r.violations.length}):`)
    for (const v of r.violations.slice(0, 20)) lines.push(`  ${v}`)
    lines.push(`reproduce with: ${r.replay}`)
  } else {
    lines.push('invariants: no violations')
  }
  return lines.join('\n')
}

function fmtMs (ms: number | null): string {
  return ms === null ? 'never' : ms < 1000 ? `${ms.toFixed(2)} ms` : `${(ms / 1000).toFixed(3)} s`
}
