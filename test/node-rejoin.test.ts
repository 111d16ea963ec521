/**
 * Rejoining after an eviction, in one process (node/rejoin.ts, node/treecast-service.ts).
 * The eviction is forced: the evicted peer's core is handed the fact that it is dead at its
 * current incarnation, as a peer that declared it dead would send it (test/hung-peer.test.ts
 * gets there for real, with a stopped process). Then: its pending operations fail with
 * EvictedError, it rejoins as a new incarnation with the virtual nodes it owned, and the
 * overlay is whole again; when no member it knew answers, 'rejoin-failed' leaves it idle,
 * to join elsewhere; with `rejoinAttempts: 0` it stays out until join() is called.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { TreecastNode } from '../node/create-treecast.ts'
import { AlreadyMemberError, EvictedError } from '../node/errors.ts'
import type { Message } from '../overlay/messages.ts'
import { sleep, startNode, stopAll, waitFor, waitStable, withTimeout } from './node-helpers.ts'

const VNODES = 24

/** The service's private driver, reached for the forced eviction only. */
interface Driver {
  coreValue: { handle: (now: number, from: string, msg: Message) => void, members: { incarnationOf: (p: string) => number } }
  afterInput: () => void
  now: () => number
}

/** Tells `n` it was declared dead at its current incarnation, as if peer `by` had sent it. */
function evict (n: TreecastNode, by: string): void {
  const d = n.overlay as unknown as Driver
  const incarnation = d.coreValue.members.incarnationOf(n.id)
  d.coreValue.handle(d.now(), by, { t: 'facts', vnodeCount: VNODES, members: [{ peer: n.id, incarnation, status: 'dead' }], records: [], welcome: false })
  d.afterInput()
}

/** Records the events `n` emits, in order. */
function events (n: TreecastNode): string[] {
  const seen: string[] = []
  for (const type of ['evicted', 'joined', 'rejoin-failed'] as const) n.addEventListener(type, () => { seen.push(type) })
  return seen
}

describe('rejoin after an eviction (in process)', { timeout: 90_000 }, () => {
  let nodes: TreecastNode[] = []
  afterEach(async () => { await stopAll(nodes); nodes = [] }, 30_000)

  async function overlay (third: Parameters<typeof startNode>[0] = {}): Promise<[TreecastNode, TreecastNode, TreecastNode]> {
    const a = await startNode()
    const b = await startNode()
    const c = await startNode(third)
    nodes = [a, b, c]
    a.bootstrap(VNODES)
    await withTimeout(b.join(a.id), 30_000, 'b joins')
    await withTimeout(c.join(a.id), 30_000, 'c joins')
    await waitStable(nodes, VNODES)
    return [a, b, c]
  }

  it('fails pending operations with EvictedError, rejoins with its old virtual nodes, and the overlay is whole again', async () => {
    const [a, b, c] = await overlay()
    const before = c.owned()
    expect(before.isEmpty).toBe(false)
    const seen = events(c)
    const pending = c.overlay.startReduce('sum', 1).result
    evict(c, a.id)
    await expect(pending).rejects.toBeInstanceOf(EvictedError)
    // rejoining by itself: the application cannot join meanwhile
    await expect(c.join(a.id)).rejects.toBeInstanceOf(AlreadyMemberError)
    await waitFor(() => seen.includes('joined'), { timeoutMs: 30_000, what: 'the evicted peer rejoins', describe: () => seen.join(',') })
    expect(seen).toEqual(['evicted', 'joined'])
    await waitFor(() => c.owned().toString() === before.toString(), { timeoutMs: 30_000, what: 'its old virtual nodes back', describe: () => c.owned().toString() })
    await waitStable([a, b, c], VNODES)
    const r = await withTimeout(c.reduce('sum', 1), 30_000, 'a reduction after the rejoin')
    expect(r.covered.size).toBe(VNODES)
  })

  it('reports rejoin-failed when no member it knew answers, and is left idle to join elsewhere', async () => {
    // A long suspect grace keeps the stopped contact alive in c's view: it is the only one to try.
    const a = await startNode()
    const c = await startNode({ core: { suspectGraceMs: 60_000 } })
    nodes = [a, c]
    a.bootstrap(VNODES)
    await withTimeout(c.join(a.id), 30_000, 'c joins')
    await waitStable(nodes, VNODES)
    const failed: Array<{ attempts: number, errors: readonly string[] }> = []
    c.addEventListener('rejoin-failed', (e) => { failed.push(e.detail) })
    const aId = a.id
    await a.stop()
    evict(c, aId)
    await waitFor(() => failed.length > 0, { timeoutMs: 30_000, what: 'rejoin-failed' })
    expect(failed[0]?.attempts).toBe(1)
    expect(failed[0]?.errors.join(' ')).toContain(aId)
    expect(c.state).toBe('idle')
    const d = await startNode()
    nodes.push(d)
    d.bootstrap(VNODES)
    await withTimeout(c.join(d.id), 30_000, 'join elsewhere after the failed rejoin')
    await waitStable([c, d], VNODES)
  })

  it('with rejoinAttempts 0 stays out until the application joins again', async () => {
    const [a, b, c] = await overlay({ rejoinAttempts: 0 })
    const seen = events(c)
    evict(c, b.id)
    await sleep(1000)
    expect(seen).toEqual(['evicted'])
    expect(c.state).toBe('evicted')
    await withTimeout(c.join(a.id), 30_000, 'join after the eviction')
    expect(seen).toEqual(['evicted', 'joined'])
    await waitStable([a, b, c], VNODES)
  })
})
