/**
 * When the simulated trees are stable, and how long each membership change took to
 * repair (report.stability). Kept as running sums over the peers, updated after every
 * input to a peer, so the check is O(1) per event.
 *
 * Trees repaired: nobody probes, every running peer knows exactly the running peers, and
 * has a parent in both trees of every other root (every other tree root, with a
 * `treeRootStride`; overlay/tree-roots.ts); peers still leaving (out of every tree,
 * passing on what they had accepted) aside. Stable: that, and the leavers gone.
 */
import type { TreecastCore } from '../../overlay/core.ts'
import type { RepairReport } from './report.ts'

/** What the tracker remembers of one peer (it lives on the simulator's peer record). */
export interface PeerStability {
  connectedTrees: number
  knownAlive: number
  /** Counted: its core is 'running' (not joining or leaving). */
  counted: boolean
  /** Counted, and a tree root. */
  countedRoot: boolean
  probing: boolean
  /** Its core is 'leaving': gone from the trees, still passing on data it accepted. */
  leaving: boolean
}

/** See `Stability.sums`. */
export type StabilitySums = [number, number, number, number, number, number]

/** The stability sums of one simulation. */
export class Stability {
  firstStableMs: number | null = null
  readonly repairs: RepairReport[] = []
  private openRepair: RepairReport | null = null
  private sumConnected = 0
  private sumKnownAlive = 0
  private counted = 0
  private countedRoots = 0
  private probing = 0
  private leaving = 0

  /** Counts the inputs that moved a sum (a partition of a run on threads records its sums only then). */
  changes = 0

  /** A peer's figures after an input to it. */
  observe (p: PeerStability, core: TreecastCore): void {
    const running = core.state === 'running'
    const connected = running ? core.trees.connectedCount : 0
    if (connected !== p.connectedTrees) { this.sumConnected += connected - p.connectedTrees; p.connectedTrees = connected; this.changes++ }
    if (running !== p.counted) { this.counted += running ? 1 : -1; p.counted = running; this.changes++ }
    const root = running && core.isTreeRoot
    if (root !== p.countedRoot) { this.countedRoots += root ? 1 : -1; p.countedRoot = root; this.changes++ }
    const known = running ? core.members.alive().length : 0
    if (known !== p.knownAlive) { this.sumKnownAlive += known - p.knownAlive; p.knownAlive = known; this.changes++ }
    const probing = core.isProbing
    if (probing !== p.probing) { this.probing += probing ? 1 : -1; p.probing = probing; this.changes++ }
    const leaving = core.state === 'leaving'
    if (leaving !== p.leaving) { this.leaving += leaving ? 1 : -1; p.leaving = leaving; this.changes++ }
  }

  /**
   * The running sums (connected trees, known alive, counted, counted roots, probing,
   * leaving). A run on threads (experiments/sim/parallel/) adds up its partitions' sums and
   * `load`s them into one tracker that `check`s the whole overlay.
   */
  get sums (): StabilitySums {
    return [this.sumConnected, this.sumKnownAlive, this.counted, this.countedRoots, this.probing, this.leaving]
  }

  load (s: StabilitySums): void {
    [this.sumConnected, this.sumKnownAlive, this.counted, this.countedRoots, this.probing, this.leaving] = s
  }

  /** A peer left or crashed: it counts for nothing any more. */
  forget (p: PeerStability): void {
    this.changes++
    this.sumConnected -= p.connectedTrees
    p.connectedTrees = 0
    this.sumKnownAlive -= p.knownAlive
    p.knownAlive = 0
    if (p.counted) { this.counted--; p.counted = false }
    if (p.countedRoot) { this.countedRoots--; p.countedRoot = false }
    if (p.probing) { this.probing--; p.probing = false }
    if (p.leaving) { this.leaving--; p.leaving = false }
  }

  /** A membership change at `nowMs`; several peers changing at once make one repair. */
  markChange (nowMs: number, event: string): void {
    const last = this.repairs[this.repairs.length - 1]
    if (last !== undefined && last.atMs === nowMs && last.event === event) {
      last.stableAfterMs = null
      last.treesRepairedAfterMs = null
      this.openRepair = last
      return
    }
    if (this.openRepair !== null) this.openRepair.interrupted = true
    this.openRepair = { atMs: nowMs, event, treesRepairedAfterMs: null, stableAfterMs: null, interrupted: false }
    this.repairs.push(this.openRepair)
  }

  /** Records repair and stability at `nowMs`, with `running` peers started and not gone. */
  check (nowMs: number, running: number): void {
    const n = this.counted
    const repaired = running - this.leaving === n && this.probing === 0 && this.sumKnownAlive === n * n && this.sumConnected === 2 * this.countedRoots * (n - 1)
    if (!repaired) return
    if (this.openRepair !== null && this.openRepair.treesRepairedAfterMs === null) this.openRepair.treesRepairedAfterMs = nowMs - this.openRepair.atMs
    if (running !== n) return
    if (this.firstStableMs === null) this.firstStableMs = nowMs
    if (this.openRepair !== null) {
      this.openRepair.stableAfterMs = nowMs - this.openRepair.atMs
      this.openRepair = null
    }
  }
}
