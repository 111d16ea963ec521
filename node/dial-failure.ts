/**
 * Why opening a stream to a peer failed, and whether that says the peer is gone. A refused
 * connection (nobody listens) or a protocol the peer does not speak says so; a timeout
 * does not: an overloaded peer or machine finishes its handshakes late (node/links.ts
 * retries those, `dialAttempts`).
 */

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
