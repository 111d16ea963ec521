/**
 * Which peers a scenario action's selector (experiments/README.md) picks: named peers, the
 * ones that left or crashed, or a seeded random count or fraction, optionally within one
 * cluster. Random picks never include a peer named as a root elsewhere in the schedule.
 */
import type { Rng } from './rng.ts'
import type { PeerSelector } from './scenario.ts'
import type { Topology } from './network.ts'

export type PeerStatus = 'off' | 'joining' | 'running' | 'leaving' | 'left' | 'crashed'

/** What selection needs from the simulation. */
export interface SelectionView {
  readonly statuses: readonly PeerStatus[]
  readonly byName: ReadonlyMap<string, number>
  readonly topology: Topology
  readonly rng: Rng
  readonly protectedRoots: ReadonlySet<number>
  /** Peers running now (the base of `fraction`). */
  readonly running: number
}

export function isJoinable (st: PeerStatus | undefined): boolean {
  return st === 'off' || st === 'left' || st === 'crashed'
}

/** The peers `s` selects among those running (`running`) or those that may join (`joinable`), in index order. */
export function selectPeers (s: PeerSelector, kind: 'running' | 'joinable', v: SelectionView): number[] {
  const st = v.statuses
  if (Array.isArray(s.peers)) {
    return s.peers.map((n) => v.byName.get(n)).filter((i): i is number => i !== undefined && (kind === 'running' ? st[i] === 'running' : isJoinable(st[i])))
  }
  const all = st.map((_, i) => i)
  let pool: number[]
  if (s.peers === 'left') pool = all.filter((i) => st[i] === 'left')
  else if (s.peers === 'crashed') pool = all.filter((i) => st[i] === 'crashed')
  else pool = all.filter((i) => (kind === 'running' ? st[i] === 'running' && !v.protectedRoots.has(i) : st[i] === 'off'))
  if (s.cluster !== undefined) {
    const c = v.topology.clusters.findIndex((x) => x.name === s.cluster)
    pool = pool.filter((i) => v.topology.clusterOf(i) === c)
  }
  const n = s.count ?? (s.fraction !== undefined ? Math.round(s.fraction * v.running) : pool.length)
  return v.rng.shuffle(pool).slice(0, Math.min(n, pool.length)).sort((a, b) => a - b)
}
