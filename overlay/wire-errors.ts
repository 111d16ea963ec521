/**
 * The one error type the codec throws on bad remote input. Whatever bytes a remote peer
 * sends, decoding either yields a valid message or throws a {@link WireError}; never any
 * other exception.
 */

/**
 * Why a frame was rejected:
 * - `too-large`: longer than the configured maximum message size (checked before decoding);
 * - `malformed`: not decodable CBOR, not a map, or an undecodable interval set;
 * - `version`: missing or foreign wire version;
 * - `unknown-type`: missing or unknown message type tag;
 * - `bad-field`: a field missing, of the wrong type, or out of range;
 * - `limit`: a list longer than the configured maximum.
 */
export type RejectReason = 'too-large' | 'malformed' | 'version' | 'unknown-type' | 'bad-field' | 'limit'

/** Every {@link RejectReason}, e.g. for statistics keyed by reason. */
export const REJECT_REASONS: readonly RejectReason[] = ['too-large', 'malformed', 'version', 'unknown-type', 'bad-field', 'limit']

/** Bad input from a remote peer; `reason` classifies it, `message` says where and what. */
export class WireError extends Error {
  override name = 'WireError'
  /** The class of the rejection. */
  readonly reason: RejectReason

  constructor (reason: RejectReason, message: string, options?: { cause?: unknown }) {
    super(`${reason}: ${message}`, options)
    this.reason = reason
  }
}
