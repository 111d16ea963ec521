/**
 * Float64Array <-> little-endian bytes, the wire form of reduction values (overlay/codec.ts):
 * a view where the host is little-endian, a copy otherwise.
 */
const LITTLE_ENDIAN = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f

/** A fresh, aligned Float64Array from little-endian bytes (any alignment, length multiple of 8). */
export function float64FromBytes (b: Uint8Array): Float64Array {
  const out = new Float64Array(b.byteLength / 8)
  if (LITTLE_ENDIAN) {
    new Uint8Array(out.buffer).set(b)
  } else {
    const view = new DataView(b.buffer, b.byteOffset, b.byteLength)
    for (let i = 0; i < out.length; i++) out[i] = view.getFloat64(i * 8, true)
  }
  return out
}

/** The little-endian bytes of `a`: a view on little-endian hosts, a copy otherwise. */
export function float64ToBytes (a: Float64Array): Uint8Array {
  if (LITTLE_ENDIAN) return new Uint8Array(a.buffer, a.byteOffset, a.byteLength)
  const out = new Uint8Array(a.byteLength)
  const view = new DataView(out.buffer)
  for (let i = 0; i < a.length; i++) view.setFloat64(i * 8, a[i]!, true)
  return out
}
