/**
 * The peers one simulated peer has exchanged messages with (told when it goes): a flag per
 * peer index and the list of those set, because a `Set` insertion on every simulated
 * message was a few percent of the simulator's time.
 */
export class ContactSet {
  private readonly flags: Uint8Array
  private readonly list: number[] = []

  /** @param peerCount - the topology's peers; indices are in 0..peerCount-1 */
  constructor (peerCount: number) {
    this.flags = new Uint8Array(peerCount)
  }

  add (peer: number): void {
    if (this.flags[peer] === 1) return
    this.flags[peer] = 1
    this.list.push(peer)
  }

  /** The contacts in index order. */
  sorted (): number[] {
    return this.list.slice().sort((a, b) => a - b)
  }

  clear (): void {
    for (const p of this.list) this.flags[p] = 0
    this.list.length = 0
  }
}
