/**
 * state.json and the overlay a daemon joins (node/daemon/daemon.ts), with daemons in this
 * process (ports and API addresses 0). A data dir left over from an overlay of 1024 virtual
 * nodes, joining one of 64, asked for [0, 1024) and took every virtual node of the new
 * overlay, leaving the members none. Now the join names the size its ranges were owned in
 * (`of`): a contact of another size ignores them, so the daemon joins as a new peer (half
 * its contact's share; the other members keep theirs), says the state was for another
 * overlay, and state.json then describes the new overlay. A state of the same size is
 * still asked back exactly.
 *
 * A state.json that does not parse (cut short by a full disk, edited by hand) was ignored
 * without a word: the daemon joined as a new peer and wrote over it, so the ranges it
 * held were gone and nothing said why it did not ask them back. Now it warns, naming the
 * problem, and keeps the file as state.json.bad; a missing state.json stays silent.
 *
 * A daemon started with no contact founds a new overlay, also when its state.json says it
 * shared one with other peers: a founder whose config has no `join` (as docs/DEPLOY.md
 * starts the first peer) and is restarted, by hand or by its supervisor after an eviction,
 * split from the overlay it had founded, in silence. Now it warns, naming the old overlay's
 * size and what it owned there; a lone peer that owned every virtual node does not.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveConfig } from '../node/daemon/config.ts'
import { Daemon } from '../node/daemon/daemon.ts'
import { createLogger } from '../node/daemon/log.ts'
import { ensureDataDir, loadOrCreateKey, readState, StateFileError, writeState } from '../node/daemon/state.ts'

const VNODES = 64
const tmp = mkdtempSync(join(tmpdir(), 'treecast-state-test-'))
const running: Daemon[] = []
afterAll(async () => {
  await Promise.all(running.map(async (d) => { await d.shutdown('test over', 0, false) }))
  rmSync(tmp, { recursive: true, force: true })
})

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

async function startDaemon (name: string, flags: Record<string, unknown>): Promise<{ d: Daemon, log: string[] }> {
  const log: string[] = []
  const cfg = resolveConfig({
    flags: { dataDir: join(tmp, name), listen: ['/ip4/127.0.0.1/tcp/0'], apiListen: '127.0.0.1:0', vnodes: String(VNODES), joinTimeoutMs: '10000', ...flags },
    env: {}
  })
  const d = new Daemon(cfg, createLogger('info', 'text', (l) => { log.push(l) }))
  running.push(d)
  await d.start({ exit: () => {} })
  return { d, log }
}

/** A data dir whose state.json says it owned `owned` of an overlay of `vnodeCount`. */
async function leftover (name: string, vnodeCount: number, owned: Array<[number, number]>): Promise<void> {
  const dir = join(tmp, name)
  ensureDataDir(dir)
  const { key } = await loadOrCreateKey(dir)
  const peerId = peerIdFromPrivateKey(key).toString()
  writeState(dir, { peerId, overlayId: `/ip4/127.0.0.1/tcp/1/p2p/${peerId}`, vnodeCount, owned, savedAt: new Date().toISOString() })
}

/** Waits until `check` holds (undefined), failing after `ms` with its last answer. */
async function waitUntil (ms: number, check: () => string | undefined): Promise<void> {
  const deadline = Date.now() + ms
  let why: string | undefined = 'never checked'
  while (Date.now() < deadline) {
    why = check()
    if (why === undefined) return
    await sleep(100)
  }
  throw new Error(`timed out: ${why}`)
}

function owned (d: Daemon): string {
  return d.node()?.owned().toString() ?? 'not running'
}

