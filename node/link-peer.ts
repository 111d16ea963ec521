/**
 * One peer the node's links know (node/links.ts): its control channels, the messages that
 * wait for the first one (and the partials that wait for it to drain), and how many bytes
 * a queued message is counted for.
 */
import type { FrameChannel } from './frame-channel.ts'
import type { HeldPartials } from './held-partials.ts'
import type { Message } from '../overlay/messages.ts'

/** A peer's connection record. */
export interface Peer {
  readonly id: string
  incarnation: number | undefined
  /** Open control channels (usually one; two after a simultaneous dial). */
  readonly channels: FrameChannel[]
  /** Messages waiting for the first channel. */
  pending: Message[]
  pendingBytes: number
  /** Reduction partials fed to the control stream as it drains (node/held-partials.ts). */
  readonly held: HeldPartials
  dialing: boolean
  lastUsedAt: number
  /** The remote said it closes on purpose. */
  byeReceived: boolean
}

/** Bytes a message waiting for a channel is counted for (a bound, not its encoding). */
export function estimateBytes (msg: Message): number {
  switch (msg.t) {
    case 'chunk': return msg.data.byteLength + 128
    case 'probe-rep': return msg.padding + 1024
    default: return 1024
  }
}

/**
 * The peers that may be disconnected, least recently used first: quiet for `idleMs` (one
 * just probed or asked to adopt us is about to answer), nothing dialling, waiting or
 * queued, and not `busy` (a tree neighbour, a bulk transfer).
 */
export function prunable (peers: Iterable<Peer>, now: number, idleMs: number, busy: (p: Peer) => boolean): Peer[] {
  return [...peers]
    .filter((p) => now - p.lastUsedAt > idleMs && !p.dialing && p.pending.length === 0 && p.held.size === 0 && !busy(p) && p.channels.every((c) => c.queuedBytes === 0))
    .sort((a, b) => a.lastUsedAt - b.lastUsedAt)
}

/**
 * Keeps at most `maxPeers` in `peers`: the {@link prunable} ones go, least recently used
 * first; each is deleted, then handed to `drop` (which says bye and closes its streams).
 */
export function pruneTo (peers: Map<string, Peer>, maxPeers: number, now: number, idleMs: number, busy: (p: Peer) => boolean, drop: (p: Peer) => void): void {
  if (peers.size <= maxPeers) return
  for (const p of prunable(peers.values(), now, idleMs, busy)) {
    if (peers.size <= maxPeers) break
    peers.delete(p.id)
    drop(p)
  }
}
