/**
 * How tree operations leave a peer: batched per neighbour. Operations the tree table emits
 * while one input is handled (checks, results, adopts, detaches...) wait here and go out as
 * one `tree` message per neighbour when the input ends; reach and metric updates are sent
 * at the end of the input too, or, with a `treeUpdateDelayMs`, once after that delay, so
 * several changes of one tree travel as one update. Sans-IO: the timer is the host's.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { TreeTable } from '../trees/tree-table.ts'
import type { Message, TreeOp } from './messages.ts'

/** What the outbox needs from the peer around it. */
export interface TreeOutboxHost {
  readonly self: PeerId
  readonly trees: TreeTable
  send (to: PeerId, msg: Message): void
  /** Arms the core's `tree` timer; its expiry calls {@link TreeOutbox.onTimer}. */
  setTimer (at: number): void
}

/** Tree operations waiting for the end of the current input, per neighbour. */
export class TreeOutbox {
  private box = new Map<PeerId, TreeOp[]>()
  /** Something is in `box` (a field here: flush runs after every input, mostly with nothing to send). */
  private boxed = false
  private armed = false

  /** @param delayMs - `treeUpdateDelayMs`: 0 sends reach and metric updates with the input that caused them */
  constructor (private readonly host: TreeOutboxHost, private readonly delayMs: number) {}

  /** Queues `op` for `to` (this peer itself included: handled locally at the flush). */
  add (to: PeerId, op: TreeOp): void {
    let list = this.box.get(to)
    if (list === undefined) { list = []; this.box.set(to, list) }
    list.push(op)
    this.boxed = true
  }

  /** The `tree` timer fired: send the reach and metric updates gathered since it was armed. */
  onTimer (): void {
    this.armed = false
    this.host.trees.flush()
  }

  /**
   * Ends an input: updates go out now (or the timer is armed), then the queued operations,
   * one message per neighbour, until handling the ones addressed to this peer queues no more.
   */
  flush (now: number): void {
    do {
      if (this.delayMs === 0) this.host.trees.flush()
      else if (!this.armed && this.host.trees.hasDirty) {
        this.armed = true
        this.host.setTimer(now + this.delayMs)
      }
      if (!this.boxed) return
      const box = this.box
      this.box = new Map()
      this.boxed = false
      for (const [to, ops] of box) {
        if (to === this.host.self) { for (const op of ops) this.host.trees.handleOp(now, to, op); continue }
        this.host.send(to, { t: 'tree', ops })
      }
    } while (this.boxed)
  }
}
