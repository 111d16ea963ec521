/**
 * Stream numbers per incarnation. A stream is named on the wire by its sender's number
 * alone (`chunk.stream`, `ack.stream`), and receivers key what they hold by (sender,
 * number). A peer that leaves and rejoins under the same id is a new incarnation with a
 * fresh stream engine; had it counted from 1 again, a receiver could take the chunks of
 * an earlier incarnation's stream still on the wire (a leaver drains its streams, and a
 * wide-area link may hold them for a while) as chunks of the new stream with the same
 * number, or the new one's acknowledgement as the old one's. Swarm seed 5162 of the
 * tree-root family lost 8 deliveries that way: `test-rejoin-stream-numbers`.
 *
 * So each incarnation numbers its streams from its own block of 2^32 numbers. The
 * simulator's incarnations count 0, 1, 2, ...; the node's are start times in ms, taken
 * modulo 2^20 blocks (two incarnations of one peer id then share a block only if they
 * started a multiple of 2^20 ms, about 17.5 minutes, apart to the millisecond). Numbers
 * stay below 2^53. Incarnation 0 numbers from 1, as before.
 */

/** Stream numbers one incarnation has before it runs into the next block. */
export const STREAM_BLOCK = 2 ** 32
/** Blocks: incarnations are taken modulo this. */
export const STREAM_BLOCKS = 2 ** 20

/** The first stream number of `incarnation` (a non-negative safe integer). */
export function firstStreamOf (incarnation: number): number {
  return (incarnation % STREAM_BLOCKS) * STREAM_BLOCK + 1
}
