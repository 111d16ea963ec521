/**
 * Helpers of `experiments/bench-net.ts` (plain libp2p hosts with the same stack as
 * createTreecast, a byte sink, a relay, a ping echo, the chain's emulated network), and,
 * run as a script, one peer of the multi-process chain benchmark driven over stdio:
 *
 *   node --import ./bin/ts-loader.mjs experiments/bench-net-peer.ts raw
 *   node --import ./bin/ts-loader.mjs experiments/bench-net-peer.ts peer '{"cluster":"B","capBytesPerSec":1000000,"vnodes":16,"steadyProbeMs":0}'
 *
 * Commands arrive on stdin, one JSON object per line, each with a `req` echoed in the
 * answer; answers and events leave on stdout, one JSON object per line.
 * - raw:  {"ev":"ready","addr"} at start; {"cmd":"send","addr","bytes"} -> {"ev":"sent","ms"}
 * - peer: {"ev":"ready","id","peerId"} at start;
 *         {"cmd":"setup","assign":[[peerId,cluster]...],"founders":[id...]} -> {"ev":"ok"};
 *         {"cmd":"status","root"} -> {"ev":"status","probing","bwParent","connections"};
 *         {"cmd":"broadcast","bytes","mode"} -> {"ev":"done","ms"}
 * - both: {"cmd":"cpu"} -> {"ev":"cpu","cpuMs","wallMs"} (this process's CPU time so far)
 * - both: {"cmd":"exit"} -> exits; a closed stdin exits too, so no peer outlives the bench.
 */
import '../node/polyfill.ts'
import { createInterface } from 'node:readline'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { generateKeyPair } from '@libp2p/crypto/keys'
import type { PeerId, Stream } from '@libp2p/interface'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { tcp } from '@libp2p/tcp'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import { createTreecast, type TreecastNode } from '../node/create-treecast.ts'
import { halfWindowYamux } from '../node/half-window-yamux.ts'
import { quietNoise } from '../node/quiet-noise.ts'
import { installLibp2pGuard } from '../node/libp2p-guard.ts'
import type { WanEmulatorInit } from '../node/wan/config.ts'
import { WanEmulator } from '../node/wan/wan-emulator.ts'

export const SINK = '/bench/sink/1.0.0'
export const RELAY = '/bench/relay/1.0.0'
export const PING = '/bench/ping/1.0.0'
/** Write size of the raw senders (the brief: 64 KB writes, as treecast's chunks). */
export const WRITE_BYTES = 64 * 1024
/** Yamux's largest stream window in createTreecast (`maxStreamWindowBytes`'s default). */
export const MAX_STREAM_WINDOW_BYTES = 2 * 1024 * 1024
/** The chain's clusters, one peer each: links A-B, B-C, C-D are unshaped, the others capped. */
export const CHAIN = ['A', 'B', 'C', 'D'] as const

/**
 * The chain's network: every pair of clusters capped at `capBytesPerSec` except neighbours
 * in {@link CHAIN}, which get rate Infinity and delay 0. The emulator leaves such fully
 * transparent pairs unshaped (plain TCP: `route()` returns undefined), so they cost nothing.
 */
export function chainWanInit (capBytesPerSec: number): WanEmulatorInit {
  const pos = (c: string): number => (CHAIN as readonly string[]).indexOf(c)
  return {
    clusters: [...CHAIN],
    interDelayMs: 0,
    wanRateBytesPerSec: (from, to) => Math.abs(pos(from) - pos(to)) === 1 ? Infinity : capBytesPerSec
  }
}

/** A plain libp2p host with createTreecast's stack (TCP, Noise, Yamux 2 MiB window, no monitor). */
export async function createRawNode (): Promise<Libp2p> {
  const node = await createLibp2p({
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [quietNoise()],
    streamMuxers: [halfWindowYamux({ streamOptions: { maxStreamWindowSize: MAX_STREAM_WINDOW_BYTES } })],
    connectionManager: { maxConnections: 256, inboundConnectionThreshold: 10_000, maxIncomingPendingConnections: 256 },
    connectionMonitor: { enabled: false }
  })
  await node.handle(SINK, sinkHandler)
  await node.handle(PING, echoHandler)
  return node
}

/** Counts the bytes of the stream; when the sender half-closes, answers the count (8 bytes) and closes. */
export function sinkHandler (stream: Stream): void {
  let got = 0
  stream.addEventListener('message', (e) => { got += e.data.byteLength })
  stream.addEventListener('remoteCloseWrite', () => {
    const ack = new Uint8Array(8)
    new DataView(ack.buffer).setFloat64(0, got)
    stream.send(ack)
    void stream.close().catch(() => {})
  })
}

