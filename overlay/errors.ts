/**
 * Errors for local misuse of the core. Remote bad input never throws: it is dropped and
 * counted in `stats().rejected`.
 */

/** An option is out of range. */
export class InvalidConfigError extends Error {
  override name = 'InvalidConfigError'
}

/** The core was used in a state that does not allow the call (not started, left, ...). */
export class NotRunningError extends Error {
  override name = 'NotRunningError'
}

/** A call's argument is invalid (unknown operation, virtual node out of range, ...). */
export class InvalidArgumentError extends Error {
  override name = 'InvalidArgumentError'
}

/**
 * A broadcast, message or reduction started here while `maxActiveTransfers` collectives are
 * already under way at this peer (its own and those passing through): try again once some
 * complete.
 */
export class TooManyTransfersError extends Error {
  override name = 'TooManyTransfersError'
}
