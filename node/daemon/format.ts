/**
 * Human-readable output of the CLI's read commands (`status`, `peers`, `trees`, `owned`):
 * aligned text tables. `--json` prints the API's JSON instead, for scripts.
 */
import type { PeerReply, StatusReply, TreeReply } from './client.ts'

/** Left-aligned columns separated by two spaces; a header row, no borders. */
export function table (header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (r: readonly string[]): string => r.map((c, i) => i === r.length - 1 ? c : c.padEnd(widths[i] as number)).join('  ').trimEnd()
  return [line(header), ...rows.map(line)].join('\n') + '\n'
}

function ms (v: number | null): string {
  return v === null || !Number.isFinite(v) ? '-' : v < 10 ? v.toFixed(2) : v.toFixed(1)
}

/** A rate; null is what JSON makes of the root's infinite estimate, so it prints as unbounded only where the caller says so. */
function rate (bytesPerSec: number | null, nullText = '-'): string {
  if (bytesPerSec === null) return nullText
  if (!Number.isFinite(bytesPerSec)) return 'unbounded'
  if (bytesPerSec >= 1e9) return `${(bytesPerSec / 1e9).toFixed(2)} GB/s`
  if (bytesPerSec >= 1e6) return `${(bytesPerSec / 1e6).toFixed(1)} MB/s`
  return `${(bytesPerSec / 1e3).toFixed(1)} KB/s`
}

function duration (msTotal: number): string {
  const s = Math.floor(msTotal / 1000)
  const d = Math.floor(s / 86400)
  const h = Math.floor((s % 86400) / 3600)
  const m = Math.floor((s % 3600) / 60)
  return d > 0 ? `${d}d ${h}h ${m}m` : h > 0 ? `${h}h ${m}m` : m > 0 ? `${m}m ${s % 60}s` : `${s}s`
}

/** Half-open ranges as the CLI reads them: inclusive, comma separated ("0-99,200"). */
function ranges (rs: ReadonlyArray<readonly [number, number]>): string {
  return rs.map(([a, b]) => b - a === 1 ? `${a}` : `${a}-${b - 1}`).join(',')
}

export function formatStatus (s: StatusReply): string {
  const rows: Array<[string, string]> = [
    ['id', s.id ?? '-'],
    ['peer id', s.peerId],
    ['phase', s.phase + (s.state !== null && s.state !== s.phase ? ` (${s.state})` : '')],
    ['owned', `${s.owned.size} of ${s.vnodeCount} virtual nodes${s.owned.size > 0 ? `: ${ranges(s.owned.ranges)}` : ''}`],
    ['members', String(s.members)],
    ['connected', String(s.connected)],
    ['probing', s.probing ? 'yes' : 'no'],
    ['pid', String(s.pid)],
    ['uptime', duration(s.uptimeMs)]
  ]
  const w = Math.max(...rows.map(([k]) => k.length))
  return rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n') + '\n'
}

export function formatPeers (peers: readonly PeerReply[]): string {
  const sorted = [...peers].sort((a, b) => Number(b.self) - Number(a.self) || a.id.localeCompare(b.id))
  return table(['peer', 'connected', 'rtt ms', 'bandwidth'], sorted.map((p) => [
    p.self ? `${p.id} (self)` : p.id, p.self ? '-' : p.connected ? 'yes' : 'no', ms(p.rttMs), rate(p.bandwidthBytesPerSec)
  ]))
}

export function formatTrees (trees: readonly TreeReply[]): string {
  const sorted = [...trees].sort((a, b) => a.root.localeCompare(b.root) || a.kind.localeCompare(b.kind))
  return table(['root', 'tree', 'parent', 'dist / est', 'children'], sorted.map((t) => [
    t.root, t.kind, t.parent ?? '(root)',
    t.kind === 'lat' ? `${ms(t.metric)} ms` : t.parent === null ? 'unbounded' : rate(t.metric as number | null),
    t.children.length === 0 ? '-' : `${t.children.length}: ${t.children.join(' ')}`
  ]))
}

export function formatOwned (o: { size: number, ranges: ReadonlyArray<readonly [number, number]> }): string {
  return `${o.size} virtual nodes${o.size > 0 ? `: ${ranges(o.ranges)}` : ''}\n`
}
