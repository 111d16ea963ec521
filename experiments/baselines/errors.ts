/**
 * Named error classes for the static baselines. Each class carries a stable `name` so
 * callers can recognise it without relying on `instanceof` across module copies.
 */

/** Thrown when a baseline name is not one of `BASELINES`. */
export class UnknownBaselineError extends Error {
  override name = 'UnknownBaselineError'
}

/**
 * Thrown on bad input to `broadcast`, `reduce` or `lowerBounds`: a root outside the
 * topology, a negative or non-integer size, a bad option. The message names the field.
 */
export class InvalidBaselineInputError extends Error {
  override name = 'InvalidBaselineInputError'
}

/**
 * Thrown when a schedule cannot run to its end: some peer still has sends whose data never
 * arrived. A bug in a baseline, never a property of the input.
 */
export class ScheduleDeadlockError extends Error {
  override name = 'ScheduleDeadlockError'
}
