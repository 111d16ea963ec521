import { describe, expect, it } from 'vitest'
import { Measurements } from '../node/measurements.ts'

describe('node Measurements', () => {
  it('RTT from the ping-pong, bandwidth from the download minus one RTT', () => {
    const m = new Measurements(128 * 1024)
    m.sent(0, 'b', { t: 'ping', nonce: 5 })
    m.received(10, 'b', { t: 'pong', nonce: 5 })
    m.sent(10, 'b', { t: 'probe-req', nonce: 5 })
    m.received(40, 'b', { t: 'probe-rep', nonce: 5, trees: [], padding: 128 * 1024 })
    expect(m.get('b')).toEqual({ rttMs: 10, bandwidthBytesPerSec: 128 * 1024 / 0.020, at: 40 })
  })

  it('a light probe (no download) keeps the bandwidth measured before', () => {
    const m = new Measurements(128 * 1024)
    m.sent(0, 'b', { t: 'probe-req', nonce: 1 })
    m.received(20, 'b', { t: 'probe-rep', nonce: 1, trees: [], padding: 128 * 1024 })
    const before = m.get('b')?.bandwidthBytesPerSec
    m.sent(100, 'b', { t: 'ping', nonce: 2 })
    m.received(104, 'b', { t: 'pong', nonce: 2 })
    m.sent(104, 'b', { t: 'probe-req', nonce: 2, light: true })
    m.received(108, 'b', { t: 'probe-rep', nonce: 2, trees: [], padding: 0 })
    expect(m.get('b')).toEqual({ rttMs: 4, bandwidthBytesPerSec: before, at: 104 })
  })
})
