import { describe, expect, it } from 'vitest'
import { ProbeRunner, type ProbeHost } from '../overlay/probe-runner.ts'
import type { Message } from '../overlay/messages.ts'
import { resolveCoreConfig } from '../overlay/config.ts'
import { InvalidConfigError } from '../overlay/errors.ts'
import { BandwidthMemory, MAX_BANDWIDTHS_REMEMBERED } from '../overlay/bandwidth-memory.ts'
import { firstNumberOf, NUMBER_BLOCK } from '../overlay/incarnation-numbers.ts'

function harness (probePingCount: number, memory = new BandwidthMemory(0)): { runner: ProbeRunner, sent: Array<{ to: string, msg: Message }>, judged: Array<{ rtt: number, bw: number | undefined }>, finished: number[], timers: number[] } {
  const sent: Array<{ to: string, msg: Message }> = []
  const timers: number[] = []
  const judged: Array<{ rtt: number, bw: number | undefined }> = []
  const finished: number[] = []
  const host: ProbeHost = {
    candidate: () => 'b',
    baseRttMs: () => Infinity,
    knownBwBytesPerSec: (peer, now) => memory.known(peer, now),
    measuredBw: (peer, bw, now) => { memory.measured(peer, bw, now) },
    send: (to, msg) => { sent.push({ to, msg }) },
    setTimer: (at) => { timers.push(at) },
    judged: (_now, _cand, rtt, bw) => { judged.push({ rtt, bw }) },
    finished: (now) => { finished.push(now) }
  }
  return { runner: new ProbeRunner(host, { probeTimeoutMs: 3000, probeBytes: 128 * 1024, probePingCount }), sent, judged, finished, timers }
}

const nonceOf = (m: Message): number => (m as { nonce: number }).nonce

