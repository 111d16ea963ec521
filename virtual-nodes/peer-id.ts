/**
 * Peers are named by strings (a libp2p peer id on the real network, `p17` in the
 * simulator). Their only structure the core relies on is a total order, used by the
 * deterministic successor rule and to break ties between ownership records.
 */
export type PeerId = string

/** Compares peer ids in the one order every peer uses. */
export function comparePeerIds (a: PeerId, b: PeerId): number {
  return a < b ? -1 : a > b ? 1 : 0
}
