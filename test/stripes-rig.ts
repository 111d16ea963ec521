/**
 * Three clusters of composed cores for the striped-broadcast tests (test/stripes.test.ts,
 * test/stripe-groups.test.ts): the topology, the payload and what was sent of it.
 */
import { expect } from 'vitest'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { ChunkMessage } from '../overlay/messages.ts'
import { Loop, expectExactlyOnce } from './core-loop.ts'

/** Three clusters of four peers: 0.2 ms one way inside, 5 ms between. */
export const NAMES = Array.from({ length: 12 }, (_, i) => `p${String(i).padStart(2, '0')}`)
export const cluster = (p: PeerId): number => Math.floor(Number(p.slice(1)) / 4)
export const latency = (a: PeerId, b: PeerId): number => cluster(a) === cluster(b) ? 0.2 : 5
export const CHUNK = 1024
export const BYTES = 100 * CHUNK + 17

export function threeClusters (wire = false): Loop {
  const loop = new Loop({ latency, wire, config: { switchPointBytes: 4 * CHUNK, stripeMinBytes: 4 * CHUNK, chunkBytes: CHUNK } })
  loop.bootstrap(NAMES.length, NAMES)
  loop.runUntil(() => loop.stable(), 20_000, 'stable trees')
  loop.run(500)
  loop.ok()
  return loop
}

export function payload (): Uint8Array {
  const p = new Uint8Array(BYTES)
  for (let i = 0; i < p.length; i++) p[i] = (i * 31 + 7) & 0xff
  return p
}

export function expectPayload (loop: Loop, id: string): void {
  const want = payload()
  for (const d of loop.deliveries(id)) {
    const got = new Uint8Array(d.out.totalBytes)
    let at = 0
    for (const c of d.out.chunks) { got.set(c, at); at += c.length }
    expect(at).toBe(BYTES)
    expect(got).toEqual(want)
  }
}

export function chunksOf (loop: Loop, id: string): Array<{ from: PeerId, to: PeerId, msg: ChunkMessage }> {
  const opened = new Map<string, string>()
  const out: Array<{ from: PeerId, to: PeerId, msg: ChunkMessage }> = []
  for (const s of loop.sent) {
    if (s.message.t !== 'chunk') continue
    const key = `${s.from}>${s.to}#${s.message.stream}`
    if (s.message.open !== undefined) opened.set(key, s.message.open.id)
    if (opened.get(key) === id) out.push({ from: s.from, to: s.to, msg: s.message })
  }
  return out
}

/** p00 broadcasts the payload and the loop runs until it is done; checked delivered once everywhere, byte for byte. Returns its id. */
export function broadcastChecked (loop: Loop): string {
  const id = loop.input('p00', (c) => c.broadcast(loop.now, payload()))
  loop.runUntil(() => loop.outputs('broadcast-done', 'p00').length > 0, 5000, 'broadcast-done')
  loop.run(100)
  loop.ok()
  expectExactlyOnce(loop, id, NAMES.length)
  expectPayload(loop, id)
  return id
}
