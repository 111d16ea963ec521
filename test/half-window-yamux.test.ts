/**
 * Yamux with window updates at half a window (node/half-window-yamux.ts), on real js-yamux
 * muxers over an in-memory connection (which guards the private members the wrapper relies
 * on: if a yamux release renames them, updates silently go back to one per frame and the
 * count below fails): a transfer of many frames arrives whole with far fewer updates than
 * plain yamux sends, a transfer past the largest window never stalls, nor does one into a
 * paused stream once it resumes.
 */
import type { Stream, StreamMuxer } from '@libp2p/interface'
import { yamux } from '@chainsafe/libp2p-yamux'
import { multiaddrConnectionPair } from '@libp2p/utils'
import { Uint8ArrayList } from 'uint8arraylist'
import { afterEach, describe, expect, it } from 'vitest'
import { halfWindowYamux, halveMuxerWindowUpdates, halveWindowUpdates } from '../node/half-window-yamux.ts'

/** js-yamux's `FrameType.WindowUpdate` (the package exports the type only). */
const WINDOW_UPDATE = 1
const KiB = 1024
const MAX_WINDOW = 2 * 1024 * KiB

interface Rig { dialer: StreamMuxer, listener: StreamMuxer, updates: () => number }
const rigs: Rig[] = []

/** A dialling and a listening muxer over one in-memory connection; counts the listener's window updates. */
function rig (half: boolean): Rig {
  const [outbound, inbound] = multiaddrConnectionPair()
  const make = half ? halfWindowYamux : yamux
  const init = { streamOptions: { maxStreamWindowSize: MAX_WINDOW } }
  const dialer = make(init)().createStreamMuxer(outbound)
  const listener = make(init)().createStreamMuxer(inbound)
  let updates = 0
  const l = listener as unknown as { sendFrame: (header: { type: number }, ...rest: unknown[]) => unknown }
  const send = l.sendFrame.bind(listener)
  l.sendFrame = (header, ...rest) => {
    if (header.type === WINDOW_UPDATE) updates++
    return send(header, ...rest)
  }
  const r = { dialer, listener, updates: () => updates }
  rigs.push(r)
  return r
}

/** The next stream the listener accepts. */
async function accepted (listener: StreamMuxer): Promise<Stream> {
  return await new Promise((resolve) => { listener.addEventListener('stream', (evt) => { resolve(evt.detail) }, { once: true }) })
}

/** A collector of what `stream` receives: the bytes so far, and a wait for a total. */
function collector (stream: Stream): { got: Uint8ArrayList, until: (bytes: number) => Promise<void> } {
  const got = new Uint8ArrayList()
  const waiters: Array<{ bytes: number, resolve: () => void }> = []
  stream.addEventListener('message', (evt) => {
    got.append(evt.data)
    for (const w of waiters.splice(0)) {
      if (got.byteLength >= w.bytes) w.resolve()
      else waiters.push(w)
    }
  })
  const until = async (bytes: number): Promise<void> => {
    if (got.byteLength >= bytes) return
    await new Promise<void>((resolve) => { waiters.push({ bytes, resolve }) })
  }
  return { got, until }
}

const FRAME_BYTES = 64 * KiB

/** `bytes` bytes of a pattern. */
function pattern (bytes: number): Uint8Array {
  const b = new Uint8Array(bytes)
  for (let i = 0; i < bytes; i++) b[i] = (i * 13) & 0xff
  return b
}

/**
 * Sends `bytes` from the dialler to the listener in 64 KiB sends; with `lockstep` each send
 * waits until the previous one has arrived (so every send is a data frame of its own).
 * Whether what arrived equals what was sent, and the listener's window updates.
 */
async function transfer (r: Rig, bytes: number, opts: { lockstep?: boolean, pauseFirst?: boolean } = {}): Promise<{ same: boolean, updates: number, blocked: boolean }> {
  const sent = pattern(bytes)
  const incoming = accepted(r.listener)
  const stream = await r.dialer.createStream()
  stream.send(sent.subarray(0, FRAME_BYTES))
  const remote = await incoming
  const c = collector(remote)
  let at = FRAME_BYTES
  let blocked = false
  if (opts.pauseFirst === true) {
    // The reader pauses (no window update while paused), the sender runs its window dry
    // and is told to wait; resuming must send the update that lets it go on.
    remote.pause()
    while (at < bytes) {
      const more = stream.send(sent.subarray(at, at + FRAME_BYTES))
      at += FRAME_BYTES
      if (!more) break
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
    blocked = c.got.byteLength < at
    const draining = stream.onDrain()
    remote.resume()
    await draining
  }
  for (; at < bytes; at += FRAME_BYTES) {
    if (opts.lockstep === true) await c.until(at)
    if (!stream.send(sent.subarray(at, at + FRAME_BYTES))) await stream.onDrain()
  }
  await c.until(bytes)
  return { same: Buffer.from(c.got.subarray()).equals(sent), updates: r.updates(), blocked }
}

afterEach(() => {
  for (const r of rigs.splice(0)) {
    r.dialer.abort(new Error('done'))
    r.listener.abort(new Error('done'))
  }
})

describe('halfWindowYamux', () => {
  it('carries 1 MiB of 64 KiB frames whole with a fraction of plain yamux window updates', async () => {
    const plain = await transfer(rig(false), 1024 * KiB, { lockstep: true })
    expect(plain.same).toBe(true)
    // plain yamux answers each of the 16 data frames
    expect(plain.updates).toBeGreaterThanOrEqual(16)
    const half = await transfer(rig(true), 1024 * KiB, { lockstep: true })
    expect(half.same).toBe(true)
    // one when accepting the stream, then at most one per 128 KiB (half the first window)
    expect(half.updates).toBeLessThanOrEqual(9)
  })

  it('never stalls a transfer many times the largest window', async () => {
    const r = await transfer(rig(true), 4 * MAX_WINDOW)
    expect(r.same).toBe(true)
  })

  it('lets a sender blocked by a paused reader finish once the reader resumes', async () => {
    const r = await transfer(rig(true), 2 * MAX_WINDOW, { pauseFirst: true })
    expect(r.blocked, 'the sender ran out of window while the reader was paused').toBe(true)
    expect(r.same).toBe(true)
  })

  it('leaves a muxer or a stream of another kind untouched', () => {
    const muxer = { createStream: () => undefined } as unknown as StreamMuxer
    expect(halveMuxerWindowUpdates(muxer)).toBe(muxer)
    expect(Object.keys(muxer)).toEqual(['createStream'])
    const update = (): void => {}
    const stream = { sendWindowUpdate: update, recvWindow: 'x' }
    expect(halveWindowUpdates(stream).sendWindowUpdate).toBe(update)
  })
})
