/**
 * Named error classes for the simulator. Each class carries a stable `name` so
 * callers can recognise it without relying on `instanceof` across module copies.
 */

/**
 * Thrown by {@link resolveTopology} when a topology description is invalid. The
 * message names the offending field (for example `interRttMs[0][1]`).
 */
export class InvalidTopologyError extends Error {
  override name = 'InvalidTopologyError'
}
