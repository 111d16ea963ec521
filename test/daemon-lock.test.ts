/**
 * One daemon per data dir (node/daemon/lock.ts). In-process: the lock is exclusive, names
 * the pid holding it, is released, and a stale one (dead pid, no pid, this pid but not
 * taken here) is taken over. Out of process: a second `treecast start` on a running
 * daemon's dir exits 1 naming the dir and the first one's pid, and leaves the first one's
 * api.json, so `treecast status` still reaches it; after a SIGTERM the lock is gone.
 * Ports and API addresses are 0 (any).
 *
 * A second SIGTERM during the graceful leave exits at once (143), and removes api.json as
 * a clean exit does: it was left behind, naming an API nobody served, so `treecast status`
 * said "cannot reach the daemon at ...: ECONNREFUSED" (exit 1) instead of "no daemon API".
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DataDirLockedError, LOCK_FILE, lockDataDir, pidRunning } from '../node/daemon/lock.ts'
import { readApiInfo } from '../node/daemon/state.ts'
import { ROOT_DIR, runScript, TREECAST_BIN } from './run-script.ts'

const BIN = TREECAST_BIN
const tmp = mkdtempSync(join(tmpdir(), 'treecast-lock-test-'))
afterAll(() => { rmSync(tmp, { recursive: true, force: true }) })

let n = 0
function dir (): string {
  const d = join(tmp, `d${n++}`)
  mkdirSync(d)
  return d
}

/** The pid of a process that has exited. */
function deadPid (): number {
  const r = spawnSync(process.execPath, ['-e', ''])
  expect(pidRunning(r.pid!)).toBe(false)
  return r.pid!
}

describe('data dir lock (in process)', () => {
  it('is exclusive, names the holder, and is released', () => {
    const d = dir()
    const a = lockDataDir(d)
    expect(readFileSync(join(d, LOCK_FILE), 'utf8')).toBe(`${process.pid}\n`)
    let err: unknown
    try { lockDataDir(d) } catch (e) { err = e }
    expect(err).toBeInstanceOf(DataDirLockedError)
    expect((err as DataDirLockedError).pid).toBe(process.pid)
    expect((err as Error).message).toContain(d)
    expect((err as Error).message).toContain(`pid ${process.pid}`)
    a.release()
    expect(existsSync(join(d, LOCK_FILE))).toBe(false)
    a.release() // idempotent
    const b = lockDataDir(d)
    b.release()
  })

  it('refuses a lock held by another running process', () => {
    const d = dir()
    const parentPid = process.ppid // running, and not this process
    writeFileSync(join(d, LOCK_FILE), `${parentPid}\n`)
    expect(() => lockDataDir(d)).toThrow(`pid ${parentPid}`)
    expect(readFileSync(join(d, LOCK_FILE), 'utf8')).toBe(`${parentPid}\n`)
  })

  it('takes over a stale lock and says so', () => {
    for (const content of [`${deadPid()}\n`, '', 'garbage', `${process.pid}\n`]) {
      const d = dir()
      writeFileSync(join(d, LOCK_FILE), content)
      const stale: Array<number | undefined> = []
      const l = lockDataDir(d, (pid) => stale.push(pid))
      expect(stale).toHaveLength(1)
      expect(readFileSync(join(d, LOCK_FILE), 'utf8')).toBe(`${process.pid}\n`)
      l.release()
    }
  })

  it('release leaves a lock that is not this process\'s', () => {
    const d = dir()
    const l = lockDataDir(d)
    writeFileSync(join(d, LOCK_FILE), `${process.ppid}\n`) // someone removed ours and took it
    l.release()
    expect(readFileSync(join(d, LOCK_FILE), 'utf8')).toBe(`${process.ppid}\n`)
  })
})

/** Runs the CLI to completion. */
const runCli = async (args: string[], timeoutMs?: number): ReturnType<typeof runScript> => await runScript(TREECAST_BIN, args, timeoutMs)

