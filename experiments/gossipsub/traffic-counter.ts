/**
 * Counts what every protocol stream of the hosts sends, through libp2p's own metrics hook:
 * libp2p hands each negotiated protocol stream (both ends) to `metrics.trackProtocolStream`,
 * and the counter wraps that stream's `send`. One counter serves every host of the process,
 * so it counts, per system, the bytes and writes all peers sent: application bytes on the
 * streams (treecast frames, gossipsub length-prefixed RPCs), before Yamux and Noise framing.
 * The same method for both systems, which share the hosts (see README.md).
 */
import type { Metrics, Stream } from '@libp2p/interface'
import type { Uint8ArrayList } from 'uint8arraylist'

/**
 * Which system a write belongs to. `treecast-heartbeat`: a write that is exactly one empty
 * treecast heartbeat frame (`varint(1) | kind 2`), sent on every control stream every second
 * whatever the traffic; kept apart so that it does not blur the per-broadcast counts.
 */
export type Family = 'treecast' | 'gossipsub' | 'treecast-heartbeat' | 'other'

/** The bytes of a heartbeat-only treecast write: frame length 1, kind Heartbeat (node/frame-channel.ts). */
const HEARTBEAT_WRITE = [0x01, 0x02]

/** Bytes and writes (`send` calls) so far. */
export interface Traffic { bytes: number, writes: number }

/** The family of a protocol id. */
export function familyOf (protocol: string): Family {
  if (protocol.startsWith('/treecast/')) return 'treecast'
  if (protocol.startsWith('/meshsub/') || protocol.startsWith('/floodsub/')) return 'gossipsub'
  return 'other'
}

/** Byte `i` of a write. */
function byteAt (data: Uint8Array | Uint8ArrayList, i: number): number | undefined {
  return data instanceof Uint8Array ? data[i] : data.get(i)
}

/** A no-op metric of every kind libp2p may register (gauges, counters, groups, histograms, summaries). */
function noopMetric (): Record<string, () => unknown> {
  const timer = (): void => {}
  return {
    update: () => {},
    increment: () => {},
    decrement: () => {},
    reset: () => {},
    observe: () => {},
    timer: () => timer
  }
}

/** Counts per-family traffic of every host built with its {@link TrafficCounter.metrics}. */
export class TrafficCounter {
  private readonly totals: Record<Family, Traffic> = {
    treecast: { bytes: 0, writes: 0 },
    gossipsub: { bytes: 0, writes: 0 },
    'treecast-heartbeat': { bytes: 0, writes: 0 },
    other: { bytes: 0, writes: 0 }
  }

  /** A copy of the totals so far. */
  snapshot (): Record<Family, Traffic> {
    return {
      treecast: { ...this.totals.treecast },
      gossipsub: { ...this.totals.gossipsub },
      'treecast-heartbeat': { ...this.totals['treecast-heartbeat'] },
      other: { ...this.totals.other }
    }
  }

  /** The totals of `family` so far. */
  of (family: Family): Traffic { return { ...this.totals[family] } }

  /** Wraps `stream.send` to count what it sends under the stream's protocol. */
  track (stream: Stream): void {
    const send = stream.send.bind(stream)
    const totals = this.totals
    stream.send = (data) => {
      let family = familyOf(stream.protocol ?? '')
      if (family === 'treecast' && data.byteLength === HEARTBEAT_WRITE.length && HEARTBEAT_WRITE.every((b, i) => byteAt(data, i) === b)) family = 'treecast-heartbeat'
      const t = totals[family]
      t.bytes += data.byteLength
      t.writes++
      return send(data)
    }
  }

  /** The `metrics` option of `createLibp2p`: counts streams, registers nothing. */
  metrics (): () => Metrics {
    const noop = (): Record<string, () => unknown> => noopMetric()
    const m = {
      trackMultiaddrConnection: () => {},
      trackProtocolStream: (stream: Stream) => { this.track(stream) },
      registerMetric: noop,
      registerMetricGroup: noop,
      registerCounter: noop,
      registerCounterGroup: noop,
      registerHistogram: noop,
      registerHistogramGroup: noop,
      registerSummary: noop,
      registerSummaryGroup: noop,
      traceFunction: <F>(_name: string, fn: F): F => fn,
      createTrace: () => undefined
    }
    return () => m as unknown as Metrics
  }
}

/** `b - a`, per field. */
export function minus (b: Traffic, a: Traffic): Traffic {
  return { bytes: b.bytes - a.bytes, writes: b.writes - a.writes }
}
