/**
 * Numbers per incarnation. A peer names its streams (`chunk.stream`, `ack.stream`), its
 * parent changes (the `id` of a tree `check`, its `result` and its `unlock`s) and its
 * probes (the `nonce` of a ping, pong, probe-req and probe-rep) by numbers it counts
 * itself, and receivers key what they hold by (sender, number). A peer that leaves and
 * rejoins under the same id is a new incarnation with a fresh core; had it
 * counted from 1 again, a receiver could take what an earlier incarnation sent and is still
 * on the wire (a leaver drains its streams, and a wide-area link may hold them for a while)
 * for the new incarnation's: the chunks of an old stream for a new stream with the same
 * number (swarm seed 5162 of the tree-root family lost 8 deliveries that way:
 * `experiments/scenarios/swarm-roots-5162.json`), or an old check's result or unlock for a
 * new check's, which would release a lock that keeps a tree acyclic, or an old probe's pong
 * for a new probe of the same peer, which would time a wrong round trip.
 *
 * So each incarnation counts from its own block of 2^32 numbers. The simulator's
 * incarnations count 0, 1, 2, ...; the node's are start times in ms, taken modulo 2^20
 * blocks (two incarnations of one peer id then share a block only if they started a
 * multiple of 2^20 ms, about 17.5 minutes, apart to the millisecond). Numbers stay below
 * 2^53. Incarnation 0 counts from 1, as before.
 */

/** Numbers one incarnation has before it runs into the next block. */
export const NUMBER_BLOCK = 2 ** 32
/** Blocks: incarnations are taken modulo this. */
export const NUMBER_BLOCKS = 2 ** 20

/** The first number of `incarnation` (a non-negative safe integer). */
export function firstNumberOf (incarnation: number): number {
  return (incarnation % NUMBER_BLOCKS) * NUMBER_BLOCK + 1
}

/** Whether `n` was numbered by `incarnation` (is in its block). */
export function numberedBy (n: number, incarnation: number): boolean {
  const first = firstNumberOf(incarnation)
  return n >= first && n < first + NUMBER_BLOCK
}
