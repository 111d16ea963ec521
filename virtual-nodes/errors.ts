/**
 * Named error classes for the virtual-node layer. Each class carries a stable
 * `name` so callers can tell local misuse apart from bad remote input without
 * relying on `instanceof` across module copies.
 */

/**
 * Thrown on local misuse of the interval API: bad ranges (start > end),
 * non-integers, negative values, values past the virtual-node universe, or
 * invalid options. Indicates a bug in the caller, not bad remote data.
 */
export class InvalidIntervalError extends Error {
  override name = 'InvalidIntervalError'
}

/**
 * Thrown when bytes received from a remote peer do not decode to a valid,
 * canonically encoded interval set (truncation, trailing bytes, overlong
 * varints, zero-length or adjacent ranges, values past the universe, too many
 * ranges).
 */
export class IntervalDecodeError extends Error {
  override name = 'IntervalDecodeError'
}
