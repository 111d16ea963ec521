/**
 * A workaround for a race in @chainsafe/libp2p-yamux 8.0.1: a stream opened on a
 * connection that closes in the same tick sends its opening window update from a
 * microtask, which throws `StreamStateError: Cannot write to a stream that is closed`
 * where no caller can catch it, and the process dies. It happens when a peer crashes
 * while a neighbour opens a stream to it. Long-running entry points (the CLI, the demo,
 * the daemon, the tests) install this guard; it swallows exactly that error and counts
 * it, and lets every other uncaught exception through to Node's default handling.
 */

let installed = false
/** How many such errors were swallowed. */
export const swallowed = { count: 0 }

/** True for the yamux race's error and nothing else. */
export function isYamuxClosedWriteRace (err: unknown): boolean {
  return err instanceof Error && err.name === 'StreamStateError' && /Cannot write to a stream that is (closed|closing)/.test(err.message) &&
    typeof err.stack === 'string' && err.stack.includes('yamux')
}

/** Installs the guard once per process. */
export function installLibp2pGuard (): void {
  if (installed) return
  installed = true
  process.on('uncaughtException', (err, origin) => {
    if (isYamuxClosedWriteRace(err)) { swallowed.count++; return }
    // Same as Node's default: print and exit.
    console.error(origin === 'unhandledRejection' ? 'Unhandled rejection:' : 'Uncaught exception:', err)
    process.exit(1)
  })
}
