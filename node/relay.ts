/**
 * `broadcast(payload, { root })`: a broadcast rooted at the owner of virtual node `root`
 * rather than here. The payload goes to that peer on a `/treecast/relay/1.0.0` stream, in
 * frames of at most 1 MiB; the peer broadcasts it from its own trees and reports the
 * broadcast's id once started and again once every virtual node has it.
 *
 * Frames on a relay stream: hello, then `start` {bytes, mode}, `data`... from the asker;
 * `started` {id}, then `done` or `failed` {message} from the root.
 */
import type { Connection, Stream } from '@libp2p/interface'
import { decode, encode } from 'cborg'
import type { Uint8ArrayList } from 'uint8arraylist'
import { FrameChannel, FrameKind } from './frame-channel.ts'
import { decodeHello, encodeHello, peerIdPart, type Hello } from './hello.ts'
import { RelayFailedError } from './errors.ts'

/** Protocol of a relayed broadcast. */
export const RELAY_PROTOCOL = '/treecast/relay/1.0.0'
/** Relayed broadcasts a root runs at once; more are refused. */
export const MAX_RELAYS = 16
/** Payload bytes per data frame. */
export const RELAY_FRAME_BYTES = 1024 * 1024

const Kind = { Start: 16, Data: 17, Started: 18, Done: 19, Failed: 20 } as const
type Mode = 'auto' | 'lat' | 'bw'

/** What the relay needs from the node. */
export interface RelayHost {
  hello (): Hello
  open (peer: string, protocol: string): Promise<Stream>
  /** Broadcasts from here; throws on misuse (not running, too large). */
  broadcast (payload: Uint8Array, mode: Mode): { id: string, done: Promise<void> }
  maxPayloadBytes (): number
  maxFrameBytes: number
  clock (): number
  reject (reason: string): void
}

/** A broadcast started at another root. */
export interface RelayedBroadcast { readonly id: string, readonly done: Promise<void> }


export class Relay {
  private active = 0
  /** This peer's relay streams, by the root they ask (see {@link rootGone}). */
  private readonly asking = new Map<string, Set<FrameChannel>>()

  constructor (private readonly host: RelayHost) {}

  /** Serves a relay stream opened by another peer. */
  accept (stream: Stream, conn: Connection): void {
    let from: string | undefined
    let expected = -1
    let mode: Mode = 'auto'
    const parts: Uint8Array[] = []
    let got = 0
    let counted = false
    let started = false
    const fail = (message: string): void => {
      try { ch.send(Kind.Failed, encode({ message })) } catch { /* closed */ }
      void ch.close()
    }
    // Closed both ways once done: the asker closes after the answer, and a stream left half
    // open kept `active` counted and the payload held (a root took 16 relayed broadcasts).
    const ch = new FrameChannel(stream, { maxFrameBytes: this.host.maxFrameBytes + 1024, maxQueuedBytes: 1024 * 1024, closeOnRemoteClose: true }, {
      frame: (kind, body) => {
        if (from === undefined) {
          const h = kind === FrameKind.Hello ? decodeHello(body) : undefined
          if (h === undefined || peerIdPart(h.id) !== conn.remotePeer.toString()) { this.host.reject('bad-hello'); ch.abort(new Error('bad hello')); return }
          from = h.id
          return
        }
        if (started) {
          // Every byte announced has come and the broadcast is started: nothing may follow
          // (an empty data frame used to start it again).
          this.host.reject('relay-bad-frame')
          return
        }
        if (kind === Kind.Start && expected < 0) {
          const s = parse(body)
          const bytes = s?.bytes
          if (typeof bytes !== 'number' || !Number.isSafeInteger(bytes) || bytes < 0 || bytes > this.host.maxPayloadBytes()) { this.host.reject('relay-bad-start'); fail('bad start'); return }
          if (this.active >= MAX_RELAYS) { fail('too many relayed broadcasts'); return }
          this.active++
          counted = true
          expected = bytes
          mode = s?.mode === 'lat' || s?.mode === 'bw' ? s.mode : 'auto'
        } else if (kind === Kind.Data && expected >= 0) {
          if (got + body.byteLength > expected) { this.host.reject('relay-overrun'); fail('more bytes than announced'); return }
          parts.push(body.subarray())
          got += body.byteLength
        } else {
          this.host.reject('relay-bad-frame')
          fail('unexpected frame')
          return
        }
        if (expected >= 0 && got === expected) { started = true; this.start(ch, join(parts, got), mode) }
      },
      drained: () => {},
      closed: () => { if (counted) { counted = false; this.active-- } }
    }, this.host.clock)
  }

