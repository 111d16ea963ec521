/**
 * Records when each peer first receives each message, for both systems, on the one clock
 * of this process (`performance.now()`). A message is recognised by an 8-byte tag at the
 * start of its payload (magic + sequence number), so neither system's own ids are needed.
 */
import { performance } from 'node:perf_hooks'
import { TOPIC } from './config.ts'
import type { Peer } from './hosts.ts'

export type System = 'treecast' | 'gossipsub'

const MAGIC = 0x74636773 // 'tcgs'

/** A payload of `bytes` (at least 8) whose first 8 bytes tag it with `seq`. */
export function taggedPayload (bytes: number, seq: number): Uint8Array {
  const out = new Uint8Array(Math.max(8, bytes))
  for (let i = 8; i < out.length; i++) out[i] = (i * 31 + seq) & 0xff
  const view = new DataView(out.buffer)
  view.setUint32(0, MAGIC)
  view.setUint32(4, seq >>> 0)
  return out
}

/** The sequence number of a tagged payload's first bytes, or undefined. */
export function tagOf (head: Uint8Array | undefined): number | undefined {
  if (head === undefined || head.byteLength < 8) return undefined
  const view = new DataView(head.buffer, head.byteOffset, 8)
  return view.getUint32(0) === MAGIC ? view.getUint32(4) : undefined
}

/** First arrivals of one message. */
export interface MessageArrivals {
  /** performance.now() of the first arrival at each peer index. */
  readonly at: Map<number, number>
  /** Arrivals after the first at the same peer (duplicates delivered to the application). */
  duplicates: number
}

/** The arrivals of every tagged message, per system. */
export class ArrivalRecorder {
  private readonly byKey = new Map<string, MessageArrivals>()
  private listener: (() => void) | undefined

  /** Listens to treecast's 'deliver' and gossipsub's 'message' events of every peer. */
  attach (peers: readonly Peer[]): void {
    for (const p of peers) {
      p.treecast.addEventListener('deliver', (e) => { this.record('treecast', tagOf(e.detail.chunks[0]), p.index) })
      p.pubsub.addEventListener('message', (e) => {
        if (e.detail.topic === TOPIC) this.record('gossipsub', tagOf(e.detail.data), p.index)
      })
    }
  }

  /** Called after every arrival (one waiter at a time). */
  onArrival (fn: (() => void) | undefined): void { this.listener = fn }

  /** The arrivals of message `seq` of `system`. */
  get (system: System, seq: number): MessageArrivals {
    const key = `${system}/${seq}`
    let a = this.byKey.get(key)
    if (a === undefined) {
      a = { at: new Map(), duplicates: 0 }
      this.byKey.set(key, a)
    }
    return a
  }

  private record (system: System, seq: number | undefined, peer: number): void {
    if (seq === undefined) return
    const now = performance.now()
    const a = this.get(system, seq)
    if (a.at.has(peer)) a.duplicates++
    else a.at.set(peer, now)
    this.listener?.()
  }
}
