/**
 * What the simulator (experiments/sim/simulation.ts) keeps per peer, and the events its
 * queue holds.
 */
import type { IntervalSet } from '../../virtual-nodes/interval-set.ts'
import type { TreecastCore } from '../../overlay/core.ts'
import type { Message } from '../../overlay/messages.ts'
import type { Action } from './scenario.ts'
import type { PeerStability } from './stability.ts'
import type { ContactSet } from './contact-set.ts'

/**
 * A queued event. A function is one of the network's own steps; an `Arrival` is what
 * `send` hands the network for a message, one object per message instead of a callback
 * and the context it closes over (they were a large part of the collector's work).
 */
export type Ev =
  | (() => void)
  | Arrival
  | { k: 'timer', peer: number, at: number }
  | { k: 'action', action: Action }
  | { k: 'down', peer: number, gone: number, incarnation: number }

/** Message `msg` from `from` reaches peer `to`, which was in life `incarnation` when it was sent. */
export interface Arrival { readonly k: 'msg', readonly from: SimPeer, readonly to: number, readonly msg: Message, readonly incarnation: number }

/** One simulated peer: its core (null while off), status and what the simulator keeps of it. */
export interface SimPeer extends PeerStability {
  readonly index: number
  readonly name: string
  core: TreecastCore | null
  status: 'off' | 'joining' | 'running' | 'leaving' | 'left' | 'crashed'
  /** The ranges it owned before it last left or crashed (what a rejoin asks for). */
  rejoinWant: IntervalSet
  timerAt: number
  readonly contacts: ContactSet
  lastOwned: IntervalSet
  incarnation: number
  /** Senders told that this peer, gone, refused their message (see `refuse`). */
  refused: Set<number>
}
