import '../node/polyfill.ts'
import { createServer, type Server, type Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLibp2p, type Libp2p } from 'libp2p'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import type { Stream } from '@libp2p/interface'
import { multiaddr } from '@multiformats/multiaddr'
import { Uint8ArrayList } from 'uint8arraylist'
import {
  clusterNameOfPeer,
  InvalidWanConfigError,
  Pipe,
  wanInitFromTopology,
  WanEmulator,
  type Chunk,
  type PipeInit
} from '../node/wan/index.ts'

/* ---------------------------------------------------------------- helpers */

const ONE_WAY_MS = 20
const RTT_MS = 2 * ONE_WAY_MS
const RATE = 4_000_000
const ECHO = '/test/echo/1'
const SINK = '/test/sink/1'

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    p,
    new Promise<undefined>(resolve => { timer = setTimeout(() => { resolve(undefined) }, ms) })
  ]).finally(() => { clearTimeout(timer) })
}

/** Stops nodes with a bounded wait: stop() can hang. */
async function stopAll(nodes: readonly Libp2p[]): Promise<void> {
  await withTimeout(Promise.allSettled(nodes.map(n => n.stop())), 5000)
}

async function createNode(wan: WanEmulator, cluster: string): Promise<Libp2p> {
  const node = await createLibp2p({
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [wan.transport()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionManager: { inboundConnectionThreshold: 1000, maxIncomingPendingConnections: 1000 },
    connectionMonitor: { enabled: false }
  })
  wan.assign(node.peerId.toString(), cluster)
  await node.handle(ECHO, (stream: Stream) => {
    stream.addEventListener('message', evt => { stream.send(evt.data) })
    stream.addEventListener('remoteCloseWrite', () => { void stream.close().catch(() => {}) })
  })
  await node.handle(SINK, (stream: Stream) => {
    let received = 0
    stream.addEventListener('message', evt => { received += evt.data.byteLength })
    stream.addEventListener('remoteCloseWrite', () => {
      const ack = new Uint8Array(4)
      new DataView(ack.buffer).setUint32(0, received)
      stream.send(ack)
      void stream.close().catch(() => {})
    })
  })
  return node
}

function addrOf(node: Libp2p) {
  const ma = node.getMultiaddrs()[0]
  if (ma === undefined) throw new Error('node has no address')
  return ma
}

/** Median round-trip time of `count` 1-byte ping-pongs over one stream from `a` to `b`. */
async function pingPong(a: Libp2p, b: Libp2p, count: number): Promise<number[]> {
  const stream = await a.dialProtocol(addrOf(b), ECHO)
  const rtts: number[] = []
  for (let i = 0; i < count; i++) {
    const echoed = new Promise<void>(resolve => { stream.addEventListener('message', () => { resolve() }, { once: true }) })
    const t0 = performance.now()
    stream.send(new Uint8Array([i]))
    await echoed
    rtts.push(performance.now() - t0)
  }
  await stream.close()
  return rtts.sort((x, y) => x - y)
}

/** A stream from `a` to `b`'s sink; `send(bytes)` resolves with the ms until `b` acknowledged them all. */
async function openSink(a: Libp2p, b: Libp2p): Promise<{ send: (bytes: number) => Promise<number> }> {
  const stream = await a.dialProtocol(addrOf(b), SINK)
  const ack = new Promise<number>((resolve, reject) => {
    const got = new Uint8ArrayList()
    stream.addEventListener('message', evt => {
      got.append(evt.data)
      if (got.byteLength >= 4) resolve(got.getUint32(0))
    })
    stream.addEventListener('close', () => { reject(new Error('stream closed before the ack')) })
  })
  const send = async (bytes: number): Promise<number> => {
    const t0 = performance.now()
    const chunk = new Uint8Array(64 * 1024)
    for (let sent = 0; sent < bytes; sent += chunk.byteLength) {
      if (!stream.send(chunk.subarray(0, Math.min(chunk.byteLength, bytes - sent)))) {
        await new Promise<void>((resolve, reject) => {
          stream.addEventListener('drain', () => { resolve() }, { once: true })
          stream.addEventListener('close', () => { reject(new Error('stream closed while waiting for drain')) }, { once: true })
        })
      }
    }
    await stream.close()
    expect(await ack).toBe(bytes)
    return performance.now() - t0
  }
  return { send }
}

/** Sends `bytes` from `a` to `b` on a new stream; resolves with the ms until `b` acknowledged them all. */
async function transfer(a: Libp2p, b: Libp2p, bytes: number): Promise<number> {
  return (await openSink(a, b)).send(bytes)
}

const testPipe = (init: Partial<PipeInit>): Pipe => new Pipe({
  from: 'x',
  to: 'y',
  delayMs: 0,
  rateBytesPerSec: Infinity,
  quantumBytes: 16 * 1024,
  backlogHighWaterBytes: 1024 * 1024,
  maxInFlightBytes: 16 * 1024 * 1024,
  ...init
})

/* ---------------------------------------------------------------- configuration */

describe('WanEmulator configuration', () => {
  const bad: Array<[string, () => unknown]> = [
    ['no clusters', () => new WanEmulator({ clusters: [] })],
    ['duplicate cluster', () => new WanEmulator({ clusters: ['a', 'a'] })],
    ['empty cluster name', () => new WanEmulator({ clusters: [''] })],
    ['negative inter delay', () => new WanEmulator({ clusters: ['a', 'b'], interDelayMs: -1 })],
    ['NaN inter delay', () => new WanEmulator({ clusters: ['a', 'b'], interDelayMs: NaN })],
    ['infinite delay', () => new WanEmulator({ clusters: ['a', 'b'], interDelayMs: Infinity })],
    ['negative intra delay', () => new WanEmulator({ clusters: ['a'], intraDelayMs: -0.5 })],
    ['zero rate', () => new WanEmulator({ clusters: ['a', 'b'], wanRateBytesPerSec: 0 })],
    ['negative rate', () => new WanEmulator({ clusters: ['a', 'b'], wanRateBytesPerSec: -5 })],
    ['unknown cluster in a delay matrix', () => new WanEmulator({ clusters: ['a', 'b'], interDelayMs: { a: { c: 1 } } })],
    ['unknown cluster in a rate matrix row', () => new WanEmulator({ clusters: ['a', 'b'], wanRateBytesPerSec: { c: { a: 1 } } })],
    ['missing matrix entry', () => new WanEmulator({ clusters: ['a', 'b', 'c'], interDelayMs: { a: { b: 1 } } })],
    ['unknown cluster in intra delays', () => new WanEmulator({ clusters: ['a'], intraDelayMs: { z: 1 } })],
    ['bad value from a function', () => new WanEmulator({ clusters: ['a', 'b'], interDelayMs: () => -3 })],
    ['zero quantum', () => new WanEmulator({ clusters: ['a'], roundRobinQuantumBytes: 0 })],
    ['zero backlog', () => new WanEmulator({ clusters: ['a'], backlogHighWaterBytes: 0 })],
    ['negative in-flight bound', () => new WanEmulator({ clusters: ['a'], maxInFlightBytes: -1 })],
    ['a polling share above 1', () => new WanEmulator({ clusters: ['a'], pollBudgetShare: 2 })],
    ['assigning to an unknown cluster', () => new WanEmulator({ clusters: ['a'] }).assign('peer', 'b')],
    ['a bad topology option', () => wanInitFromTopology({ clusters: [{ name: 'a', peers: 1 }] }, { minIntraRttMs: -1 })]
  ]
  for (const [what, make] of bad) {
    it(`rejects ${what}`, () => {
      expect(make).toThrow(InvalidWanConfigError)
      try {
        make()
      } catch (err) {
        expect((err as Error).name).toBe('InvalidWanConfigError')
      }
    })
  }

  it('resolves one number, a matrix (either direction) and a function per ordered pair', () => {
    const wan = new WanEmulator({
      clusters: ['eu', 'us', 'asia'],
      interDelayMs: { eu: { us: 40, asia: 80 }, asia: { us: 60 }, us: { eu: 45 } },
      intraDelayMs: { eu: 1 },
      wanRateBytesPerSec: (from, to) => from === 'eu' ? 1e6 : to === 'eu' ? 2e6 : Infinity
    })
    expect(wan.delayMs('eu', 'us')).toBe(40)
    expect(wan.delayMs('us', 'eu')).toBe(45)
    expect(wan.delayMs('us', 'asia')).toBe(60)
    expect(wan.delayMs('asia', 'eu')).toBe(80)
    expect(wan.delayMs('eu', 'eu')).toBe(1)
    expect(wan.delayMs('us', 'us')).toBe(0)
    expect(wan.rttMs('eu', 'us')).toBe(85)
    expect(wan.rateBytesPerSec('eu', 'asia')).toBe(1e6)
    expect(wan.rateBytesPerSec('us', 'eu')).toBe(2e6)
    expect(wan.rateBytesPerSec('us', 'asia')).toBe(Infinity)
    expect(wan.rateBytesPerSec('eu', 'eu')).toBe(Infinity)
    expect(wan.stats()).toHaveLength(9)
  })

  it('shapes only peers assigned to clusters, and nothing when there is nothing to emulate', () => {
    const wan = new WanEmulator({ clusters: ['a', 'b'], interDelayMs: 10 })
    wan.assign('p1', 'a')
    wan.assign('p2', 'a')
    wan.assign('p3', 'b')
    expect(wan.clusterOf('p3')).toBe('b')
    expect(wan.route('p1', 'p3')?.connectDelayMs).toBe(20)
    expect(wan.route('p1', 'p2')).toBeUndefined() // intra delay 0: unshaped
    expect(wan.route('p1', 'unknown')).toBeUndefined()
    wan.unassign('p3')
    expect(wan.route('p1', 'p3')).toBeUndefined()
    const noConnectDelay = new WanEmulator({ clusters: ['a', 'b'], interDelayMs: 10, connectDelay: false })
    noConnectDelay.assign('p1', 'a')
    noConnectDelay.assign('p3', 'b')
    expect(noConnectDelay.route('p1', 'p3')?.connectDelayMs).toBe(0)
  })

  it('builds the init from a simulator topology (one-way delay = RTT / 2)', () => {
    const topology = {
      clusters: [{ name: 'eu', peers: 2 }, { name: 'us', peers: 3 }],
      intraRttMs: [4, 0.3],
      interRttMs: 80,
      wanLinkBytesPerSec: [[0, 5e6], [5e6, 0]]
    }
    const wan = WanEmulator.fromTopology(topology)
    expect(wan.clusters).toEqual(['eu', 'us'])
    expect(wan.delayMs('eu', 'us')).toBe(40)
    expect(wan.delayMs('eu', 'eu')).toBe(2)
    expect(wan.delayMs('us', 'us')).toBe(0) // 0.3 ms is below the default floor of 1 ms
    expect(wan.rateBytesPerSec('us', 'eu')).toBe(5e6)
    expect(wanInitFromTopology(topology, { minIntraRttMs: 0 }).intraDelayMs).toEqual({ eu: 2, us: 0.15 })
    expect([0, 1, 2, 3, 4].map(i => clusterNameOfPeer(topology, i))).toEqual(['eu', 'eu', 'us', 'us', 'us'])
    expect(() => clusterNameOfPeer(topology, 5)).toThrow(RangeError)
  })
})

/* ---------------------------------------------------------------- one pipe, no libp2p */

describe('Pipe', () => {
  it('delays by the propagation delay and serialises at the rate', async () => {
    const pipe = testPipe({ delayMs: 10, rateBytesPerSec: 1_000_000 })
    let received = 0
    const t0 = performance.now()
    let done = 0
    const flow = pipe.open({
      deliver: (d: Chunk) => {
        received += d.byteLength
        if (received === 50_000) done = performance.now() - t0
      },
      onDrain: () => {}
    })
    flow.push(new Uint8Array(50_000))
    await flow.whenIdle()
    expect(received).toBe(50_000)
    expect(done).toBeGreaterThanOrEqual(10 + 50) // 10 ms delay + 50 kB at 1 MB/s
    expect(pipe.stats().bytesCarried).toBe(50_000)
  })

  it('shares the link between flows in round-robin and finishes them together', async () => {
    const pipe = testPipe({ delayMs: 1, rateBytesPerSec: 2_000_000, quantumBytes: 8 * 1024 })
    const finished: number[] = []
    const t0 = performance.now()
    const flows = [0, 1].map(() => {
      let got = 0
      return pipe.open({
        deliver: d => {
          got += d.byteLength
          if (got === 100_000) finished.push(performance.now() - t0)
        },
        onDrain: () => {}
      })
    })
    for (const f of flows) f.push(new Uint8Array(100_000))
    expect(pipe.stats().connections).toBe(2)
    await Promise.all(flows.map(f => f.whenIdle()))
    // 200 kB at 2 MB/s: both end after >= 100 ms; with round-robin neither ends near 50 ms
    expect(Math.min(...finished)).toBeGreaterThanOrEqual(90)
    for (const f of flows) f.destroy()
    expect(pipe.stats().connections).toBe(0)
  })

  it('applies backpressure past the backlog high-water mark and drains at half', async () => {
    const pipe = testPipe({ delayMs: 0, rateBytesPerSec: 1_000_000, backlogHighWaterBytes: 20_000, quantumBytes: 1024 })
    let drained = false
    const flow = pipe.open({ deliver: () => {}, onDrain: () => { drained = true } })
    expect(flow.push(new Uint8Array(15_000))).toBe(true)
    expect(flow.push(new Uint8Array(15_000))).toBe(false)
    expect(pipe.stats().backlogBytes).toBeGreaterThan(0)
    await flow.whenIdle()
    expect(drained).toBe(true)
    expect(pipe.stats().peakBacklogBytes).toBeGreaterThan(20_000)
  })
})

/* ---------------------------------------------------------------- real libp2p nodes */

describe('WanEmulator with libp2p (TCP + Noise + Yamux)', () => {
  // a1, a2 in cluster A; b1, b2 in cluster B; 20 ms one way between them, 4 MB/s each way
  const wan = new WanEmulator({ clusters: ['A', 'B'], interDelayMs: ONE_WAY_MS, wanRateBytesPerSec: RATE })
  let nodes: Libp2p[] = []
  let a1: Libp2p, a2: Libp2p, b1: Libp2p, b2: Libp2p

  beforeAll(async () => {
    nodes = await Promise.all([createNode(wan, 'A'), createNode(wan, 'A'), createNode(wan, 'B'), createNode(wan, 'B')])
    ;[a1, a2, b1, b2] = nodes as [Libp2p, Libp2p, Libp2p, Libp2p]
  })

  afterAll(async () => {
    await stopAll(nodes)
  })

  it('delays the dial between clusters by at least the connect RTT plus a handshake round trip', async () => {
    const t0 = performance.now()
    await a1.dial(addrOf(b1))
    const interDialMs = performance.now() - t0
    expect(interDialMs).toBeGreaterThanOrEqual(2 * RTT_MS)
  })

  it('adds the RTT to a ping-pong between clusters and nothing within a cluster', async () => {
    const inter = await pingPong(a1, b1, 8)
    const interReverse = await pingPong(b1, a1, 4) // b1 reuses the connection a1 dialed
    const intra = await pingPong(a1, a2, 8)
    expect(inter[0]).toBeGreaterThanOrEqual(RTT_MS)
    expect(interReverse[0]).toBeGreaterThanOrEqual(RTT_MS)
    const median = (xs: number[]): number => xs[xs.length >> 1] as number
    expect(median(intra)).toBeLessThan(inter[0] as number)
  })

  it('caps the throughput of a transfer at the link rate', async () => {
    const bytes = 2_000_000
    const before = wan.linkStats('A', 'B').bytesCarried
    const ms = await transfer(a1, b1, bytes)
    expect(ms).toBeGreaterThanOrEqual(0.9 * bytes / RATE * 1000)
    expect(wan.linkStats('A', 'B').bytesCarried - before).toBeGreaterThanOrEqual(bytes)
  })

  it('caps the reverse direction too (data from the listener, shaped by the dialer)', async () => {
    const bytes = 1_000_000
    const ms = await transfer(b1, a1, bytes) // over the connection a1 dialed
    expect(ms).toBeGreaterThanOrEqual(0.9 * bytes / RATE * 1000)
  })

  it('shares one wide-area link between connections crossing it', async () => {
    const bytes = 2_000_000
    const sinks = await Promise.all([openSink(a1, b1), openSink(a2, b2)]) // a2 -> b2: a new connection
    const t0 = performance.now()
    const times = await Promise.all(sinks.map(sink => sink.send(bytes)))
    const totalMs = performance.now() - t0
    expect(totalMs).toBeGreaterThanOrEqual(0.9 * 2 * bytes / RATE * 1000)
    // round-robin: each takes about as long as both together, i.e. twice as long as alone
    expect(Math.min(...times)).toBeGreaterThanOrEqual(0.8 * 2 * bytes / RATE * 1000)
    const link = wan.linkStats('A', 'B')
    expect(link.connections).toBe(2) // a1 -> b1 and a2 -> b2
    // bounded: each connection's backlog stops at 50 ms of the rate (200 kB) plus one write
    expect(link.peakBacklogBytes).toBeLessThanOrEqual(2 * (0.05 * RATE + 128 * 1024))
    expect(link.backlogBytes).toBe(0)
  })

  it('delays the TCP connect itself by one RTT', async () => {
    const server: Server = createServer()
    const accepted = new Promise<number>(resolve => {
      server.once('connection', (socket: Socket) => {
        resolve(performance.now())
        socket.destroy()
      })
    })
    await new Promise<void>(resolve => { server.listen(0, '127.0.0.1', resolve) })
    try {
      const port = (server.address() as { port: number }).port
      const fake = peerIdFromPrivateKey(await generateKeyPair('Ed25519'))
      wan.assign(fake.toString(), 'B')
      const t0 = performance.now()
      await a2.dial(multiaddr(`/ip4/127.0.0.1/tcp/${port}/p2p/${fake.toString()}`), { signal: AbortSignal.timeout(5000) })
        .catch(() => undefined) // not a libp2p peer: the upgrade fails, the connect is what we time
      expect(await accepted - t0).toBeGreaterThanOrEqual(RTT_MS)
    } finally {
      await withTimeout(new Promise(resolve => { server.close(resolve) }), 2000)
    }
  })
})
