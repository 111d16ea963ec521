/**
 * Point-to-point messages of a scenario (`send` actions, `sendTo(v)` at a peer): what the
 * simulator and the live runner track of each, and its report. A message must reach the
 * owner of its virtual node at delivery time exactly once (per ownership lineage, as
 * broadcasts: the checker counts a delivery at a new owner after a crash as the new
 * lineage's, not as a duplicate); one that never arrives is lost. The report's entries are
 * built in report.ts.
 */

/** What a driver tracks of a message it sent. */
export interface SendTrack { readonly id: string, readonly seq: number, readonly from: string, readonly vnode: number, readonly bytes: number, readonly startMs: number }

/** A message `bytes` long whose bytes say which message it is (`seq`), so a mixed-up delivery shows. */
export function sendPayload (seq: number, bytes: number): Uint8Array {
  const out = new Uint8Array(bytes)
  for (let i = 0; i < Math.min(bytes, 4); i++) out[i] = (seq >>> (8 * i)) & 0xff
  return out
}

/** Whether a delivery (its chunks, in order) is message `seq` of `bytes` bytes as `sendPayload` made it. */
export function isSendPayload (seq: number, bytes: number, chunks: readonly Uint8Array[]): boolean {
  let total = 0
  for (const c of chunks) total += c.length
  if (total !== bytes) return false
  const head: number[] = []
  for (const c of chunks) for (let i = 0; i < c.length && head.length < 4; i++) head.push(c[i] as number)
  return head.every((b, i) => b === ((seq >>> (8 * i)) & 0xff))
}
