/**
 * `@chainsafe/libp2p-yamux` whose streams send a window update once half of the receive
 * window is used, as go-yamux and the yamux specification's reference implementation do,
 * instead of after every data frame.
 *
 * js-yamux 8.x answers every data frame it receives with a window update: one more frame
 * that is encrypted, written, read, decrypted and decoded. A treecast broadcast moves its
 * payload as chunks of one Noise message each (about 64 KiB), so a 1 MB broadcast cost 16
 * window updates per hop; among gossipsub-compare's 24 in-process peers they were 6.2% of
 * the CPU of 1 MB broadcasts (EXPERIMENTS.md, eighteenth round). With this, a stream whose
 * window has grown to its maximum (2 MiB in createTreecast) answers a 1 MB transfer with
 * one update or none.
 *
 * Flow control is unchanged: the sender may still have at most one window in flight, and
 * it always gets half a window back before it can run dry, so a sender is never left
 * waiting on an update that is not coming. A paused stream still sends none.
 */
import { yamux, type YamuxMuxerInit } from '@chainsafe/libp2p-yamux'
import type { StreamMuxer, StreamMuxerFactory } from '@libp2p/interface'
import { delegate } from './corked-tcp.ts'

/** js-yamux's `StreamState.Established` (not exported by the package). */
const ESTABLISHED = 3

/** What the lazier update needs of a js-yamux stream (private members of `YamuxStream`). */
interface WindowedStream {
  state?: number
  recvWindow?: number
  recvWindowCapacity?: number
  sendWindowUpdate?: (this: WindowedStream) => void
}

/**
 * Makes `stream` (a js-yamux stream) send a window update only when half of its receive
 * window is used, or when the original rule has a flag to send (opening, accepting).
 * A stream of another kind is returned untouched. Returns `stream`.
 */
export function halveWindowUpdates<T> (stream: T): T {
  const s = stream as unknown as WindowedStream
  const update = s.sendWindowUpdate
  if (typeof update !== 'function' || typeof s.recvWindow !== 'number' || typeof s.recvWindowCapacity !== 'number' || typeof s.state !== 'number') return stream
  s.sendWindowUpdate = function (this: WindowedStream): void {
    const window = this.recvWindow ?? 0
    const used = window - (this.recvWindowCapacity ?? 0)
    if (this.state === ESTABLISHED && used < window / 2) return
    update.call(this)
  }
  return stream
}

/** What the wrapper needs of a js-yamux muxer: the factory of its streams, both directions. */
interface StreamMaker { _newStream?: (...args: unknown[]) => unknown }

/**
 * Makes every stream `muxer` (a js-yamux muxer) creates, dialled or accepted, send window
 * updates at half a window. A muxer of another kind is returned untouched.
 */
export function halveMuxerWindowUpdates<T extends StreamMuxer> (muxer: T): T {
  const m = muxer as unknown as StreamMaker
  const make = m._newStream
  if (typeof make !== 'function') return muxer
  m._newStream = function (this: unknown, ...args: unknown[]): unknown {
    return halveWindowUpdates(make.apply(this, args))
  }
  return muxer
}

/**
 * A stream muxer factory for libp2p's `streamMuxers: [...]`, in place of `yamux(init)`: the
 * same yamux, its streams sending window updates at half a window. createTreecast uses it
 * by default.
 */
export function halfWindowYamux (init?: YamuxMuxerInit): () => StreamMuxerFactory {
  const factory = yamux(init)
  return () => {
    const inner = factory()
    const createStreamMuxer = (...args: Parameters<StreamMuxerFactory['createStreamMuxer']>): StreamMuxer =>
      halveMuxerWindowUpdates(inner.createStreamMuxer(...args))
    return delegate(inner as StreamMuxerFactory, { createStreamMuxer })
  }
}
