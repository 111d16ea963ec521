/**
 * A JSON answer holding one long array of numbers (a reduction's result, up to 2^24 of
 * them), written in slices with a turn of the event loop between them.
 *
 * `JSON.stringify({ value: Array.from(array) })` of 10^7 doubles took 1.6 s in one
 * synchronous run (Array.from alone 1.1 s): the daemon answering `POST /reduce` missed its
 * heartbeats for that long, and for 2^24 elements longer. Written in slices it does the
 * same work, but heartbeats, frames from peers and other requests are served between them.
 */
import type { ServerResponse } from 'node:http'
import { setImmediate as nextTurn } from 'node:timers/promises'

/** Elements written per slice (about 1 MB of JSON, a few ms). */
export const JSON_SLICE_ELEMENTS = 1 << 16

/**
 * Answers `status` with the JSON of `head` plus `key: array` (as `JSON.stringify` writes
 * it: NaN and infinities as null), in slices of `sliceElements`, waiting for the response
 * to drain between them. `head` must not hold `key`.
 */
export async function sendJsonWithArray (res: ServerResponse, status: number, head: Record<string, unknown>, key: string, array: Float64Array, sliceElements = JSON_SLICE_ELEMENTS): Promise<void> {
  const open = JSON.stringify(head)
  res.writeHead(status, { 'content-type': 'application/json' })
  res.write(`${open.slice(0, -1)}${open === '{}' ? '' : ','}${JSON.stringify(key)}:[`)
  for (let at = 0; at < array.length; at += sliceElements) {
    if (res.destroyed) return
    const part = JSON.stringify(Array.from(array.subarray(at, at + sliceElements)))
    const ok = res.write(at === 0 ? part.slice(1, -1) : `,${part.slice(1, -1)}`)
    if (ok) await nextTurn()
    else await drained(res)
  }
  res.end(']}')
}

/** Until `res` drains or closes. */
async function drained (res: ServerResponse): Promise<void> {
  await new Promise<void>((resolve) => {
    const done = (): void => { res.off('drain', done); res.off('close', done); resolve() }
    res.on('drain', done)
    res.on('close', done)
  })
}
