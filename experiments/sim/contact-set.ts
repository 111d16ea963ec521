/**
 * The peers one simulated peer has exchanged messages with (told when it goes): a bit per
 * peer index and the list of those set, because a `Set` insertion on every simulated
 * message was a few percent of the simulator's time. Bits, not a byte per peer: every
 * message tests two of these (its sender's and its receiver's), and at 2,000 peers the
 * bytes were 4 MB of scattered reads, the bits 0.5 MB.
 */
export class ContactSet {
  private readonly bits: Uint32Array
  private readonly list: number[] = []

  /** @param peerCount - the topology's peers; indices are in 0..peerCount-1 */
  constructor (peerCount: number) {
    this.bits = new Uint32Array((peerCount + 31) >>> 5)
  }

  add (peer: number): void {
    const word = peer >>> 5
    const bit = 1 << (peer & 31)
    const w = this.bits[word] as number
    if ((w & bit) !== 0) return
    this.bits[word] = w | bit
    this.list.push(peer)
  }

  /** The contacts in index order. */
  sorted (): number[] {
    return this.list.slice().sort((a, b) => a - b)
  }

  clear (): void {
    for (const p of this.list) this.bits[p >>> 5] = 0
    this.list.length = 0
  }
}
