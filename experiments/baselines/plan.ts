/**
 * A static schedule: the sends of a collective, each a byte range of the payload from one
 * peer to another, in program order per peer and stream. The executor (executor.ts) runs
 * it on the simulated network.
 *
 * Semantics of a send `{ from, to, start, end, need, stream }`: `from` sends the bytes
 * `[start, end)` as one message (plus the header) once it holds them, that is once every
 * byte of the range has been received `need` times (broadcast: 1, the root holds the
 * whole payload from the start; reduction: the number of children whose partial arrays
 * `from` must combine first, 0 at a leaf). A peer's sends of one stream are issued in the
 * order they were added, each as soon as it and all earlier sends of its stream are ready;
 * different streams of a peer progress independently (like concurrent non-blocking MPI
 * operations: the wide-area phase and the local phase of a coordinator). Issued sends
 * share the peer's uplink in issue order.
 */

/** The sends of one collective, appended in program order (growable typed arrays: plans reach millions of sends). */
export class Plan {
  from: Int32Array = new Int32Array(1024)
  to: Int32Array = new Int32Array(1024)
  start: Float64Array = new Float64Array(1024)
  end: Float64Array = new Float64Array(1024)
  need: Int32Array = new Int32Array(1024)
  stream: Int32Array = new Int32Array(1024)
  private count = 0

  /**
   * @param totalBytes - the payload (broadcast) or array (reduction) size
   */
  constructor(readonly totalBytes: number) {}

  /** Number of sends. */
  get size(): number {
    return this.count
  }

  /** One message carrying `[start, end)`. */
  send(from: number, to: number, start: number, end: number, need: number, stream = 0): void {
    const i = this.count
    if (i === this.from.length) this.grow()
    this.from[i] = from
    this.to[i] = to
    this.start[i] = start
    this.end[i] = end
    this.need[i] = need
    this.stream[i] = stream
    this.count = i + 1
  }

  private grow(): void {
    const cap = this.from.length * 2
    const growI = (a: Int32Array): Int32Array => { const b = new Int32Array(cap); b.set(a); return b }
    const growF = (a: Float64Array): Float64Array => { const b = new Float64Array(cap); b.set(a); return b }
    this.from = growI(this.from)
    this.to = growI(this.to)
    this.start = growF(this.start)
    this.end = growF(this.end)
    this.need = growI(this.need)
    this.stream = growI(this.stream)
  }

  /** `[start, end)` cut into messages of at most `segmentBytes`. */
  sendRange(from: number, to: number, start: number, end: number, segmentBytes: number, need: number, stream = 0): void {
    for (const [a, b] of segments(start, end, segmentBytes)) this.send(from, to, a, b, need, stream)
  }
}

/**
 * `[start, end)` cut into consecutive pieces of `segmentBytes` (the last one shorter); an
 * empty range gives one empty piece, so a 0-byte payload still sends one message.
 */
export function segments(start: number, end: number, segmentBytes: number): [number, number][] {
  if (end <= start) return [[start, start]]
  const out: [number, number][] = []
  for (let a = start; a < end; a += segmentBytes) out.push([a, Math.min(a + segmentBytes, end)])
  return out
}

/** Segment size for an array of `elementBytes` elements: a whole number of elements, at least one. */
export function elementAligned(segmentBytes: number, elementBytes: number): number {
  return Math.max(1, Math.floor(segmentBytes / elementBytes)) * elementBytes
}
