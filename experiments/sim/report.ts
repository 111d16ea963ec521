/**
 * The report of a simulated run: plain JSON, byte-identical for the same scenario and seed.
 */

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
}

/** One membership change and how long until trees were stable again (null: not before the next change or the end). */
export interface RepairReport { atMs: number, event: string, stableAfterMs: number | null, interrupted: boolean }

export interface SimReport {
  scenario: string
  seed: number
  peers: { initial: number, final: number, total: number }
  vnodes: number
  simulatedMs: number
  broadcasts: BroadcastReport[]
  reductions: ReductionReport[]
  totals: {
    broadcasts: number
    broadcastsComplete: number
    lostDeliveries: number
    duplicates: number
    fallbackSends: number
    reductions: number
    reductionsWrong: number
    reductionsIncomplete: number
    messages: number
    bytes: number
    wanBytes: number
    unownedVnodesAtEnd: number
  }
  stability: { firstStableMs: number | null, repairs: RepairReport[] }
  probes: { total: number, perPeerMean: number }
  rejected: Record<string, number>
  violations: string[]
  replay: string
}

/** A short human summary of a report. */
export function summarize (r: SimReport, wallMs?: number): string {
  const t = r.totals
  const lines = [
    `scenario ${r.scenario}, seed ${r.seed}: ${r.peers.initial} peers at start, ${r.peers.final} at end, ${r.vnodes} virtual nodes, ${(r.simulatedMs / 1000).toFixed(2)} s simulated${wallMs !== undefined ? ` in ${(wallMs / 1000).toFixed(1)} s wall` : ''}`,
    `trees first stable at ${fmtMs(r.stability.firstStableMs)}; repairs: ${r.stability.repairs.map((x) => `${x.event}@${fmtMs(x.atMs)} -> ${x.interrupted ? 'interrupted by the next change' : fmtMs(x.stableAfterMs)}`).join(', ') || 'none'}`,
    `probes: ${r.probes.total} (${r.probes.perPeerMean.toFixed(1)} per peer)`,
    `broadcasts: ${t.broadcastsComplete}/${t.broadcasts} complete, ${t.lostDeliveries} lost deliveries, ${t.duplicates} duplicates, ${t.fallbackSends} point-to-point fallback sends`,
    `reductions: ${t.reductions - t.reductionsWrong - t.reductionsIncomplete}/${t.reductions} correct, ${t.reductionsWrong} wrong, ${t.reductionsIncomplete} incomplete`,
    `traffic: ${t.messages} messages, ${(t.bytes / 1e6).toFixed(1)} MB (${(t.wanBytes / 1e6).toFixed(1)} MB over wide-area links)`
  ]
  const shown = r.broadcasts.slice(0, 8)
  for (const b of shown) {
    lines.push(`  broadcast ${b.id} from ${b.root}: ${b.bytes} B on ${b.tree}, ${fmtMs(b.durationMs)}, ${b.delivered} delivered, ${b.missing} missing, ${b.fallbackSends} fallback`)
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