/** Echoes every message (a 1-byte ping-pong). */
export function echoHandler (stream: Stream): void {
  stream.addEventListener('message', (e) => { stream.send(e.data) })
  stream.addEventListener('remoteCloseWrite', () => { void stream.close().catch(() => {}) })
}

/** Resolves at the next 'drain' of `stream`; rejects if it closes first. */
export async function drained (stream: Stream): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const onDrain = (): void => { stream.removeEventListener('close', onClose); resolve() }
    const onClose = (): void => { stream.removeEventListener('drain', onDrain); reject(new Error('stream closed while waiting for drain')) }
    stream.addEventListener('drain', onDrain, { once: true })
    stream.addEventListener('close', onClose, { once: true })
  })
}

/** The next message on `stream` (as bytes). */
export async function nextMessage (stream: Stream): Promise<Uint8Array> {
  return await new Promise<Uint8Array>((resolve, reject) => {
    const onMessage = (e: { data: Uint8Array | { subarray: () => Uint8Array } }): void => {
      stream.removeEventListener('close', onClose)
      resolve(e.data instanceof Uint8Array ? e.data : e.data.subarray())
    }
    const onClose = (): void => { stream.removeEventListener('message', onMessage); reject(new Error('stream closed before a message')) }
    stream.addEventListener('message', onMessage, { once: true })
    stream.addEventListener('close', onClose, { once: true })
  })
}

/**
 * Sends `bytes` in {@link WRITE_BYTES} writes on `stream`, waiting for 'drain' while
 * `writableNeedsDrain` (never `onDrain()`: it blocks only once), then half-closes and waits
 * for the receiver's count. Returns the count.
 */
export async function sendAndWaitAck (stream: Stream, bytes: number): Promise<number> {
  const ack = nextMessage(stream)
  const chunk = new Uint8Array(WRITE_BYTES).fill(7)
  for (let sent = 0; sent < bytes; sent += chunk.byteLength) {
    stream.send(sent + chunk.byteLength <= bytes ? chunk : chunk.subarray(0, bytes - sent))
    while (stream.writableNeedsDrain) await drained(stream)
  }
  await stream.close()
  const a = await ack
  return new DataView(a.buffer, a.byteOffset, a.byteLength).getFloat64(0)
}

/** One stream from `from` to `to` (a connection is opened first, untimed): `bytes` through it, ms. */
export async function rawTransferMs (from: Libp2p, to: PeerId | Multiaddr, bytes: number, protocol = SINK): Promise<number> {
  await from.dial(to)
  const t0 = performance.now()
  const stream = await from.dialProtocol(to, protocol)
  const got = await sendAndWaitAck(stream, bytes)
  const ms = performance.now() - t0
  if (got !== bytes) throw new Error(`the sink counted ${got} bytes of ${bytes}`)
  return ms
}

/**
 * Makes `node` a relay: a stream opened to it with {@link RELAY} is forwarded byte for byte
 * on a new stream to `next` with `nextProtocol`, with backpressure (the inbound stream is
 * paused while the outbound one needs draining), and the answer comes back the same way.
 */
export async function makeRelay (node: Libp2p, next: Multiaddr, nextProtocol: string): Promise<void> {
  await node.handle(RELAY, (stream: Stream) => {
    let out: Stream | undefined
    let paused = false
    let resuming = false
    let ended = false
    const pending: Array<Uint8Array | { subarray: () => Uint8Array }> = []
    // Pausing is pointless (and throws) once the sender has finished.
    const pause = (): void => {
      if (ended || stream.status !== 'open') return
      try { stream.pause(); paused = true } catch { /* closing: nothing more will come */ }
    }
    const resume = (): void => {
      paused = false
      resuming = true
      try { stream.resume() } catch { /* closed: nothing buffered is left to hand over */ }
      resuming = false
    }
    const forward = (data: Uint8Array | { subarray: () => Uint8Array }): void => {
      const o = out as Stream
      o.send(data instanceof Uint8Array ? data : data.subarray())
      // A pause asked for while resume() hands over buffered data would be undone by it.
      if (o.writableNeedsDrain && !paused && !resuming) pause()
    }
    stream.addEventListener('message', (e) => { if (out === undefined) pending.push(e.data); else forward(e.data) })
    // 'end', not 'remoteCloseWrite': the latter can come while data is still buffered (paused).
    stream.addEventListener('end', () => { ended = true; if (out !== undefined) void out.close().catch(() => {}) })
    pause()
    void node.dialProtocol(next, nextProtocol).then((o) => {
      out = o
      o.addEventListener('message', (e) => { stream.send(e.data) })
      o.addEventListener('remoteCloseWrite', () => { void stream.close().catch(() => {}) })
      o.addEventListener('drain', () => {
        if (!paused) return
        resume()
        if (o.writableNeedsDrain) pause()
      })
      for (const d of pending.splice(0)) forward(d)
      if (ended) { void o.close().catch(() => {}); return }
      if (!o.writableNeedsDrain) resume()
    }, (err: unknown) => { stream.abort(err instanceof Error ? err : new Error(String(err))) })
  })
}

