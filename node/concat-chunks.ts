/** Assembling a delivered payload from the chunks it travelled in. */

/** The chunks as one array: a view when they are adjacent slices of one buffer (the root's own payload), else a copy. */
export function concatChunks (chunks: readonly Uint8Array[], total: number): Uint8Array {
  const first = chunks[0]
  if (first === undefined) return new Uint8Array(0)
  if (chunks.length === 1) return first
  let end = first.byteOffset
  let adjacent = true
  for (const c of chunks) {
    if (c.buffer !== first.buffer || c.byteOffset !== end) { adjacent = false; break }
    end += c.byteLength
  }
  if (adjacent) return new Uint8Array(first.buffer, first.byteOffset, total)
  const out = new Uint8Array(total)
  let off = 0
  for (const c of chunks) { out.set(c, off); off += c.byteLength }
  return out
}
