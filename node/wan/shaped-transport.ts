/**
 * `@libp2p/tcp` with emulated wide-area links on the dialing side. The dialer knows the
 * remote peer id from the `/p2p/` component of the dialed address before any byte is
 * exchanged (libp2p appends it when dialing a peer id), so it alone shapes the connection:
 * it waits one RTT before connecting (SYN, SYN-ACK), then hands the upgrader a
 * {@link ShapedConnection} that delays its sends through the local→remote pipe and its
 * receives through the remote→local pipe. The listening side is left untouched, so every
 * byte is shaped exactly once whoever dialed.
 */
import type { TCPComponents, TCPOptions } from '@libp2p/tcp'
import type { Connection, DialTransportOptions, MultiaddrConnection, PeerId, Transport, Upgrader } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import { performance } from 'node:perf_hooks'
import { Alarm, Poller } from './alarm.ts'
import { ShapedConnection, type ShapedLink } from './shaped-connection.ts'
import { corkedTcp, delegate } from '../corked-tcp.ts'

/** How a connection from one peer to another is shaped. */
export interface ShapedRoute {
  readonly link: ShapedLink
  /** Wait before the TCP connect, ms (one RTT of the pair, or 0). */
  readonly connectDelayMs: number
}

/** The route from `local` to `remote` (peer id strings), or undefined to leave it unshaped. */
export type RouteLookup = (local: string, remote: string) => ShapedRoute | undefined

/** What the shaped transport needs from libp2p's components: TCP's, plus our own peer id. */
export interface ShapedTcpComponents extends TCPComponents {
  peerId: PeerId
}

/** The peer id of the last `/p2p/` component of `ma`, if any. */
export function remotePeerOf(ma: Multiaddr): string | undefined {
  return ma.getComponents().findLast(c => c.name === 'p2p')?.value
}

/** Resolves after `ms` (never earlier), or rejects with the signal's reason when it aborts first. */
function sleep(poller: Poller, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(signal.reason)
      return
    }
    const onAbort = (): void => {
      alarm.clear()
      reject(signal?.reason)
    }
    const alarm = new Alarm(poller, () => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    })
    alarm.set(performance.now() + ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** An upgrader whose outbound upgrades see the raw connection through `link`. */
function shapingUpgrader(upgrader: Upgrader, link: ShapedLink): Upgrader {
  const upgradeOutbound = async (maConn: MultiaddrConnection, opts: unknown): Promise<Connection> => {
    return Reflect.apply(upgrader.upgradeOutbound, upgrader, [new ShapedConnection(maConn, link), opts])
  }
  return delegate(upgrader, { upgradeOutbound })
}

/**
 * A transport factory for libp2p's `transports: [...]`, in place of `tcp(tcpInit)`: the
 * same TCP transport, with outbound connections shaped by `route`, and every connection
 * writing each send at once (node/corked-tcp.ts), as createTreecast's. `poller` times the
 * connect delay (a private one, without polling, by default).
 */
export function shapedTcp(route: RouteLookup, tcpInit?: TCPOptions, poller = new Poller(0)): (components: ShapedTcpComponents) => Transport {
  const factory = corkedTcp(tcpInit)
  return components => {
    const inner = factory(components)
    const local = components.peerId.toString()
    const dial = async (ma: Multiaddr, options: DialTransportOptions): Promise<Connection> => {
      const remote = remotePeerOf(ma)
      const shape = remote === undefined ? undefined : route(local, remote)
      if (shape === undefined) return inner.dial(ma, options)
      if (shape.connectDelayMs > 0) await sleep(poller, shape.connectDelayMs, options.signal)
      return inner.dial(ma, { ...options, upgrader: shapingUpgrader(options.upgrader, shape.link) })
    }
    return delegate(inner, { dial })
  }
}