// ---- the child process ------------------------------------------------------------------

function emit (ev: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(JSON.stringify({ ev, ...fields }) + '\n')
}

/** CPU time of this process so far, ms, and a wall-clock reading (ms) to compute shares. */
function cpuNow (): { cpuMs: number, wallMs: number } {
  const c = process.cpuUsage()
  return { cpuMs: (c.user + c.system) / 1000, wallMs: performance.now() }
}

/** The peer's argument: its cluster, the chain's cap, the overlay's size, steady probing (undefined: the node's default). */
interface PeerArg { cluster: string, capBytesPerSec: number, vnodes: number, steadyProbeMs?: number }

interface Command { cmd: string, req?: unknown, [key: string]: unknown }

async function runRaw (): Promise<(c: Command) => Promise<void>> {
  const node = await createRawNode()
  emit('ready', { addr: node.getMultiaddrs()[0]?.toString() })
  return async (c) => {
    if (c.cmd === 'cpu') {
      emit('cpu', { req: c.req, ...cpuNow() })
    } else if (c.cmd === 'send') {
      const ms = await rawTransferMs(node, multiaddr(String(c.addr)), Number(c.bytes))
      emit('sent', { req: c.req, ms })
    } else if (c.cmd === 'exit') {
      await node.stop()
      process.exit(0)
    } else throw new Error(`unknown command ${c.cmd}`)
  }
}

async function runPeer (arg: PeerArg): Promise<(c: Command) => Promise<void>> {
  const emulator = new WanEmulator(chainWanInit(arg.capBytesPerSec))
  const privateKey = await generateKeyPair('Ed25519')
  const peerId = peerIdFromPrivateKey(privateKey).toString()
  emulator.assign(peerId, arg.cluster)
  const steady = arg.steadyProbeMs === undefined ? {} : { core: { steadyProbeIntervalMs: arg.steadyProbeMs } }
  const node: TreecastNode = await createTreecast({ privateKey, transport: emulator.transport(), ...steady })
  await node.start()
  emit('ready', { id: node.id, peerId })
  return async (c) => {
    switch (c.cmd) {
      case 'setup':
        for (const [p, cluster] of c.assign as Array<[string, string]>) emulator.assign(p, cluster)
        node.bootstrap(arg.vnodes, c.founders as string[])
        emit('ok', { req: c.req })
        return
      case 'status': {
        const connections = node.libp2p.getConnections().length
        emit('status', { req: c.req, probing: node.overlay.probing, bwParent: node.tree('bw', String(c.root))?.parent ?? null, connections })
        return
      }
      case 'broadcast': {
        const payload = new Uint8Array(Number(c.bytes)).fill(9)
        const t0 = performance.now()
        const h = node.startBroadcast(payload, { mode: c.mode as 'bw' | 'lat' | 'auto' })
        await h.done
        emit('done', { req: c.req, ms: performance.now() - t0 })
        return
      }
      case 'cpu':
        emit('cpu', { req: c.req, ...cpuNow() })
        return
      case 'exit':
        await node.stop()
        process.exit(0)
        return
      default: throw new Error(`unknown command ${c.cmd}`)
    }
  }
}

async function main (): Promise<void> {
  installLibp2pGuard()
  const mode = process.argv[2]
  const handle = mode === 'raw'
    ? await runRaw()
    : mode === 'peer'
      ? await runPeer(JSON.parse(process.argv[3] ?? '{}') as PeerArg)
      : undefined
  if (handle === undefined) throw new Error(`usage: bench-net-peer.ts raw | peer '<json>' (got ${String(mode)})`)
  const rl = createInterface({ input: process.stdin })
  rl.on('line', (line) => {
    const c = JSON.parse(line) as Command
    handle(c).catch((err: unknown) => { emit('error', { req: c.req, message: String(err) }) })
  })
  rl.on('close', () => { process.exit(0) })
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => { console.error(err); process.exit(1) })
}
