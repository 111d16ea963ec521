/** The CLI's text output for status, peers, trees and owned (`--json` prints the API's JSON). */
import { describe, expect, it } from 'vitest'
import { formatOwned, formatPeers, formatStatus, formatTrees, table } from '../node/daemon/format.ts'

describe('daemon CLI text output', () => {
  it('aligns table columns to the widest cell', () => {
    expect(table(['a', 'bb'], [['xxx', 'y'], ['z', 'wwww']])).toBe('a    bb\nxxx  y\nz    wwww\n')
  })

  it('lists peers with self first, RTT in ms and bandwidth with units', () => {
    const out = formatPeers([
      { id: '/ip4/127.0.0.1/tcp/2', self: false, connected: true, rttMs: 0.4321, bandwidthBytesPerSec: 12_500_000 },
      { id: '/ip4/127.0.0.1/tcp/3', self: false, connected: false, rttMs: null, bandwidthBytesPerSec: null },
      { id: '/ip4/127.0.0.1/tcp/1', self: true, connected: false, rttMs: null, bandwidthBytesPerSec: null }
    ]).split('\n')
    expect(out[0]).toMatch(/^peer\s+connected\s+rtt ms\s+bandwidth$/)
    expect(out[1]).toMatch(/tcp\/1 \(self\)\s+-\s+-\s+-$/)
    expect(out[2]).toMatch(/tcp\/2\s+yes\s+0\.43\s+12\.5 MB\/s$/)
    expect(out[3]).toMatch(/tcp\/3\s+no\s+-\s+-$/)
  })

  it('shows each tree\'s parent, distance or estimate, and children; a root\'s estimate is unbounded', () => {
    const out = formatTrees([
      { kind: 'bw', root: 'r', parent: null, children: ['a', 'b'], metric: 1e15 },
      { kind: 'lat', root: 'r', parent: 'a', children: [], metric: 12.345 },
      { kind: 'bw', root: 'q', parent: 'r', children: ['c'], metric: 2_000_000_000 }
    ]).split('\n')
    expect(out[1]).toMatch(/^q\s+bw\s+r\s+2\.00 GB\/s\s+1: c$/)
    expect(out[2]).toMatch(/^r\s+bw\s+\(root\)\s+unbounded\s+2: a b$/)
    expect(out[3]).toMatch(/^r\s+lat\s+a\s+12\.3 ms\s+-$/)
  })

  it('summarizes status and owned ranges', () => {
    const s = formatStatus({
      phase: 'running', id: '/ip4/127.0.0.1/tcp/1', peerId: '12D3', state: 'member', vnodeCount: 1024,
      owned: { ranges: [[0, 512], [600, 601]], size: 513, text: '{[0,512) [600,601)}' }, members: 2, connected: 1, probing: false, pid: 42, uptimeMs: 3_723_000
    })
    expect(s).toMatch(/owned\s+513 of 1024 virtual nodes: 0-511,600$/m)
    expect(s).toMatch(/phase\s+running \(member\)/)
    expect(formatStatus({ phase: 'running', id: null, peerId: 'x', state: 'running', vnodeCount: 1, owned: { ranges: [], size: 0, text: '' }, members: 1, connected: 0, probing: true, pid: 1, uptimeMs: 5000 })).toMatch(/phase\s+running\n/)
    expect(s).toMatch(/uptime\s+1h 2m/)
    expect(formatOwned({ size: 0, ranges: [] })).toBe('0 virtual nodes\n')
    expect(formatOwned({ size: 11, ranges: [[0, 10], [20, 21]] })).toBe('11 virtual nodes: 0-9,20\n')
  })
})
