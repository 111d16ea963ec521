/**
 * The daemon's log while it tries its join contacts in order (node/daemon/daemon.ts), with
 * daemons in this process (ports and API addresses 0). Each attempt runs on a fresh node,
 * and each logged "node started", so a join that got through on its third contact read as
 * three starts. Now "node started" comes once, and each attempt says which contact it is
 * ("joining ... attempt=2/2"), why the previous one failed and which contact comes next;
 * the fresh node's id, which changes with a listen port 0, is on its attempt's line.
 *
 * A SIGINT or SIGTERM while a join waits for its contact stopped the daemon cleanly (exit
 * 0), but the join's attempt then failed with "the node stopped" and the log said `warn
 * join failed` and `error start failed: could not join through any of ...` for a shutdown
 * that was asked for. Now the start just ends, with no failure logged.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveConfig } from '../node/daemon/config.ts'
import { Daemon } from '../node/daemon/daemon.ts'
import { createLogger } from '../node/daemon/log.ts'

const tmp = mkdtempSync(join(tmpdir(), 'treecast-join-log-test-'))
const running: Daemon[] = []
afterAll(async () => {
  await Promise.all(running.map(async (d) => { await d.shutdown('test over', 0, false) }))
  rmSync(tmp, { recursive: true, force: true })
})

async function startDaemon (name: string, flags: Record<string, unknown>): Promise<{ d: Daemon, log: string[] }> {
  const log: string[] = []
  const cfg = resolveConfig({
    flags: { dataDir: join(tmp, name), listen: ['/ip4/127.0.0.1/tcp/0'], apiListen: '127.0.0.1:0', vnodes: '16', joinTimeoutMs: '5000', ...flags },
    env: {}
  })
  const d = new Daemon(cfg, createLogger('info', 'text', (l) => { log.push(l) }))
  running.push(d)
  await d.start({ exit: () => {} })
  return { d, log }
}

describe('join attempts in the log', () => {
  it('"node started" once; each attempt names its contact and number; a failure names the next contact', async () => {
    const { d: a } = await startDaemon('a', {})
    const contact = a.node()!.id
    // Nobody listens on port 1: the first attempt fails at once.
    const dead = `/ip4/127.0.0.1/tcp/1/p2p/${peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()}`
    const { d: b, log } = await startDaemon('b', { join: [dead, contact] })
    expect(b.phase).toBe('running')
    const lines = log.map((l) => l.replace(/^\S+ /, '').trimEnd())
    expect(lines.filter((l) => l.startsWith('info node started'))).toHaveLength(1)
    const joining = lines.filter((l) => l.startsWith('info joining'))
    expect(joining).toHaveLength(2)
    expect(joining[0]).toContain(`contact=${dead} attempt=1/2`)
    expect(joining[1]).toContain(`contact=${contact} attempt=2/2`)
    // The second attempt's node listens on another port 0: its new id is on its line.
    expect(joining[1]).toContain(`id=${b.node()!.id}`)
    const failed = lines.filter((l) => l.startsWith('warn join failed'))
    expect(failed).toHaveLength(1)
    expect(failed[0]).toMatch(new RegExp(`^warn join failed: trying the next contact contact=${dead} attempt=1/2 err=.* next=${contact}$`))
    expect(lines.some((l) => l.startsWith(`info joined id=${b.node()!.id}`))).toBe(true)
  }, 30_000)
})

describe('a shutdown while joining', () => {
  it('ends the start without a join failure or a start failure in the log', async () => {
    // A contact whose TCP port accepts and then never answers: the join waits.
    const sockets: Socket[] = []
    const server = createServer((s) => { sockets.push(s); s.on('error', () => {}) })
    await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
    const port = (server.address() as { port: number }).port
    const silent = `/ip4/127.0.0.1/tcp/${port}/p2p/${peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()}`
    try {
      const log: string[] = []
      const cfg = resolveConfig({
        flags: { dataDir: join(tmp, 'c'), listen: ['/ip4/127.0.0.1/tcp/0'], apiListen: '127.0.0.1:0', vnodes: '16', joinTimeoutMs: '20000', join: [silent] },
        env: {}
      })
      const d = new Daemon(cfg, createLogger('info', 'text', (l) => { log.push(l) }))
      const exits: number[] = []
      const started = d.start({ exit: (code) => { exits.push(code) } })
      const deadline = Date.now() + 10_000
      while (!log.some((l) => l.includes('info joining')) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
      expect(d.phase).toBe('joining')
      await d.shutdown('SIGINT', 0)
      await expect(started).resolves.toBeUndefined()
      expect(exits).toEqual([0])
      const text = log.join('')
      expect(text).not.toMatch(/ error /)
      expect(text).not.toMatch(/join failed/)
    } finally {
      for (const s of sockets) s.destroy()
      server.close()
    }
  }, 30_000)
})
