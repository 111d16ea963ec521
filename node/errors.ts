/**
 * Errors of the real-network node. Local misuse throws one of these (or the core's
 * InvalidConfigError / InvalidArgumentError / NotRunningError / TooManyTransfersError,
 * re-exported here); remote
 * bad input never throws: it is dropped and counted.
 */
export { InvalidConfigError, InvalidArgumentError, NotRunningError, TooManyTransfersError } from '../overlay/errors.ts'

/** The node was used before `start()` or after `stop()`. */
export class NotStartedError extends Error {
  override name = 'NotStartedError'
}

/** `join()` or `bootstrap()` on a node that is already a member (or joining). */
export class AlreadyMemberError extends Error {
  override name = 'AlreadyMemberError'
}

/** The contact could not be reached, or the join did not complete in time. */
export class JoinFailedError extends Error {
  override name = 'JoinFailedError'
}

/** A frame was queued on a stream that has closed. */
export class ChannelClosedError extends Error {
  override name = 'ChannelClosedError'
}

/** A stream's send queue is at its byte limit: the remote does not read. */
export class QueueFullError extends Error {
  override name = 'QueueFullError'
}

/** A reduction rooted here gave up after the core's `reduceMaxDurationMs`. */
export class ReduceFailedError extends Error {
  override name = 'ReduceFailedError'
}

/** A broadcast relayed to another root (`broadcast(payload, { root })`) failed there. */
export class RelayFailedError extends Error {
  override name = 'RelayFailedError'
}

/** An operation was pending when the overlay declared this peer dead (evicted). */
export class EvictedError extends Error {
  override name = 'EvictedError'
}