describe('ProbeRunner', () => {
  it('with one ping: RTT from the ping, bandwidth from the download minus one RTT', () => {
    const h = harness(1)
    h.runner.start(0)
    expect(h.sent[0]?.msg.t).toBe('ping')
    h.runner.onPong(10, 'b', nonceOf(h.sent[0]!.msg))
    expect(h.sent[1]?.msg.t).toBe('probe-req')
    h.runner.onReply(30, 'b', { t: 'probe-rep', nonce: nonceOf(h.sent[1]!.msg), trees: [], padding: 128 * 1024 })
    expect(h.judged).toEqual([{ rtt: 10, bw: 128 * 1024 / 0.010 }])
    expect(h.finished).toEqual([30])
  })

  it('with two pings: the slow first ping (connection set-up) does not count', () => {
    const h = harness(2)
    h.runner.start(0)
    h.runner.onPong(500, 'b', nonceOf(h.sent[0]!.msg))
    expect(h.sent[1]?.msg.t).toBe('ping')
    // A late duplicate of the first pong is ignored.
    h.runner.onPong(501, 'b', nonceOf(h.sent[0]!.msg))
    expect(h.sent).toHaveLength(2)
    h.runner.onPong(520, 'b', nonceOf(h.sent[1]!.msg))
    expect(h.sent[2]?.msg.t).toBe('probe-req')
    h.runner.onReply(560, 'b', { t: 'probe-rep', nonce: nonceOf(h.sent[2]!.msg), trees: [], padding: 128 * 1024 })
    expect(h.judged[0]?.rtt).toBe(20)
    expect(h.judged[0]?.bw).toBeCloseTo(128 * 1024 / 0.020)
  })

  it('keeps one probe timer pending at a time, and still gives up a silent probe at its deadline', () => {
    const h = harness(1)
    h.runner.start(0)
    expect(h.timers).toEqual([3000])
    h.runner.onPong(10, 'b', nonceOf(h.sent[0]!.msg))
    h.runner.onReply(30, 'b', { t: 'probe-rep', nonce: nonceOf(h.sent[1]!.msg), trees: [], padding: 128 * 1024 })
    // Answered in 30 ms; the next probe starts while that timer is still pending: no second one.
    h.runner.start(40)
    expect(h.timers).toEqual([3000])
    // Another probe timer of the peer (the near lane's) fires first: nothing to do, nothing set.
    h.runner.onTimer(100)
    expect(h.timers).toEqual([3000])
    // The pending timer fires before the silent probe's deadline: the next is set at it.
    h.runner.onTimer(3000)
    expect(h.timers).toEqual([3000, 3040])
    expect(h.finished).toEqual([30])
    h.runner.onTimer(3040)
    expect(h.finished).toEqual([30, 3040])
    expect(h.runner.inFlight).toBe(false)
    // Its timer fired: the next probe sets one.
    h.runner.start(4000)
    expect(h.timers).toEqual([3000, 3040, 7000])
  })

  it('gives a silent probe up when its timer fires at the deadline it set, however large the clock (a driver up for hours)', () => {
    // 2^24 ms (4.7 hours) lies inside the probe's window: sentAt + 3000 rounds down by 1.9e-9,
    // more than 1e-9: the deadline check (now - sentAt >= timeout - 1e-9) failed at the timer's
    // own time, and the runner set the same timer again: a driver running every deadline due
    // at `now` (the core's handleTimeout) would loop for ever.
    const sentAt = 16776738.828745024
    const h = harness(1)
    h.runner.start(sentAt)
    const at = h.timers[0] as number
    expect(at).toBe(sentAt + 3000)
    h.runner.onTimer(at)
    expect(h.finished).toEqual([at])
    expect(h.runner.inFlight).toBe(false)
    expect(h.timers).toEqual([at])
  })

  it("numbers its nonces in its incarnation's block: an earlier incarnation's pong, still on the wire, times nothing", () => {
    const old = harness(1)
    old.runner.start(0)
    const stale = nonceOf(old.sent[0]!.msg)
    expect(stale).toBe(2)
    const h = harness(1)
    h.runner.numberFrom(firstNumberOf(3))
    h.runner.start(100)
    const fresh = nonceOf(h.sent[0]!.msg)
    expect(fresh).toBe(3 * NUMBER_BLOCK + 2)
    // The earlier incarnation's pong arrives first: no match, still pinging.
    h.runner.onPong(101, 'b', stale)
    expect(h.sent).toHaveLength(1)
    h.runner.onPong(110, 'b', fresh)
    expect(h.sent[1]?.msg.t).toBe('probe-req')
    h.runner.onReply(130, 'b', { t: 'probe-rep', nonce: nonceOf(h.sent[1]!.msg), trees: [], padding: 128 * 1024 })
    expect(h.judged[0]?.rtt).toBe(10)
  })

  it('probePingCount is validated', () => {
    expect(resolveCoreConfig({}).probePingCount).toBe(1)
    expect(() => resolveCoreConfig({ probePingCount: 0 })).toThrow(InvalidConfigError)
    expect(() => resolveCoreConfig({ probePingCount: 1.5 })).toThrow(InvalidConfigError)
    expect(() => resolveCoreConfig({ probePingCount: 17 })).toThrow(InvalidConfigError)
  })

  it('a light probe reuses the bandwidth measured within probeBandwidthReuseMs: no download, fresh RTT', () => {
    const memory = new BandwidthMemory(1000)
    const h = harness(1, memory)
    const probe = (at: number, pongMs: number, replyMs: number, padding: number): Message => {
      h.runner.start(at)
      const ping = h.sent.at(-1)!.msg
      h.runner.onPong(at + pongMs, 'b', nonceOf(ping))
      const req = h.sent.at(-1)!.msg
      h.runner.onReply(at + pongMs + replyMs, 'b', { t: 'probe-rep', nonce: nonceOf(req), trees: [], padding })
      return req
    }
    // First probe downloads: 128 KB in 20 ms after a 10 ms RTT.
    expect(probe(0, 10, 30, 128 * 1024)).toEqual({ t: 'probe-req', nonce: expect.any(Number) })
    expect(h.judged[0]).toEqual({ rtt: 10, bw: 128 * 1024 / 0.020 })
    // 500 ms later: light, the reply (no padding) comes after one RTT; the bandwidth is the one measured.
    expect(probe(500, 8, 8, 0)).toEqual({ t: 'probe-req', nonce: expect.any(Number), light: true })
    expect(h.judged[1]).toEqual({ rtt: 8, bw: 128 * 1024 / 0.020 })
    expect(h.runner.light).toBe(1)
    // The reuse window counts from the download, not from the light probe: at 1100 ms it downloads again.
    expect(probe(1100, 10, 50, 128 * 1024)).toEqual({ t: 'probe-req', nonce: expect.any(Number) })
    expect(h.judged[2]?.bw).toBeCloseTo(128 * 1024 / 0.040)
    expect(h.runner.light).toBe(1)
  })

  it('with probeBandwidthReuseMs 0 (003) every probe downloads', () => {
    const h = harness(1, new BandwidthMemory(resolveCoreConfig({ probeBandwidthReuseMs: 0 }).probeBandwidthReuseMs))
    for (const at of [0, 100, 200]) {
      h.runner.start(at)
      h.runner.onPong(at + 1, 'b', nonceOf(h.sent.at(-1)!.msg))
      const req = h.sent.at(-1)!.msg
      expect(req).toEqual({ t: 'probe-req', nonce: expect.any(Number) })
      h.runner.onReply(at + 3, 'b', { t: 'probe-rep', nonce: nonceOf(req), trees: [], padding: 128 * 1024 })
    }
    expect(h.runner.light).toBe(0)
  })

  it('BandwidthMemory forgets gone peers, expired measurements, and the oldest past its bound', () => {
    const m = new BandwidthMemory(100)
    m.measured('a', 5, 0)
    expect(m.known('a', 100)).toBe(5)
    expect(m.known('a', 101)).toBeUndefined()
    m.measured('a', 6, 200)
    m.forget('a')
    expect(m.known('a', 200)).toBeUndefined()
    for (let i = 0; i <= MAX_BANDWIDTHS_REMEMBERED; i++) m.measured(`p${i}`, i, 300)
    expect(m.size).toBe(MAX_BANDWIDTHS_REMEMBERED)
    expect(m.known('p0', 300)).toBeUndefined()
    expect(m.known(`p${MAX_BANDWIDTHS_REMEMBERED}`, 300)).toBe(MAX_BANDWIDTHS_REMEMBERED)
    expect(() => resolveCoreConfig({ probeBandwidthReuseMs: -1 })).toThrow(InvalidConfigError)
  })
})
