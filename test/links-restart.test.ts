/**
 * A peer that restarted says hello with a newer incarnation (node/links.ts): whichever side
 * opened the channel that carries it, the older process's control channels are aborted,
 * every one of them, without a redial, so nothing more goes to a process that is gone. An
 * equal incarnation (both sides dialled at once) keeps both channels, and so does a late
 * channel of an older process or one whose hello is still to come. Fake libp2p components,
 * no sockets.
 */
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { afterEach, describe, expect, it } from 'vitest'
import { FrameKind } from '../node/frame-channel.ts'
import { encodeHello } from '../node/hello.ts'
import { FakeStream } from './fake-stream.ts'
import { frame, frameKinds, rig, settled, type Rig } from './links-rig.ts'

describe('a restarted peer says hello', () => {
  let current: Rig | undefined
  afterEach(async () => { await current?.links.stop(); current = undefined })

  const target = async (): Promise<{ to: string, remote: string }> => {
    const remote = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
    return { to: `/ip4/127.0.0.1/tcp/4001/p2p/${remote}`, remote }
  }
  const hello = (to: string, incarnation: number): ReturnType<typeof frame> => frame(FrameKind.Hello, encodeHello({ id: to, incarnation }))

  it('on a channel it opened: the older incarnation\'s channel is aborted, the new one kept', async () => {
    const { to, remote } = await target()
    const r = current = await rig([])
    const old = new FakeStream()
    r.inbound(old, remote)
    old.feed(hello(to, 5))
    const restarted = new FakeStream()
    r.inbound(restarted, remote)
    restarted.feed(hello(to, 6))
    await settled()
    expect(old.aborted?.message).toBe('restarted')
    expect(restarted.aborted).toBeUndefined()
    expect(r.links.connectedPeers()).toEqual([to])
    expect(r.down).toEqual([])
  })

  /** Inbound control channels from `remote`, each saying hello as the given incarnation. */
  const inbound = (r: Rig, to: string, remote: string, ...incarnations: number[]): FakeStream[] => incarnations.map((inc) => {
    const s = new FakeStream()
    r.inbound(s, remote)
    s.feed(hello(to, inc))
    return s
  })

  it('aborts every channel of the older process, with no redial, even after its goodbye', async () => {
    const { to, remote } = await target()
    const r = current = await rig([])
    const [old1, old2] = inbound(r, to, remote, 5, 5) as [FakeStream, FakeStream]
    // The old process said goodbye on one of them (it pruned this peer) before it crashed.
    old1.feed(frame(FrameKind.Bye, new Uint8Array(0)))
    const [fresh] = inbound(r, to, remote, 6) as [FakeStream]
    await settled()
    expect(old1.aborted?.message).toBe('restarted')
    expect(old2.aborted?.message).toBe('restarted')
    expect(fresh.aborted).toBeUndefined()
    expect(r.calls()).toBe(0)
    // The peer is still known, and what is sent to it goes on the new channel.
    r.links.send(to, { t: 'ping', nonce: 9 }, undefined)
    await settled()
    expect(r.calls()).toBe(0)
    expect(frameKinds(fresh)).toEqual([FrameKind.Hello, FrameKind.Core])
    expect(r.links.connectedPeers()).toEqual([to])
  })

  it('keeps a late channel of an older process without taking its incarnation back', async () => {
    const { to, remote } = await target()
    const r = current = await rig([])
    const [current6, late5, other6] = inbound(r, to, remote, 6, 5, 6) as [FakeStream, FakeStream, FakeStream]
    await settled()
    // Kept (refused, its dialler would redial at once, for ever), and nothing aborted:
    // another channel of the current process (6) is no restart, as 5 did not become the known one.
    for (const s of [current6, late5, other6]) expect(s.aborted).toBeUndefined()
    expect(r.calls()).toBe(0)
  })

  it('keeps a channel it dialled whose hello has not come when the new process says hello first', async () => {
    const { to, remote } = await target()
    const r = current = await rig(['connect'])
    const [old] = inbound(r, to, remote, 5) as [FakeStream]
    // The old process crashes: its channel closes, this peer redials and reaches the new one.
    old.dispatchEvent(new Event('close'))
    await settled()
    expect(r.calls()).toBe(1)
    const [dialled] = r.streams as [FakeStream]
    r.links.send(to, { t: 'ping', nonce: 4 }, undefined)
    await settled()
    // The new process's own channel says hello before our dialled one hears its hello.
    const [fresh] = inbound(r, to, remote, 6) as [FakeStream]
    await settled()
    expect(dialled.aborted).toBeUndefined()
    expect(fresh.aborted).toBeUndefined()
    dialled.feed(hello(to, 6))
    await settled()
    expect(dialled.aborted).toBeUndefined()
    expect(frameKinds(dialled)).toEqual([FrameKind.Hello, FrameKind.Core])
    expect(r.down).toEqual([])
  })

  it('a hello on a channel of a forgotten peer record does not touch the record made since', async () => {
    const { to, remote } = await target()
    const r = current = await rig(['connect'])
    r.links.send(to, { t: 'ping', nonce: 5 }, undefined)
    await settled()
    const [dialled] = r.streams as [FakeStream]
    r.links.forget(to)
    const [known] = inbound(r, to, remote, 5) as [FakeStream]
    // The forgotten record's channel, closing, hears a newer hello: not the new record's business.
    dialled.feed(hello(to, 6))
    await settled()
    expect(known.aborted).toBeUndefined()
    expect(r.links.connectedPeers()).toEqual([to])
  })

  /**
   * While this peer's dial is under way, a channel from the peer's process `inboundAs`
   * arrives (it had not crashed yet, or its hello was late); the dial then reaches the
   * process `dialledAs`.
   */
  const dialWhileInbound = async (inboundAs: number, dialledAs: number): Promise<{ inbound: FakeStream, dialled: FakeStream, r: Rig, to: string }> => {
    const { to, remote } = await target()
    const inbound = new FakeStream()
    let r: Rig | undefined
    current = r = await rig([{ before: () => { r?.inbound(inbound, remote); inbound.feed(hello(to, inboundAs)) }, then: 'connect' }])
    r.links.send(to, { t: 'ping', nonce: 1 }, undefined)
    await settled()
    const [dialled] = r.streams as [FakeStream]
    expect(inbound.aborted).toBeUndefined()
    dialled.feed(hello(to, dialledAs))
    await settled()
    return { inbound, dialled, r, to }
  }

  it('on a channel this peer dialled: the older incarnation\'s inbound channel is aborted', async () => {
    const { inbound, dialled, r, to } = await dialWhileInbound(5, 6)
    expect(inbound.aborted?.message).toBe('restarted')
    expect(dialled.aborted).toBeUndefined()
    expect(r.links.connectedPeers()).toEqual([to])
    expect(r.down).toEqual([])
  })

  it('with the same incarnation on both channels (a simultaneous dial) keeps both', async () => {
    const { inbound, dialled } = await dialWhileInbound(5, 5)
    expect(inbound.aborted).toBeUndefined()
    expect(dialled.aborted).toBeUndefined()
  })
})
