/**
 * `@libp2p/tcp` whose connections write each send as one socket write. libp2p's TCP
 * connection writes a send's buffers one `socket.write` at a time, and Noise hands it every
 * message as two (a 2-byte length, then the ciphertext): with Nagle off (libp2p's default)
 * each becomes its own system call, and often its own packet and read at the other end, so
 * a receiver whose event loop is not busy wakes once for the length and once for the rest.
 * Corking the socket around a send makes Node write the buffers together (`writev`).
 *
 * Among gossipsub-compare's 24 in-process peers a 1 MB broadcast took 3,659 to 5,960
 * socket writes and 569 to 1,521 reads from run to run, and its CPU moved with the reads
 * (EXPERIMENTS.md, seventeenth round).
 */
import { tcp, type TCPComponents, type TCPOptions } from '@libp2p/tcp'
import type { Connection, CreateListenerOptions, DialTransportOptions, Listener, MultiaddrConnection, Transport, Upgrader } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'

/** Forwards every member of `target`, methods bound to it, except those in `overrides`. */
export function delegate<T extends object> (target: T, overrides: Partial<Record<PropertyKey, unknown>>): T {
  return new Proxy(target, {
    get (t, prop) {
      if (Object.hasOwn(overrides, prop)) return overrides[prop]
      const value: unknown = Reflect.get(t, prop, t)
      return typeof value === 'function' ? value.bind(t) : value
    }
  })
}

/** What corking needs of a connection: libp2p-tcp's `sendData` and its socket. */
interface CorkableConnection {
  sendData?: (this: unknown, data: unknown) => unknown
  socket?: { cork?: () => void, uncork?: () => void }
}

/**
 * Makes each send of `maConn` (a connection of @libp2p/tcp) one socket write: the socket is
 * corked while the send's buffers are written. A connection of another kind (no socket,
 * no `sendData`) is returned untouched. Returns `maConn`.
 */
export function corkSends<T extends MultiaddrConnection> (maConn: T): T {
  const c = maConn as unknown as CorkableConnection
  const send = c.sendData
  const socket = c.socket
  if (typeof send !== 'function' || typeof socket?.cork !== 'function' || typeof socket.uncork !== 'function') return maConn
  const cork = socket.cork.bind(socket)
  const uncork = socket.uncork.bind(socket)
  c.sendData = function (this: unknown, data: unknown): unknown {
    cork()
    try {
      return send.call(this, data)
    } finally {
      uncork()
    }
  }
  return maConn
}

/** An upgrader that corks the raw connection of every upgrade, outbound and inbound. */
export function corkingUpgrader (upgrader: Upgrader): Upgrader {
  const upgradeOutbound = async (maConn: MultiaddrConnection, opts: unknown): Promise<Connection> =>
    Reflect.apply(upgrader.upgradeOutbound, upgrader, [corkSends(maConn), opts])
  const upgradeInbound = async (maConn: MultiaddrConnection, opts: unknown): Promise<void> =>
    Reflect.apply(upgrader.upgradeInbound, upgrader, [corkSends(maConn), opts])
  return delegate(upgrader, { upgradeOutbound, upgradeInbound })
}

/**
 * A transport factory for libp2p's `transports: [...]`, in place of `tcp(init)`: the same
 * TCP transport, every connection (dialled or accepted) writing each send at once.
 * createTreecast uses it by default.
 */
export function corkedTcp (init?: TCPOptions): (components: TCPComponents) => Transport {
  const factory = tcp(init)
  return (components) => {
    const inner = factory(components)
    const dial = async (ma: Multiaddr, options: DialTransportOptions): Promise<Connection> =>
      await inner.dial(ma, { ...options, upgrader: corkingUpgrader(options.upgrader) })
    const createListener = (options: CreateListenerOptions): Listener =>
      inner.createListener({ ...options, upgrader: corkingUpgrader(options.upgrader) })
    return delegate(inner, { dial, createListener })
  }
}
