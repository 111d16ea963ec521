/**
 * Corked TCP connections (node/corked-tcp.ts): a send of several buffers leaves as one
 * socket write, on a real @libp2p/tcp connection (which guards the private members the
 * wrapper relies on: if a libp2p release renames them, corking silently stops and this
 * fails), and a connection of another kind is left untouched.
 */
import { createServer, type Server, type Socket } from 'node:net'
import type { Connection, MultiaddrConnection, Upgrader } from '@libp2p/interface'
import type { TCPComponents } from '@libp2p/tcp'
import { defaultLogger } from '@libp2p/logger'
import { multiaddr } from '@multiformats/multiaddr'
import { Uint8ArrayList } from 'uint8arraylist'
import { afterEach, describe, expect, it } from 'vitest'
import { corkedTcp, corkSends } from '../node/corked-tcp.ts'

describe('corked TCP', () => {
  let server: Server | undefined
  let conn: MultiaddrConnection | undefined
  afterEach(async () => {
    conn?.abort(new Error('done'))
    await new Promise<void>((resolve) => { if (server === undefined) resolve(); else server.close(() => { resolve() }) })
    server = undefined
    conn = undefined
  })

  it('writes a send of several buffers as one socket write, whole and in order', async () => {
    const received: Buffer[] = []
    let peer: Socket | undefined
    server = createServer((s) => { peer = s; s.on('data', (d: Buffer) => { received.push(d) }) })
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as { port: number }).port
    const upgrader = { upgradeOutbound: async (maConn: MultiaddrConnection) => { conn = maConn; return {} as unknown as Connection } } as unknown as Upgrader
    const transport = corkedTcp()({ logger: defaultLogger() } as unknown as TCPComponents)
    await transport.dial(multiaddr(`/ip4/127.0.0.1/tcp/${port}`), { upgrader, signal: AbortSignal.timeout(5000) } as unknown as Parameters<typeof transport.dial>[1])
    const socket = (conn as unknown as { socket: Socket & { _writeGeneric: (...a: unknown[]) => unknown } }).socket
    expect(socket, '@libp2p/tcp connections keep their socket in `socket`').toBeDefined()
    let writes = 0
    const orig = socket._writeGeneric.bind(socket)
    socket._writeGeneric = (...a: unknown[]) => { writes++; return orig(...a) }
    // what Noise hands the connection: a 2-byte length and its ciphertext, twice
    const parts = [Uint8Array.of(0, 3), Uint8Array.of(1, 2, 3), Uint8Array.of(0, 2), Uint8Array.of(4, 5)]
    conn?.send(new Uint8ArrayList(...parts))
    const all = Buffer.concat(parts)
    for (let i = 0; i < 200 && Buffer.concat(received).length < all.length; i++) await new Promise((resolve) => setTimeout(resolve, 5))
    expect(Buffer.concat(received)).toEqual(all)
    expect(writes).toBe(1)
    peer?.destroy()
  })

  it('leaves a connection that is not a libp2p TCP one untouched', () => {
    const other = { send: () => true } as unknown as MultiaddrConnection
    expect(corkSends(other)).toBe(other)
    expect(Object.keys(other)).toEqual(['send'])
    const noCork = { sendData: () => ({ sentBytes: 0, canSendMore: true }), socket: {} }
    const before = noCork.sendData
    corkSends(noCork as unknown as MultiaddrConnection)
    expect(noCork.sendData).toBe(before)
  })

  it('uncorks even when a send throws', () => {
    const calls: string[] = []
    const fake = {
      socket: { cork: () => { calls.push('cork') }, uncork: () => { calls.push('uncork') } },
      sendData: () => { calls.push('send'); throw new Error('boom') }
    }
    corkSends(fake as unknown as MultiaddrConnection)
    expect(() => { fake.sendData() }).toThrow('boom')
    expect(calls).toEqual(['cork', 'send', 'uncork'])
  })
})
