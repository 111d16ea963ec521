/**
 * A raw MultiaddrConnection (below Noise and Yamux) whose two directions cross emulated
 * links: what the upper layers send goes through the `up` pipe before reaching the socket,
 * what the socket receives goes through the `down` pipe before reaching the upper layers.
 * Handshakes, window updates and keep-alives all see the emulated link.
 *
 * Backpressure: `send()` returns false while this connection's share of the up pipe is
 * over its limits (or the socket itself is full) and 'drain' follows; on the receive side a
 * full share of the down pipe pauses the socket, so TCP pushes back on the remote sender.
 */
import { AbstractMultiaddrConnection, type SendResult } from '@libp2p/utils'
import type { AbortOptions, MultiaddrConnection } from '@libp2p/interface'
import type { Uint8ArrayList } from 'uint8arraylist'
import type { Chunk, Pipe, PipeFlow } from './pipe.ts'

/** Read buffer allowed above the pipe limits before the stream aborts (the libp2p default). */
const BASE_READ_BUFFER_BYTES = 4 * 1024 * 1024

/**
 * What a pipe delivers at once, as one buffer. A pipe hands over everything of a flow that
 * arrived by the same wake-up: many Noise frames, each a 2-byte length and a ciphertext in
 * separate buffers. Handed over as a list, every buffer became its own socket write (the TCP
 * connection writes a list buffer by buffer) and the Noise decoder searched the list for
 * every length it read. A socket read gives one buffer too.
 */
function contiguous (data: Chunk): Uint8Array {
  return data instanceof Uint8Array ? data : data.subarray()
}

/** The two pipes of a shaped connection, seen from the dialer. */
export interface ShapedLink {
  /** local -> remote */
  readonly up: Pipe
  /** remote -> local */
  readonly down: Pipe
}

/** Wraps `inner`; everything above (Noise, Yamux) talks to this object. */
export class ShapedConnection extends AbstractMultiaddrConnection {
  private readonly up: PipeFlow
  private readonly down: PipeFlow
  /** the upper layer asked us to pause reading */
  private upperPaused = false
  /** our share of the down pipe is full */
  private downFull = false
  /** we paused the socket */
  private innerPaused = false

  constructor(private readonly inner: MultiaddrConnection, link: ShapedLink) {
    super({
      remoteAddr: inner.remoteAddr,
      direction: inner.direction,
      log: inner.log.newScope('wan'),
      inactivityTimeout: inner.inactivityTimeout,
      maxReadBufferLength: BASE_READ_BUFFER_BYTES +
        link.down.init.backlogHighWaterBytes + link.down.init.maxInFlightBytes
    })
    this.up = link.up.open({
      deliver: data => { this.toSocket(contiguous(data)) },
      onDrain: () => { this.maybeDrain() }
    })
    this.down = link.down.open({
      deliver: data => { this.onData(contiguous(data)) },
      onDrain: () => {
        this.downFull = false
        this.updateInnerPause()
      }
    })

    inner.addEventListener('message', evt => {
      if (!this.down.push(evt.data)) {
        this.downFull = true
        this.updateInnerPause()
      }
    })
    inner.addEventListener('drain', () => { this.maybeDrain() })
    inner.addEventListener('remoteCloseWrite', () => {
      void this.down.whenIdle().then(() => { this.onRemoteCloseWrite() })
    })
    inner.addEventListener('close', evt => {
      // nothing more can be sent
      this.up.destroy()
      if (evt.error != null) {
        this.down.destroy()
        this.onTransportClosed(evt.error)
        return
      }
      // the FIN travels behind the data still on the emulated wire
      void this.down.whenIdle().then(() => {
        this.down.destroy()
        this.onTransportClosed()
      })
    })
    this.addEventListener('close', () => {
      this.up.destroy()
      this.down.destroy()
    })
  }

  sendData(data: Uint8ArrayList): SendResult {
    const ok = this.up.push(data)
    return { sentBytes: data.byteLength, canSendMore: ok && !this.inner.writableNeedsDrain }
  }

  sendReset(err: Error): void {
    this.up.destroy()
    this.down.destroy()
    this.inner.abort(err)
  }

  async sendClose(options?: AbortOptions): Promise<void> {
    // let the bytes still on the emulated wire reach the socket before the FIN
    const idle = this.up.whenIdle()
    if (options?.signal == null) {
      await idle
    } else {
      const signal = options.signal
      signal.throwIfAborted()
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => { reject(signal.reason) }
        signal.addEventListener('abort', onAbort, { once: true })
        void idle.then(() => {
          signal.removeEventListener('abort', onAbort)
          resolve()
        })
      })
    }
    await this.inner.close(options)
  }

  sendPause(): void {
    this.upperPaused = true
    this.updateInnerPause()
  }

  sendResume(): void {
    this.upperPaused = false
    this.updateInnerPause()
  }

  private toSocket(data: Chunk): void {
    if (this.inner.status !== 'open') return
    try {
      this.inner.send(data)
    } catch (err) {
      this.log.error('could not write to the socket - %e', err)
      this.abort(err instanceof Error ? err : new Error(String(err)))
    }
  }

  /** 'drain' once both our share of the up pipe and the socket have room again. */
  private maybeDrain(): void {
    if (this.writableNeedsDrain && !this.up.needsDrain && !this.inner.writableNeedsDrain) {
      this.safeDispatchEvent('drain')
    }
  }

  private updateInnerPause(): void {
    const pause = this.upperPaused || this.downFull
    if (pause === this.innerPaused || this.inner.status !== 'open') return
    this.innerPaused = pause
    try {
      if (pause) this.inner.pause()
      else this.inner.resume()
    } catch (err) {
      this.log('could not pause/resume the socket - %e', err)
    }
  }
}
