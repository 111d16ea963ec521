/**
 * Named errors of the wide-area link emulator. Each class carries a stable `name` so
 * callers can recognise it without relying on `instanceof` across module copies.
 */

/**
 * Thrown when a {@link WanEmulatorInit} (or a call such as `assign`) is invalid: negative
 * delays, non-positive rates, unknown or duplicate cluster names, missing matrix entries.
 * The message names the offending field (for example `interDelayMs['eu']['us']`).
 */
export class InvalidWanConfigError extends Error {
  override name = 'InvalidWanConfigError'
}
