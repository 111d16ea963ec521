/**
 * When a peer probes (003 §IV-A): after start-up, a join, or the loss of a parent, it
 * probes random peers until it has a parent in every tree, then `extraCount` more.
 * Unaffected peers do not probe. One probe is in flight at a time.
 */

/** What the schedule wants next. */
export type ProbeDecision = 'probe' | 'idle'

/** The probing schedule of one peer. */
export class ProbeSchedule {
  private extraLeft = 0
  private needParents = false
  private active = false
  /** Probes started since creation. */
  started = 0

  constructor (private readonly extraCount: number) {}

  /** Something changed that affects this peer's trees: probe again. */
  trigger (): void {
    this.active = true
    this.needParents = true
    this.extraLeft = this.extraCount
  }

  /** Stops probing (leaving). */
  stop (): void {
    this.active = false
    this.needParents = false
    this.extraLeft = 0
  }

  /** Called when the previous probe finished; says whether to start another. */
  next (parentless: number): ProbeDecision {
    if (!this.active) return 'idle'
    if (this.needParents && parentless > 0) return this.take()
    this.needParents = false
    if (parentless > 0) return this.take()
    if (this.extraLeft > 0) {
      this.extraLeft--
      return this.take()
    }
    this.active = false
    return 'idle'
  }

  /** True while this peer still wants to probe. */
  get isActive (): boolean { return this.active }

  private take (): ProbeDecision {
    this.started++
    return 'probe'
  }
}