  private start (ch: FrameChannel, payload: Uint8Array, mode: Mode): void {
    let b: { id: string, done: Promise<void> }
    try {
      b = this.host.broadcast(payload, mode)
    } catch (err) {
      ch.send(Kind.Failed, encode({ message: (err as Error).message }))
      void ch.close()
      return
    }
    ch.send(Kind.Started, encode({ id: b.id }))
    b.done.then(
      () => { if (!ch.closed) { ch.send(Kind.Done, encode({ id: b.id })); void ch.close() } },
      (err: Error) => { if (!ch.closed) { ch.send(Kind.Failed, encode({ message: err.message })); void ch.close() } }
    )
  }

  /** Asks `root` (an overlay id) to broadcast `payload`; resolves once it has started. */
  async broadcastAt (root: string, payload: Uint8Array, mode: Mode): Promise<RelayedBroadcast> {
    const stream = await this.host.open(root, RELAY_PROTOCOL)
    let started: (id: string) => void = () => {}
    let finished: () => void = () => {}
    let failed: (err: Error) => void = () => {}
    const startedP = new Promise<string>((resolve, reject) => { started = resolve; failed = reject })
    const done = new Promise<void>((resolve, reject) => { finished = resolve; const f = failed; failed = (e) => { f(e); reject(e) } })
    done.catch(() => {})
    let isDone = false
    const ch = new FrameChannel(stream, { maxFrameBytes: 64 * 1024, maxQueuedBytes: payload.byteLength + 2 * RELAY_FRAME_BYTES, closeOnRemoteClose: true }, {
      frame: (kind, body) => {
        const m = parse(body)
        if (kind === Kind.Started && typeof m?.id === 'string') started(m.id)
        else if (kind === Kind.Done) { isDone = true; finished(); void ch.close() } else if (kind === Kind.Failed) { failed(new RelayFailedError(typeof m?.message === 'string' ? m.message : 'the root refused the broadcast')); void ch.close() }
      },
      drained: () => {},
      closed: (err) => {
        this.asking.get(root)?.delete(ch)
        if (this.asking.get(root)?.size === 0) this.asking.delete(root)
        if (!isDone) failed(err instanceof RelayFailedError ? err : new RelayFailedError(`the relay stream to ${root} closed before the broadcast completed`))
      }
    }, this.host.clock)
    if (!this.asking.has(root)) this.asking.set(root, new Set())
    this.asking.get(root)?.add(ch)
    ch.send(FrameKind.Hello, encodeHello(this.host.hello()))
    ch.send(Kind.Start, encode({ bytes: payload.byteLength, mode }))
    for (let off = 0; off < payload.byteLength; off += RELAY_FRAME_BYTES) {
      const end = Math.min(off + RELAY_FRAME_BYTES, payload.byteLength)
      ch.send(Kind.Data, () => payload.subarray(off, end), end - off)
    }
    const id = await startedP
    return { id, done }
  }

  /**
   * `root` left or was declared dead: what was asked of it fails now. Its relay streams are
   * not watched by heartbeats, so a hung root (stopped, partitioned) left them pending for
   * ever; the overlay's failure detector, which watches its control stream, decides.
   */
  rootGone (root: string): void {
    for (const ch of this.asking.get(root) ?? []) ch.abort(new RelayFailedError(`the root ${root} left or was declared dead`))
  }
}

function parse (body: Uint8ArrayList): Record<string, unknown> | undefined {
  try {
    const v: unknown = decode(body.subarray())
    return typeof v === 'object' && v !== null ? v as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

function join (parts: readonly Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1) return parts[0] as Uint8Array
  const out = new Uint8Array(total)
  let off = 0
  for (const p of parts) { out.set(p, off); off += p.byteLength }
  return out
}
