/**
 * Real-network tests of local misuse: every wrong call on a treecast peer (before start,
 * after stop, bad arguments, a second join, an unreachable contact) throws or rejects with
 * its named error class (node/errors.ts). No wall-clock assertion: times are only printed.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { performance } from 'node:perf_hooks'
import { createTreecast, type CreateTreecastInit, type TreecastNode } from '../node/create-treecast.ts'
import type { CoreInit } from '../overlay/config.ts'
import { treecast, type TreecastInit } from '../node/treecast-service.ts'
import { AlreadyMemberError, InvalidArgumentError, InvalidConfigError, JoinFailedError, NotRunningError, NotStartedError } from '../node/errors.ts'
import { startNode, stopAll, withTimeout } from './node-helpers.ts'

function obs (msg: string): void {
  console.log(`[obs] ${msg}`)
}

describe('misuse', { timeout: 60_000 }, () => {
  const made: TreecastNode[] = []
  const track = (n: TreecastNode): TreecastNode => { made.push(n); return n }

  afterAll(async () => { await stopAll(made) }, 60_000)

  it('refuses timeouts past setTimeout\'s limit (2^31 - 1 ms), which would fire after 1 ms', async () => {
    await expect(createTreecast({ stopTimeoutMs: 2 ** 31 })).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(createTreecast({ joinTimeoutMs: 2 ** 31 })).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(createTreecast({ dialTimeoutMs: 2 ** 31 })).rejects.toBeInstanceOf(InvalidConfigError)
  })

  it('throws NotStartedError before start() and after stop()', async () => {
    const n = track(await createTreecast())
    await expect(n.join('/ip4/127.0.0.1/tcp/1/p2p/12D3KooWGRUVh7XnR5ncGNQF5APd4NdxKzZMsfsN1RQRLkZDFZLC')).rejects.toBeInstanceOf(NotStartedError)
    await expect(n.broadcast(new Uint8Array(1))).rejects.toBeInstanceOf(NotStartedError)
    await expect(n.reduce('sum', 1)).rejects.toBeInstanceOf(NotStartedError)
    expect(() => n.send(0, new Uint8Array(1))).toThrow(NotStartedError)
    expect(() => n.bootstrap(8)).toThrow(NotStartedError)
    expect(() => n.id).toThrow(NotStartedError)
    await n.start()
    n.bootstrap(8)
    await n.stop()
    await expect(n.broadcast(new Uint8Array(1))).rejects.toBeInstanceOf(NotStartedError)
    await expect(n.start()).rejects.toBeInstanceOf(NotStartedError)
  })

  it('throws InvalidArgumentError on a bad contact address, a bad virtual node and other bad arguments', async () => {
    const a = track(await startNode())
    const b = track(await startNode())
    // contacts without /p2p/<peer id>, or oneself
    await expect(b.join('/ip4/127.0.0.1/tcp/4001')).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(b.join('not a multiaddr')).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(b.join(b.id)).rejects.toBeInstanceOf(InvalidArgumentError)
    // a started peer that is not a member yet cannot broadcast
    await expect(b.broadcast(new Uint8Array(1))).rejects.toBeInstanceOf(NotRunningError)

    a.bootstrap(16)
    await withTimeout(b.join(a.id), 30_000, 'join')
    for (const v of [-1, 16, 1.5, Number.NaN]) expect(() => a.send(v, new Uint8Array(1)), `send to ${v}`).toThrow(InvalidArgumentError)
    expect(() => a.send(0, 'text' as unknown as Uint8Array)).toThrow(InvalidArgumentError)
    await expect(a.broadcast([1, 2] as unknown as Uint8Array)).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(a.reduce('no-such-op', 1)).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(a.reduce('sum', 0)).rejects.toBeInstanceOf(InvalidArgumentError)
    // options: the service checks them when libp2p creates it
    for (const bad of [-1, 1.5, Number.NaN]) await expect(createTreecast({ rejoinAttempts: bad }), `rejoinAttempts ${bad}`).rejects.toBeInstanceOf(InvalidArgumentError)
    // a misspelt option (from JavaScript, where the type checker does not see it), at the top or in core
    await expect(createTreecast({ joinTimeoutMS: 5 } as unknown as CreateTreecastInit)).rejects.toThrow(/^joinTimeoutMS is not an option of createTreecast/)
    await expect(createTreecast({ core: { probeBytez: 5 } as unknown as CoreInit })).rejects.toBeInstanceOf(InvalidConfigError)
    // the same through the libp2p service factory, for a host built by hand
    expect(() => treecast({ maxPeerz: 3 } as unknown as TreecastInit)).toThrow(/^maxPeerz is not an option of treecast/)
  })

  it('throws AlreadyMemberError on a second join or bootstrap', async () => {
    const a = track(await startNode())
    const b = track(await startNode())
    a.bootstrap(16)
    await withTimeout(b.join(a.id), 30_000, 'join')
    await expect(b.join(a.id)).rejects.toBeInstanceOf(AlreadyMemberError)
    await expect(a.join(b.id)).rejects.toBeInstanceOf(AlreadyMemberError)
    expect(() => a.bootstrap(16)).toThrow(AlreadyMemberError)
    expect(() => b.bootstrap(16)).toThrow(AlreadyMemberError)
  })

  it('rejects a join through an unreachable contact with JoinFailedError', async () => {
    const gone = track(await startNode())
    const goneId = gone.id
    await gone.stop()
    const n = track(await startNode({ joinTimeoutMs: 3000 }))
    const t0 = performance.now()
    await expect(n.join(goneId)).rejects.toBeInstanceOf(JoinFailedError)
    obs(`misuse: join through a stopped contact failed after ${(performance.now() - t0).toFixed(0)} ms`)
    // The message says "join() again through another contact": that works (it threw AlreadyMemberError).
    const a = track(await startNode())
    a.bootstrap(16)
    await n.join(a.id)
    expect(n.owned().isEmpty).toBe(false)
  })
})
