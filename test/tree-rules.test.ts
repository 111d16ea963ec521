/**
 * 003's parent rules (trees/parent-rules.ts) and the probing schedule
 * (trees/probe-schedule.ts).
 */
import { describe, expect, it } from 'vitest'
import { bandwidthEstimate, bandwidthPrefers, latencyPrefers, ROOT_EST_BYTES_PER_SEC, RTT_ROUNDING } from '../trees/parent-rules.ts'
import { ProbeSchedule } from '../trees/probe-schedule.ts'

describe('latency rule (003 §IV-B)', () => {
  it('moves only when RTT(p,c) < RTT(p,parent) AND dist(c) < dist(p)', () => {
    // parent RTT 10, own dist 30
    expect(latencyPrefers(true, 10, 30, 5, 20)).toBe(true)
    expect(latencyPrefers(true, 10, 30, 10, 20)).toBe(false) // RTT equal
    expect(latencyPrefers(true, 10, 30, 11, 20)).toBe(false) // RTT worse
    expect(latencyPrefers(true, 10, 30, 5, 30)).toBe(false) // dist equal
    expect(latencyPrefers(true, 10, 30, 5, 31)).toBe(false) // dist worse
    expect(latencyPrefers(true, 10, 30, 50, 0)).toBe(false) // the root itself, but far away
  })

  it('without a tie tolerance argument the rule is 003 exactly (the core passes its tieTolerance, 0.05 by default); with one, an equal RTT may shorten the distance clearly', () => {
    // Equal RTT, much shorter path: 003 says no.
    expect(latencyPrefers(true, 10, 100, 10, 20)).toBe(false)
    expect(latencyPrefers(true, 10, 100, 10, 20, 0)).toBe(false)
    // With 5%: RTT within 5% and dist(c) + RTT(p,c) < 95% of dist(p).
    expect(latencyPrefers(true, 10, 100, 10.4, 20, 0.05)).toBe(true)
    expect(latencyPrefers(true, 10, 100, 10.6, 20, 0.05)).toBe(false)
    expect(latencyPrefers(true, 10, 100, 10, 85, 0.05)).toBe(false) // 95 is not < 95
    expect(latencyPrefers(true, 10, 100, 10, -1, 0.05)).toBe(false)
  })

  it('with a tie tolerance, RTTs equal but for rounding never move p by 003\'s strict rule (that once sent a cluster through a third one)', () => {
    // fig6 seed 3: parent in the root's cluster at 6.01 ms, dist 6.6346; a candidate in a
    // third cluster at 6.01 ms (smaller by rounding) and dist 6.6345 would make dist 12.65.
    expect(latencyPrefers(true, 6.01 + 1e-12, 6.6346, 6.01, 6.6345)).toBe(true) // 003 exactly
    expect(latencyPrefers(true, 6.01 + 1e-12, 6.6346, 6.01, 6.6345, 0.05)).toBe(false)
    expect(latencyPrefers(true, 6.01 * (1 + RTT_ROUNDING / 2), 6.6346, 6.01, 6.6345, 0.05)).toBe(false)
    // Any real gain still counts, however small (003's rule).
    expect(latencyPrefers(true, 6.01, 6.6346, 6.01 * 0.999, 6.6345, 0.05)).toBe(true)
    expect(latencyPrefers(true, 6, 6.3, 0.3, 6.2, 0.05)).toBe(true)
  })

  it('with the tie tolerance, a cluster regroups: a candidate at a quarter of the parent RTT, no farther from the root, takes p', () => {
    // p hangs directly off the root's cluster (6 ms RTT, dist 6.15); a near peer (0.3 ms)
    // with the same distance: 003 says no (dist equal); regrouping says yes (one wide-area
    // edge per cluster instead of one per peer).
    expect(latencyPrefers(true, 6, 6.15, 0.3, 6.15)).toBe(false)
    expect(latencyPrefers(true, 6, 6.15, 0.3, 6.15, 0.05)).toBe(true)
    // Farther from the root than the tolerance: no.
    expect(latencyPrefers(true, 6, 6.15, 0.3, 6.5, 0.05)).toBe(false)
    // Not near enough (more than a quarter of the parent's RTT): no.
    expect(latencyPrefers(true, 6, 6.15, 1.6, 6.15, 0.05)).toBe(false)
    // The way back: a far candidate never beats a near parent this way.
    expect(latencyPrefers(true, 0.3, 6.45, 6, 0.15, 0.05)).toBe(false)
  })

  it('a parentless peer takes any connected candidate, never a not-connected one (-1)', () => {
    expect(latencyPrefers(false, Infinity, Infinity, 1000, 999)).toBe(true)
    expect(latencyPrefers(false, Infinity, Infinity, 1, 0)).toBe(true)
    expect(latencyPrefers(false, Infinity, Infinity, 1, -1)).toBe(false)
    expect(latencyPrefers(true, 10, 30, 1, -1)).toBe(false)
  })
})

