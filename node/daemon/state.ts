/**
 * What a daemon keeps in its data dir:
 *
 * - `peer.key`: its Ed25519 libp2p key (protobuf, mode 0600), created on first start, so a
 *   restarted daemon keeps its peer id;
 * - `state.json`: the overlay it was in and the last non-empty set of virtual nodes it
 *   owned, which it asks back when it rejoins (unless `--fresh`);
 * - `api.json`: the control API's URL and bearer token (mode 0600), for the CLI;
 * - `lock`: the pid of the daemon using the dir, for its lifetime (node/daemon/lock.ts).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { PrivateKey } from '@libp2p/interface'
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import { IntervalSet } from '../../virtual-nodes/interval-set.ts'

export const KEY_FILE = 'peer.key'
export const STATE_FILE = 'state.json'
export const API_FILE = 'api.json'

/** Creates the data dir (mode 0700) if needed. */
export function ensureDataDir (dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
}

/** Loads `<dir>/peer.key`, or creates it (Ed25519, mode 0600). `created` tells which. */
export async function loadOrCreateKey (dir: string): Promise<{ key: PrivateKey, created: boolean }> {
  const path = join(dir, KEY_FILE)
  if (existsSync(path)) {
    try {
      return { key: privateKeyFromProtobuf(new Uint8Array(readFileSync(path))), created: false }
    } catch (err) {
      throw new Error(`${path} is not a libp2p private key: ${(err as Error).message}`)
    }
  }
  const key = await generateKeyPair('Ed25519')
  writeAtomic(path, privateKeyToProtobuf(key), 0o600)
  return { key, created: true }
}

/** What state.json holds. */
export interface SavedState {
  readonly peerId: string
  /** The overlay id this peer had (its address may change between runs). */
  readonly overlayId: string
  readonly vnodeCount: number
  /** The last non-empty owned set, as [start, end) pairs. */
  readonly owned: Array<[number, number]>
  readonly savedAt: string
}

/** A state.json that exists but cannot be used (it does not parse, or its ranges are not ranges). */
export class StateFileError extends Error {
  override readonly name = 'StateFileError'
  constructor (readonly path: string, why: string) { super(`${path} is unreadable: ${why}`) }
}

/**
 * `<dir>/state.json`, or undefined when there is none. One that cannot be used throws a
 * {@link StateFileError}: it was taken for a missing one, and the daemon wrote over it
 * without a word (node/daemon/daemon.ts warns and keeps it as state.json.bad).
 */
export function readState (dir: string): SavedState | undefined {
  const path = join(dir, STATE_FILE)
  if (!existsSync(path)) return undefined
  let s: unknown
  try { s = JSON.parse(readFileSync(path, 'utf8')) } catch (err) { throw new StateFileError(path, (err as Error).message) }
  if (s === null || typeof s !== 'object' || !Array.isArray((s as Partial<SavedState>).owned)) throw new StateFileError(path, 'no "owned" list of ranges')
  try { IntervalSet.fromRanges((s as SavedState).owned) } catch (err) { throw new StateFileError(path, `"owned": ${(err as Error).message}`) }
  return s as SavedState
}

/** Moves an unreadable state.json aside, to `state.json.bad` (replacing an older one); returns that path. */
export function keepBadState (dir: string): string {
  const bad = join(dir, `${STATE_FILE}.bad`)
  renameSync(join(dir, STATE_FILE), bad)
  return bad
}

export function writeState (dir: string, s: SavedState): void {
  writeAtomic(join(dir, STATE_FILE), JSON.stringify(s, null, 2) + '\n', 0o600)
}

/** What api.json holds. */
export interface ApiInfo {
  readonly url: string
  readonly token: string
  readonly pid: number
  readonly peerId: string
  readonly id: string
}

export function writeApiInfo (dir: string, info: ApiInfo): void {
  writeAtomic(join(dir, API_FILE), JSON.stringify(info, null, 2) + '\n', 0o600)
}

export function readApiInfo (dir: string): ApiInfo | undefined {
  try { return JSON.parse(readFileSync(join(dir, API_FILE), 'utf8')) as ApiInfo } catch { return undefined }
}

export function removeApiInfo (dir: string): void {
  rmSync(join(dir, API_FILE), { force: true })
}

/** Writes a temporary file with `mode` and renames it over `path`. */
function writeAtomic (path: string, data: string | Uint8Array, mode: number): void {
  const tmp = `${path}.${process.pid}.tmp`
  writeFileSync(tmp, data, { mode })
  chmodSync(tmp, mode) // the umask may have narrowed it; never widened
  renameSync(tmp, path)
}
