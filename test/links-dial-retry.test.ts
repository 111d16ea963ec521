/**
 * How a failed dial of a control stream is judged (node/links.ts, node/dial-failure.ts): a
 * timeout is tried again up to `dialAttempts` before the peer is reported down (an
 * overloaded machine handshakes late; 24 in-process peers took over 6 s during a cold
 * start and had live peers declared dead), a refusal is reported at once, and a retry
 * that connects delivers what was queued. Fake libp2p components, no sockets.
 */
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { afterEach, describe, expect, it } from 'vitest'
import type { NodeNetInit } from '../node/config.ts'
import { DialFailure, isTimeout } from '../node/dial-failure.ts'
import { FrameKind } from '../node/frame-channel.ts'
import { encodeHello } from '../node/hello.ts'
import { FakeStream } from './fake-stream.ts'
import { frame, frameKinds, refusedError, rig, settled, timeoutError, type Rig, type Step } from './links-rig.ts'

describe('dialling a control stream', () => {
  let peer = ''
  let current: Rig | undefined
  afterEach(async () => { await current?.links.stop(); current = undefined })

  const target = async (): Promise<string> => {
    if (peer === '') peer = `/ip4/127.0.0.1/tcp/4001/p2p/${peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()}`
    return peer
  }

  /** A rig whose openConnection calls follow `steps`, after a ping to the target was queued and the dials settled. */
  const dialled = async (steps: Step[], net: NodeNetInit = {}): Promise<{ to: string, r: Rig }> => {
    const to = await target()
    const r = current = await rig(steps, net)
    r.links.send(to, { t: 'ping', nonce: 1 }, undefined)
    await settled()
    return { to, r }
  }

  it('tries a timed-out dial again and delivers what waited, reporting nobody down', async () => {
    const { to, r } = await dialled([timeoutError(), 'connect'])
    expect(r.calls()).toBe(2)
    expect(r.down).toEqual([])
    expect(r.links.stats).toMatchObject({ dials: 2, dialFailures: 1, dialRetries: 1 })
    expect(r.links.connectedPeers()).toEqual([to])
    const [s] = r.streams as [FakeStream]
    expect(frameKinds(s)).toEqual([FrameKind.Hello, FrameKind.Core])
  })

  it('reports a peer down after dialAttempts timeouts', async () => {
    const { to, r } = await dialled([timeoutError(), timeoutError(), timeoutError(), 'connect'], { dialAttempts: 3 })
    expect(r.calls()).toBe(3)
    expect(r.down).toEqual([to])
    expect(r.links.stats).toMatchObject({ dials: 3, dialFailures: 3, dialRetries: 2 })
    expect(r.links.connectedPeers()).toEqual([])
  })

  it('reports nobody down when the peer connected to us while our dial timed out', async () => {
    const to = await target()
    const remote = to.slice(to.lastIndexOf('/p2p/') + 5)
    let r: Rig | undefined
    const theirs = new FakeStream()
    current = r = await rig([{ before: () => { r?.inbound(theirs, remote); theirs.feed(frame(FrameKind.Hello, encodeHello({ id: to, incarnation: 5 }))) }, then: timeoutError() }, timeoutError()], { dialAttempts: 2 })
    current.links.send(to, { t: 'ping', nonce: 3 }, undefined)
    await settled()
    expect(current.calls()).toBe(1)
    expect(current.down).toEqual([])
    expect(current.links.connectedPeers()).toEqual([to])
    // our hello answered theirs, and the waiting ping went out on their stream
    expect(frameKinds(theirs)).toEqual([FrameKind.Hello, FrameKind.Core])
  })

  it('reports a refusing peer down at the first attempt', async () => {
    const { to, r } = await dialled([refusedError(), 'connect'])
    expect(r.calls()).toBe(1)
    expect(r.down).toEqual([to])
    expect(r.links.stats).toMatchObject({ dials: 1, dialFailures: 1, dialRetries: 0 })
  })

  it('with dialAttempts 1 reports the first timeout', async () => {
    const { to, r } = await dialled([timeoutError(), 'connect'], { dialAttempts: 1 })
    expect(r.down).toEqual([to])
    expect(r.calls()).toBe(1)
  })
})

describe('isTimeout', () => {
  it('finds a timeout in the error, its causes or an AggregateError, and nothing else', () => {
    expect(isTimeout(timeoutError())).toBe(true)
    expect(isTimeout(Object.assign(new Error('aborted'), { name: 'AbortError' }))).toBe(true)
    expect(isTimeout(new Error('wrapped', { cause: timeoutError() }))).toBe(true)
    expect(isTimeout(new AggregateError([refusedError(), timeoutError()]))).toBe(true)
    // libp2p's upgrader keeps only the message: EncryptionFailedError(err.message)
    expect(isTimeout(Object.assign(new Error('The operation was aborted due to timeout'), { name: 'EncryptionFailedError' }))).toBe(true)
    expect(isTimeout(new DialFailure(timeoutError(), true, 10, 'connecting').cause)).toBe(true)
    expect(isTimeout(refusedError())).toBe(false)
    expect(isTimeout(new AggregateError([refusedError()]))).toBe(false)
    expect(isTimeout('timeout')).toBe(false)
    expect(isTimeout(null)).toBe(false)
    const loop: { name: string, cause?: unknown } = { name: 'Error' }
    loop.cause = loop
    expect(isTimeout(loop)).toBe(false)
  })

  it('says how far a failed attempt got', () => {
    const f = new DialFailure(refusedError(), false, 12, 'connecting')
    expect(f.message).toBe('connect ECONNREFUSED 127.0.0.1:4001, after 12 ms, connecting')
    expect(f.timedOut).toBe(false)
  })
})
