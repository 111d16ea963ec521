/**
 * A Links (node/links.ts) over fake libp2p components, no sockets: openConnection follows
 * a list of steps, inbound control streams are handed in by the test, and the frames a
 * fake stream was sent can be read back.
 */
import type { Stream } from '@libp2p/interface'
import type { ConnectionManager, Registrar } from '@libp2p/interface-internal'
import { Uint8ArrayList } from 'uint8arraylist'
import { DEFAULT_CODEC_LIMITS } from '../overlay/codec.ts'
import { resolveNodeConfig, type NodeNetInit } from '../node/config.ts'
import { CONTROL_PROTOCOL, Links, type LinksHost } from '../node/links.ts'
import { FakeStream } from './fake-stream.ts'

export const timeoutError = (): Error => Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' })
export const refusedError = (): Error => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:4001'), { code: 'ECONNREFUSED' })

/** What each openConnection call does, in order: fail with an error, or connect; `before` runs first. */
export type Step = Error | 'connect' | { before: () => void, then: Error | 'connect' }

export interface Rig { links: Links, down: string[], streams: FakeStream[], calls: () => number, inbound: (stream: FakeStream, remotePeer: string, protocol?: string) => void }

export async function rig (steps: Step[], net: NodeNetInit = {}, opts: { host?: Partial<LinksHost>, clock?: () => number } = {}): Promise<Rig> {
  const down: string[] = []
  const streams: FakeStream[] = []
  let calls = 0
  const connectionManager = {
    openConnection: async () => {
      const step = steps[calls++] ?? refusedError()
      await Promise.resolve()
      if (step instanceof Error) throw step
      if (step !== 'connect') {
        step.before()
        await Promise.resolve()
        if (step.then !== 'connect') throw step.then
      }
      return {
        id: `c${calls}`,
        status: 'open',
        newStream: async () => { const s = new FakeStream(); streams.push(s); return s as unknown as Stream }
      }
    }
  } as unknown as ConnectionManager
  const handlers = new Map<string, (stream: Stream, conn: unknown) => void>()
  const registrar = { handle: async (protocol: string, h: (stream: Stream, conn: unknown) => void) => { handlers.set(protocol, h) }, unhandle: async () => {} } as unknown as Registrar
  const links = new Links({ registrar, connectionManager }, resolveNodeConfig({ heartbeatIntervalMs: 60_000, failureDetectionTimeoutMs: 120_000, ...net }), DEFAULT_CODEC_LIMITS, {
    hello: () => ({ id: 'self', incarnation: 1 }),
    message: () => {},
    reject: () => {},
    peerDown: (peer) => { down.push(peer) },
    keep: () => false,
    connected: () => {},
    fenceBegin: () => false,
    fenceVerdict: () => 'unknown',
    ...opts.host
  }, opts.clock ?? (() => performance.now()))
  await links.start()
  const inbound = (stream: FakeStream, remotePeer: string, protocol = CONTROL_PROTOCOL): void => {
    handlers.get(protocol)?.(stream as unknown as Stream, { remotePeer: { toString: () => remotePeer } })
  }
  return { links, down, streams, calls: () => calls, inbound }
}

/** One frame as FrameChannel writes it: varint(1 + body length), kind, body. */
export function frame (kind: number, body: Uint8Array): Uint8ArrayList {
  const n = body.length + 1
  const prefix = n < 0x80 ? [n] : [(n & 0x7f) | 0x80, n >> 7]
  return new Uint8ArrayList(Uint8Array.of(...prefix, kind), body)
}

export const settled = async (): Promise<void> => { for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve)) }

/** The frames written on a fake stream, in order (each send is a batch of length-prefixed frames): their kind and body. */
export function framesOf (s: FakeStream): Array<{ kind: number, body: Uint8Array }> {
  const frames: Array<{ kind: number, body: Uint8Array }> = []
  for (const batch of s.sent) {
    const bytes = new Uint8ArrayList(batch).subarray()
    let off = 0
    while (off < bytes.length) {
      let len = 0
      let shift = 0
      for (;;) { const b = bytes[off++] as number; len |= (b & 0x7f) << shift; shift += 7; if (b < 0x80) break }
      frames.push({ kind: bytes[off] as number, body: bytes.subarray(off + 1, off + len) })
      off += len
    }
  }
  return frames
}

/** The kinds of the frames written on a fake stream. */
export function frameKinds (s: FakeStream): number[] { return framesOf(s).map((f) => f.kind) }
