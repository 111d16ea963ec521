import { describe, expect, it } from 'vitest'
import { ProbeRunner, type ProbeHost } from '../overlay/probe-runner.ts'
import type { Message } from '../overlay/messages.ts'
import { resolveCoreConfig } from '../overlay/config.ts'
import { InvalidConfigError } from '../overlay/errors.ts'

function harness (probePingCount: number): { runner: ProbeRunner, sent: Array<{ to: string, msg: Message }>, judged: Array<{ rtt: number, bw: number }>, finished: number[] } {
  const sent: Array<{ to: string, msg: Message }> = []
  const judged: Array<{ rtt: number, bw: number }> = []
  const finished: number[] = []
  const host: ProbeHost = {
    candidate: () => 'b',
    baseRttMs: () => Infinity,
    send: (to, msg) => { sent.push({ to, msg }) },
    setTimer: () => {},
    judged: (_now, _cand, rtt, bw) => { judged.push({ rtt, bw }) },
    finished: (now) => { finished.push(now) }
  }
  return { runner: new ProbeRunner(host, { probeTimeoutMs: 3000, probeBytes: 128 * 1024, probePingCount }), sent, judged, finished }
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

  it('probePingCount is validated', () => {
    expect(resolveCoreConfig({}).probePingCount).toBe(1)
    expect(() => resolveCoreConfig({ probePingCount: 0 })).toThrow(InvalidConfigError)
    expect(() => resolveCoreConfig({ probePingCount: 1.5 })).toThrow(InvalidConfigError)
    expect(() => resolveCoreConfig({ probePingCount: 17 })).toThrow(InvalidConfigError)
  })
})
