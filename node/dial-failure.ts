/**
 * Why opening a stream to a peer failed, and whether that says the peer is gone. A refused
 * connection (nobody listens) or a protocol the peer does not speak says so; a timeout
 * does not: an overloaded peer or machine finishes its handshakes late (node/links.ts
 * retries those, `dialAttempts`).
 */

import type { Stream } from '@libp2p/interface'
import type { ConnectionManager } from '@libp2p/interface-internal'
import { multiaddr } from '@multiformats/multiaddr'

/** One failed attempt to open a stream: the cause, whether it timed out, how long and how far it got. */
export class DialFailure extends Error {
  override name = 'DialFailure'

  constructor (cause: unknown, readonly timedOut: boolean, readonly elapsedMs: number, readonly stage: string) {
    super(`${cause instanceof Error ? cause.message : String(cause)}, after ${elapsedMs} ms, ${stage}`, { cause })
  }
}

/** Error names that mean "took too long" (DOMException from AbortSignal.timeout, libp2p's own). */
const TIMEOUT_NAMES = new Set(['TimeoutError', 'AbortError'])

/**
 * Messages of a timeout. libp2p's upgrader rethrows a handshake's error as a new one
 * (EncryptionFailedError, MuxerUnavailableError) that keeps only the message, such as
 * AbortSignal.timeout's "The operation was aborted due to timeout".
 */
const TIMEOUT_MESSAGE = /aborted due to timeout|timed out/i

/**
 * True when `err`, a cause of it, or one of an AggregateError's errors is a timeout or an
 * abort, by its name or its message (libp2p wraps the per-address timeout of a dial in
 * errors of its own).
 */
export function isTimeout (err: unknown, depth = 0): boolean {
  if (depth > 8 || err === null || typeof err !== 'object') return false
  const e = err as { name?: unknown, message?: unknown, cause?: unknown, errors?: unknown }
  if (typeof e.name === 'string' && TIMEOUT_NAMES.has(e.name)) return true
  if (typeof e.message === 'string' && TIMEOUT_MESSAGE.test(e.message)) return true
  if (Array.isArray(e.errors) && e.errors.some((x) => isTimeout(x, depth + 1))) return true
  return isTimeout(e.cause, depth + 1)
}

/**
 * Dials `peer` (an overlay id: a multiaddr with /p2p/) and opens a stream of `protocol`,
 * all within `timeoutMs`. Failures are {@link DialFailure}s that say whether the attempt
 * timed out and how far it got.
 */
export async function openStreamTo (connectionManager: ConnectionManager, peer: string, protocol: string, timeoutMs: number, clock: () => number): Promise<Stream> {
  const signal = AbortSignal.timeout(timeoutMs)
  const t0 = clock()
  let stage = 'connecting'
  try {
    const conn = await connectionManager.openConnection(multiaddr(peer), { signal })
    // A stream opened on a closing connection trips a yamux race (see libp2p-guard.ts).
    if (conn.status !== 'open') throw new Error(`connection to ${peer} is ${conn.status}`)
    stage = `negotiating ${protocol} (connected after ${Math.round(clock() - t0)} ms)`
    return await conn.newStream(protocol, { signal })
  } catch (err) {
    throw new DialFailure(err, signal.aborted || isTimeout(err), Math.round(clock() - t0), stage)
  }
}
