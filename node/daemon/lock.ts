/**
 * The data dir's lock: one daemon per data dir. Two daemons on one dir shared `peer.key`
 * (two overlay members under one peer id), overwrote each other's `state.json` and
 * `api.json`, and the one that exited first deleted `api.json` while the other still ran.
 *
 * `<dataDir>/lock` holds the pid of the daemon that uses the dir, for its lifetime. It is
 * created exclusively and with its content at once: the pid goes to a temporary file,
 * which is then hard-linked to `lock` (`link` fails with EEXIST when `lock` exists, as an
 * O_EXCL open does, and a reader never sees an empty lock). A lock whose pid is not a
 * running process (`process.kill(pid, 0)` fails with ESRCH: the daemon was SIGKILLed or
 * the machine lost power), or holds no pid, is stale and taken over; so is one holding this
 * process's own pid that this process did not take (a container restarts its daemon
 * under the same pid). A pid that runs under another user (EPERM) counts as running.
 * Removed on exit, also on `process.exit` (an `exit` hook), not on SIGKILL.
 *
 * Limits: a stale lock whose pid was reused by an unrelated process blocks the dir until
 * the file is removed by hand (the error names it); pids mean nothing across machines, so
 * a data dir on a shared network filesystem must not be used by daemons on two machines.
 */
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export const LOCK_FILE = 'lock'

/** Another running process holds the data dir. */
export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError'
  constructor (readonly dir: string, readonly pid: number) {
    super(`data dir ${dir} is in use by another daemon (pid ${pid}, see ${join(dir, LOCK_FILE)}): stop that one, or start this one with another --data-dir`)
  }
}

export interface DataDirLock {
  readonly path: string
  /** Removes the lock file (if it still holds this process's pid); idempotent. */
  release: () => void
}

/** Lock paths this process holds (two daemons in one process must not share a dir either). */
const heldHere = new Set<string>()

/** Whether `pid` is a running process (another user's counts: EPERM). */
export function pidRunning (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH'
  }
}

function parsePid (text: string): number | undefined {
  const t = text.trim()
  if (!/^\d+$/.test(t)) return undefined
  const pid = Number(t)
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
}

function readText (path: string): string | undefined {
  try { return readFileSync(path, 'utf8') } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
}

/**
 * Takes `<dir>/lock` for this process, or throws {@link DataDirLockedError} naming the pid
 * that holds it. `onStale` is told of a stale lock taken over (its pid, when it had one).
 */
export function lockDataDir (dir: string, onStale: (stalePid: number | undefined) => void = () => {}): DataDirLock {
  const path = join(dir, LOCK_FILE)
  const mine = `${process.pid}\n`
  for (let attempt = 0; attempt < 5; attempt++) {
    const tmp = `${path}.${process.pid}.tmp`
    writeFileSync(tmp, mine, { mode: 0o644 })
    let created = false
    try {
      linkSync(tmp, path)
      created = true
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    } finally {
      rmSync(tmp, { force: true })
    }
    if (created) return held(path, mine)

    const text = readText(path)
    if (text === undefined) continue // released meanwhile: try again
    const pid = parsePid(text)
    const live = pid !== undefined && (pid === process.pid ? heldHere.has(path) : pidRunning(pid))
    if (live) throw new DataDirLockedError(dir, pid)
    // Stale. Moved aside (atomic) and checked, so that two starts that both found it stale
    // cannot both remove it and then the other's fresh lock: the second moves the first's
    // fresh lock aside, sees another content, and puts it back.
    const aside = `${path}.stale.${process.pid}`
    try { renameSync(path, aside) } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue
      throw err
    }
    if (readText(aside) !== text) {
      try { linkSync(aside, path) } catch { /* a third start took it: it holds the lock now */ }
      rmSync(aside, { force: true })
      continue
    }
    rmSync(aside, { force: true })
    onStale(pid)
  }
  throw new Error(`cannot lock data dir ${dir}: ${path} keeps changing`)
}

function held (path: string, mine: string): DataDirLock {
  heldHere.add(path)
  const release = (): void => {
    if (!heldHere.delete(path)) return
    process.removeListener('exit', release)
    try {
      if (readText(path) === mine) rmSync(path, { force: true })
    } catch { /* gone, or the dir is */ }
  }
  process.on('exit', release)
  return { path, release }
}