describe('state.json of another overlay', () => {
  it('is not asked back: the joiner starts fresh, the members keep shares, state.json is rewritten', async () => {
    const { d: a } = await startDaemon('a', {})
    const { d: c } = await startDaemon('c', { join: [a.node()!.id] })
    await waitUntil(10_000, () => c.node()!.owned().isEmpty ? 'c owns nothing yet' : undefined)
    const cBefore = c.node()!.owned()
    await leftover('b', 1024, [[0, 1024]])
    const { d: b, log } = await startDaemon('b', { join: [a.node()!.id] })
    const all = [a, b, c]
    await waitUntil(10_000, () => {
      const sets = all.map((d) => d.node()?.owned())
      const text = sets.map((o, i) => `${'abc'[i]} owns ${o?.toString() ?? 'nothing (not running)'}`).join(', ')
      if (sets.some((o) => o === undefined || o.isEmpty)) return text
      if (sets.reduce((n, o) => n + o!.size, 0) !== VNODES || sets[0]!.union(sets[1]!).union(sets[2]!).size !== VNODES) return `not a partition: ${text}`
      if (all.some((d) => d.node()!.members().length !== 3)) return 'not 3 members everywhere'
      return undefined
    })
    expect(log.join('')).toMatch(/state\.json was for another overlay/)
    expect(c.node()!.owned().equals(cBefore)).toBe(true)
    const saved = readState(join(tmp, 'b'))
    expect(saved?.vnodeCount).toBe(VNODES)
    expect(saved?.owned).toEqual(b.node()!.owned().ranges)
  }, 40_000)

  it('of the same overlay (same virtual node count) is asked back exactly', async () => {
    const { d: a } = await startDaemon('e', {})
    await leftover('d', VNODES, [[8, 24]])
    const { d: b, log } = await startDaemon('d', { join: [a.node()!.id] })
    await waitUntil(10_000, () => owned(b) === '{[8,24)}' ? undefined : `b owns ${owned(b)}`)
    expect(log.join('')).not.toMatch(/another overlay/)
  }, 40_000)
})

describe('a state.json that does not parse', () => {
  it('readState: missing is undefined, unreadable is a StateFileError naming the file', async () => {
    const dir = join(tmp, 'r')
    ensureDataDir(dir)
    expect(readState(dir)).toBeUndefined()
    for (const text of ['{"peerId": "12D3', '', 'null', '{"owned": [[5, 2]]}', '{"owned": "0-9"}']) {
      writeFileSync(join(dir, 'state.json'), text)
      expect(() => readState(dir), text).toThrow(StateFileError)
      expect(() => readState(dir), text).toThrow(/state\.json/)
    }
  })

  it('is not ignored silently: the daemon warns, keeps it as state.json.bad, joins, and writes a good one', async () => {
    const { d: a } = await startDaemon('s-a', {})
    await leftover('s-b', VNODES, [[8, 24]])
    const path = join(tmp, 's-b', 'state.json')
    const cut = readFileSync(path, 'utf8').slice(0, 60)
    writeFileSync(path, cut)
    const { d: b, log } = await startDaemon('s-b', { join: [a.node()!.id] })
    await waitUntil(10_000, () => b.node()?.owned().isEmpty === false ? undefined : 'b owns nothing yet')
    expect(log.join('')).toMatch(/warn state\.json .*unreadable/)
    expect(existsSync(join(tmp, 's-b', 'state.json.bad'))).toBe(true)
    expect(readFileSync(join(tmp, 's-b', 'state.json.bad'), 'utf8')).toBe(cut)
    await waitUntil(5000, () => readState(join(tmp, 's-b'))?.owned.length === b.node()!.owned().ranges.length ? undefined : 'state.json not rewritten')
  }, 40_000)
})

describe('founding again with the state of a shared overlay', () => {
  it('warns that the members of the old overlay are not in the new one', async () => {
    await leftover('f', VNODES, [[8, 24]])
    const { d, log } = await startDaemon('f', {})
    expect(d.phase).toBe('running')
    expect(log.join('')).toMatch(/warn founded a new overlay, though state\.json says this peer shared one .*savedVnodes=64 savedOwned=8-23/)
  }, 20_000)

  it('says nothing when this peer owned every virtual node (it was alone)', async () => {
    await leftover('g', VNODES, [[0, VNODES]])
    const { log } = await startDaemon('g', {})
    expect(log.join('')).not.toMatch(/warn/)
  }, 20_000)
})
