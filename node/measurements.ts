/**
 * What this peer measured of its neighbours, observed from the probe messages the core
 * sends and receives (the core keeps only what its trees need). RTT comes from the 1-byte
 * ping-pong; bandwidth from the probe download, minus one RTT, as the core computes it.
 */
import type { Message } from '../overlay/messages.ts'

/** One neighbour's latest measurements. */
export interface LinkMeasurement {
  /** Latest ping-pong round trip, ms. */
  readonly rttMs: number
  /** Latest probe download rate, bytes/s (undefined until a download completed). */
  readonly bandwidthBytesPerSec: number | undefined
  /** When measured (the node's monotonic clock, ms). */
  readonly at: number
}

/** Most neighbours remembered; the oldest measurement goes first past it. */
export const MAX_MEASURED_PEERS = 1024

/** Pairs the core's probe requests with their answers. */
export class Measurements {
  private readonly pings = new Map<string, { nonce: number, at: number }>()
  private readonly downloads = new Map<string, { nonce: number, at: number }>()
  private readonly latest = new Map<string, LinkMeasurement>()

  constructor (private readonly probeBytes: number) {}

  sent (now: number, to: string, msg: Message): void {
    if (msg.t === 'ping' && msg.nonce !== 0) this.pings.set(to, { nonce: msg.nonce, at: now })
    // A light probe-req asks for no download: nothing to measure from its reply.
    else if (msg.t === 'probe-req' && msg.light !== true) this.downloads.set(to, { nonce: msg.nonce, at: now })
    this.bound(this.pings)
    this.bound(this.downloads)
  }

  received (now: number, from: string, msg: Message): void {
    if (msg.t === 'pong') {
      const p = this.pings.get(from)
      if (p === undefined || p.nonce !== msg.nonce) return
      this.pings.delete(from)
      const prev = this.latest.get(from)
      this.set(from, { rttMs: now - p.at, bandwidthBytesPerSec: prev?.bandwidthBytesPerSec, at: now })
    } else if (msg.t === 'probe-rep') {
      const d = this.downloads.get(from)
      if (d === undefined || d.nonce !== msg.nonce) return
      this.downloads.delete(from)
      const prev = this.latest.get(from)
      const rtt = prev?.rttMs ?? 0
      const elapsed = now - d.at
      const transferMs = Math.max(elapsed - rtt, elapsed * 0.05, 1e-6)
      this.set(from, { rttMs: rtt, bandwidthBytesPerSec: this.probeBytes / (transferMs / 1000), at: now })
    }
  }

  get (peer: string): LinkMeasurement | undefined { return this.latest.get(peer) }

  all (): ReadonlyMap<string, LinkMeasurement> { return this.latest }

  private set (peer: string, m: LinkMeasurement): void {
    this.latest.delete(peer)
    this.latest.set(peer, m)
    this.bound(this.latest)
  }

  private bound (map: Map<string, unknown>): void {
    while (map.size > MAX_MEASURED_PEERS) {
      const first = map.keys().next().value as string
      map.delete(first)
    }
  }
}