describe('bandwidth rule (003 §IV-C)', () => {
  it('est(p,c) = min(est(c), bw / (n_children(c) + 1)) for a new child', () => {
    expect(bandwidthEstimate(1000, 600, 2, false)).toBe(200)
    expect(bandwidthEstimate(100, 600, 2, false)).toBe(100)
    expect(bandwidthEstimate(ROOT_EST_BYTES_PER_SEC, 600, 0, false)).toBe(600)
  })

  it('n_children already counts p when p is a child of c', () => {
    expect(bandwidthEstimate(1000, 600, 2, true)).toBe(300)
    expect(bandwidthEstimate(1000, 600, 0, true)).toBe(600)
  })

  it('a not-connected candidate (-1) has estimate -1 and is never preferred', () => {
    expect(bandwidthEstimate(-1, 600, 0, false)).toBe(-1)
    expect(bandwidthPrefers(false, 0, -1)).toBe(false)
    expect(bandwidthPrefers(true, 10, -1)).toBe(false)
  })

  it('without a tie tolerance argument the rule is 003 exactly; with one, a near-equal estimate moves to a much closer candidate', () => {
    expect(bandwidthPrefers(true, 100, 100, 10, 1)).toBe(false)
    expect(bandwidthPrefers(true, 100, 100, 10, 1, 0)).toBe(false)
    expect(bandwidthPrefers(true, 100, 96, 10, 4.9, 0.05)).toBe(true)
    expect(bandwidthPrefers(true, 100, 96, 10, 5, 0.05)).toBe(false) // not under half the RTT
    expect(bandwidthPrefers(true, 100, 94, 10, 1, 0.05)).toBe(false) // estimate too low
    expect(bandwidthPrefers(true, 100, -1, 10, 1, 0.05)).toBe(false)
  })

  it('with the tie tolerance, a better estimate must beat the current one by more than the tolerance', () => {
    // A 4% better estimate from a candidate no closer: a tie, no move (each move costs a check).
    expect(bandwidthPrefers(true, 100, 104, 10, 10, 0.05)).toBe(false)
    expect(bandwidthPrefers(true, 100, 105, 10, 10, 0.05)).toBe(false)
    expect(bandwidthPrefers(true, 100, 105.1, 10, 10, 0.05)).toBe(true)
    // The same 4% from a much closer candidate: the tie-break moves it.
    expect(bandwidthPrefers(true, 100, 104, 10, 1, 0.05)).toBe(true)
    // Without the tolerance, 003's rule: any greater estimate.
    expect(bandwidthPrefers(true, 100, 100.1, 10, 10, 0)).toBe(true)
  })

  it('moves only to a strictly greater estimate; parentless takes any connected candidate', () => {
    expect(bandwidthPrefers(true, 100, 101)).toBe(true)
    expect(bandwidthPrefers(true, 100, 100)).toBe(false)
    expect(bandwidthPrefers(true, 100, 99)).toBe(false)
    expect(bandwidthPrefers(false, 0, 0)).toBe(true)
    expect(bandwidthPrefers(false, 0, 1)).toBe(true)
  })
})

// ---- probe schedule -----------------------------------------------------------------------

describe('ProbeSchedule', () => {
  /** Runs `next` with a script of parentless counts; returns the decisions. */
  const run = (s: ProbeSchedule, parentless: number[]): string[] => parentless.map((n) => s.next(n))

  it('is idle until triggered', () => {
    const s = new ProbeSchedule(3)
    expect(s.isActive).toBe(false)
    expect(s.next(5)).toBe('idle')
    expect(s.started).toBe(0)
  })

  it('probes while trees are parentless, then exactly extraCount more, then idles', () => {
    const s = new ProbeSchedule(3)
    s.trigger()
    expect(run(s, [4, 2, 1])).toEqual(['probe', 'probe', 'probe'])
    expect(run(s, [0, 0, 0])).toEqual(['probe', 'probe', 'probe'])
    expect(s.isActive).toBe(true)
    expect(s.next(0)).toBe('idle')
    expect(s.isActive).toBe(false)
    expect(s.next(0)).toBe('idle')
    expect(s.next(3)).toBe('idle') // inactive until the next trigger
    expect(s.started).toBe(6)
  })

  it('with no parentless tree at all, exactly extraCount probes', () => {
    for (const extra of [0, 1, 10]) {
      const s = new ProbeSchedule(extra)
      s.trigger()
      const d = run(s, new Array<number>(extra + 5).fill(0))
      expect(d.filter((x) => x === 'probe').length).toBe(extra)
      expect(d.slice(extra).every((x) => x === 'idle')).toBe(true)
    }
  })

  it('a tree becoming parentless during the extra probes is probed for without using up the extras', () => {
    const s = new ProbeSchedule(2)
    s.trigger()
    expect(run(s, [0, 1, 1, 0, 0, 0])).toEqual(['probe', 'probe', 'probe', 'probe', 'idle', 'idle'])
  })

  it('trigger resets the extra count', () => {
    const s = new ProbeSchedule(3)
    s.trigger()
    expect(run(s, [0, 0])).toEqual(['probe', 'probe'])
    s.trigger()
    expect(run(s, [0, 0, 0, 0])).toEqual(['probe', 'probe', 'probe', 'idle'])
    expect(s.started).toBe(5)
  })

  it('stop idles at once, even with parentless trees', () => {
    const s = new ProbeSchedule(10)
    s.trigger()
    expect(s.next(2)).toBe('probe')
    s.stop()
    expect(s.isActive).toBe(false)
    expect(run(s, [2, 0])).toEqual(['idle', 'idle'])
  })
})
