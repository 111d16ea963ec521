/**
 * The daemon's JSON answer with one long array (node/daemon/json-array.ts): the same JSON
 * as `JSON.stringify` of the whole, written in slices with turns of the event loop between.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { sendJsonWithArray } from '../node/daemon/json-array.ts'

describe('sendJsonWithArray', () => {
  let server: Server | undefined
  afterEach(async () => { await new Promise((resolve) => { server?.close(resolve) }); server = undefined })

  /** Serves one answer; returns its text and how many event-loop turns other work got while it was written. */
  const serve = async (head: Record<string, unknown>, array: Float64Array, sliceElements: number): Promise<{ text: string, turns: number }> => {
    let turns = 0
    let writing = false
    const tick = (): void => { if (writing) { turns++; setImmediate(tick) } }
    server = createServer((_req, res) => {
      writing = true
      setImmediate(tick)
      void sendJsonWithArray(res, 200, head, 'value', array, sliceElements).finally(() => { writing = false })
    })
    await new Promise<void>((resolve) => { server?.listen(0, '127.0.0.1', resolve) })
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
    expect(res.headers.get('content-type')).toBe('application/json')
    return { text: await res.text(), turns }
  }

  it('writes what JSON.stringify writes, NaN, infinities and -0 included, over many slices', async () => {
    const array = Float64Array.from({ length: 1000 }, (_, i) => (i % 7 === 0 ? NaN : i % 11 === 0 ? -Infinity : i % 13 === 0 ? -0 : i / 3))
    const head = { id: 'r/1', covered: [[0, 64]], coveredSize: 64, durationMs: 12.5 }
    const { text, turns } = await serve(head, array, 64)
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify({ ...head, value: Array.from(array) })))
    // 16 slices: the event loop turned between them.
    expect(turns).toBeGreaterThanOrEqual(8)
  })

  it('an empty head and an array of one slice, or of none', async () => {
    expect(JSON.parse((await serve({}, Float64Array.of(1, 2), 64)).text)).toEqual({ value: [1, 2] })
    await new Promise((resolve) => { server?.close(resolve) })
    expect(JSON.parse((await serve({ a: 1 }, new Float64Array(0), 64)).text)).toEqual({ a: 1, value: [] })
  })
})