describe('two daemons on one data dir', () => {
  it('the second exits 1 naming the dir and the first one\'s pid; the first keeps its api.json', async () => {
    const d = join(tmp, 'shared')
    const args = ['start', '--data-dir', d, '--listen', '/ip4/127.0.0.1/tcp/0', '--api-listen', '127.0.0.1:0', '--vnodes', '16']
    const first = spawn(process.execPath, ['--import', './bin/ts-loader.mjs', BIN, ...args], { cwd: ROOT_DIR, stdio: ['ignore', 'ignore', 'pipe'] })
    let firstErr = ''
    first.stderr.setEncoding('utf8').on('data', (s: string) => { firstErr += s })
    const closed = new Promise<number | null>((resolve) => { first.on('close', (c) => { resolve(c) }) })
    try {
      const deadline = Date.now() + 30_000
      while (readApiInfo(d)?.pid !== first.pid) {
        if (Date.now() > deadline) throw new Error(`first daemon: no api.json\n${firstErr}`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      // Without the lock the second one ran on (any port is free) and was killed here.
      const second = await runCli(args, 15_000)
      expect(second.code).toBe(1)
      expect(second.stderr).toContain(d)
      expect(second.stderr).toContain(`pid ${first.pid}`)
      expect(second.stderr).not.toMatch(/loaded identity|node started/)

      expect(readApiInfo(d)?.pid).toBe(first.pid)
      const status = await runCli(['status', '--data-dir', d, '--json'])
      expect(status.code, status.stderr).toBe(0)
      expect((JSON.parse(status.stdout) as { pid: number }).pid).toBe(first.pid)
      expect(readFileSync(join(d, LOCK_FILE), 'utf8')).toBe(`${first.pid}\n`)
    } finally {
      first.kill('SIGTERM')
    }
    expect(await closed).toBe(0)
    expect(existsSync(join(d, LOCK_FILE))).toBe(false)
    expect(existsSync(join(d, 'api.json'))).toBe(false)
  }, 90_000)
})

/** A `treecast start` process with its stderr kept. */
function startProcess (args: string[]): { child: ReturnType<typeof spawn>, stderr: () => string, closed: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', './bin/ts-loader.mjs', BIN, 'start', '--listen', '/ip4/127.0.0.1/tcp/0', '--api-listen', '127.0.0.1:0', '--vnodes', '16', ...args], { cwd: ROOT_DIR, stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  child.stderr!.setEncoding('utf8').on('data', (s: string) => { err += s })
  const closed = new Promise<number | null>((resolve) => { child.on('close', (c) => { resolve(c) }) })
  return { child, stderr: () => err, closed }
}

async function until (what: string, ms: number, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + ms
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe('SIGHUP', () => {
  it('a closed terminal\'s SIGHUP leaves gracefully and exits 0, as SIGTERM does', async () => {
    const dh = join(tmp, 'h')
    const h = startProcess(['--data-dir', dh])
    try {
      await until('api.json', 30_000, () => readApiInfo(dh)?.pid === h.child.pid && h.stderr().includes('founded a new overlay'))
      h.child.kill('SIGHUP')
      expect(await h.closed, h.stderr()).toBe(0)
      expect(h.stderr()).toMatch(/leaving gracefully.*SIGHUP/)
      expect(existsSync(join(dh, LOCK_FILE))).toBe(false)
      expect(existsSync(join(dh, 'api.json'))).toBe(false)
    } finally {
      h.child.kill('SIGKILL')
    }
  }, 60_000)
})

describe('a second signal', () => {
  it('exits 143 at once, during the leave, and leaves neither api.json nor the lock', async () => {
    const dx = join(tmp, 'x')
    const dy = join(tmp, 'y')
    const x = startProcess(['--data-dir', dx])
    let y: ReturnType<typeof startProcess> | undefined
    try {
      await until('x api.json', 30_000, () => readApiInfo(dx)?.pid === x.child.pid && x.stderr().includes('founded a new overlay'))
      y = startProcess(['--data-dir', dy, '--join', readApiInfo(dx)!.id])
      await until('y joined', 30_000, () => y!.stderr().includes('info joined'))
      await until('x sees y', 10_000, () => x.stderr().includes('status=alive'))
      // y stopped: x's leave hands its virtual nodes to y and waits for an answer that does not come.
      y.child.kill('SIGSTOP')
      x.child.kill('SIGTERM')
      await until('x leaving', 10_000, () => x.stderr().includes('info leaving'))
      expect(x.stderr()).not.toMatch(/info exit/)
      x.child.kill('SIGTERM')
      expect(await x.closed).toBe(143)
      expect(x.stderr()).toMatch(/second signal: exiting at once/)
      expect(existsSync(join(dx, 'api.json'))).toBe(false)
      expect(existsSync(join(dx, LOCK_FILE))).toBe(false)
      const status = await runCli(['status', '--data-dir', dx])
      expect([status.code, status.stderr]).toEqual([2, expect.stringMatching(/no daemon API/)])
    } finally {
      x.child.kill('SIGKILL')
      y?.child.kill('SIGKILL')
    }
  }, 90_000)
})
