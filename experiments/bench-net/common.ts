/** bench-net: paths, small helpers, the steady-probing setting and the Options type. */
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { generateKeyPair } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { Rng } from '../sim/rng.ts'

export const MiB = 1024 * 1024
/** bench-net-peer.ts, the entry script (child processes re-run it) and the repository root. */
export const PEER_SCRIPT = fileURLToPath(new URL('../bench-net-peer.ts', import.meta.url))
export const SELF_SCRIPT = fileURLToPath(new URL('../bench-net.ts', import.meta.url))
export const REPO = fileURLToPath(new URL('../..', import.meta.url))

// ---- small helpers ----------------------------------------------------------------------

export const log = (line: string): void => { process.stderr.write(`bench-net: ${line}\n`) }
export const sleep = async (ms: number): Promise<void> => { await new Promise<void>((resolve) => { setTimeout(resolve, ms) }) }

export function median (xs: readonly number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (s.length === 0) return NaN
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m] as number : ((s[m - 1] as number) + (s[m] as number)) / 2
}

export async function withTimeout<T> (p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([p, new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`timed out after ${ms} ms: ${what}`)) }, ms) })])
  } finally { clearTimeout(timer) }
}

/** mulberry32: a seeded source for the broadcast roots. */
export function rng (seed: number): () => number {
  const r = new Rng(seed)
  return () => r.next()
}

/**
 * Waits until `probing()` is false at two polls `settleMs` apart (probing can restart on a
 * late fact), at most `timeoutMs`. Returns the time waited, or NaN on timeout.
 */
export async function waitQuiet (probing: () => boolean | Promise<boolean>, timeoutMs: number, settleMs = 300): Promise<number> {
  const t0 = performance.now()
  while (performance.now() - t0 < timeoutMs) {
    if (!await probing()) {
      await sleep(settleMs)
      if (!await probing()) return performance.now() - t0
    }
    await sleep(50)
  }
  return NaN
}

export async function stopAll (nodes: ReadonlyArray<{ stop: () => void | Promise<void> }>): Promise<void> {
  await withTimeout(Promise.allSettled(nodes.map(async (n) => { await n.stop() })), 20_000, 'teardown').catch((err: unknown) => { log(String(err)) })
}

export async function keysAndIds (n: number): Promise<Array<{ key: PrivateKey, peerId: string }>> {
  return await Promise.all(Array.from({ length: n }, async () => {
    const key = await generateKeyPair('Ed25519')
    return { key, peerId: peerIdFromPrivateKey(key).toString() }
  }))
}

export const mbps = (bytes: number, ms: number): number => bytes / 1e6 / (ms / 1000)

/** The steady-probing setting, as shown in the tables. */
export function steadyLabel (ms: number): string {
  return Number.isNaN(ms) ? ", node's default steady probes" : ms === 0 ? ', no steady probes' : `, steady probes every ${ms} ms`
}

/** `core` options of createTreecast for the steady-probing setting (NaN: the node's default). */
export function steadyCore (ms: number): { core?: { steadyProbeIntervalMs: number } } {
  return Number.isNaN(ms) ? {} : { core: { steadyProbeIntervalMs: ms } }
}

export function gc (): void {
  const g = (globalThis as { gc?: () => void }).gc
  if (g !== undefined) { g(); g() }
}

export interface Options {
  reps: number
  mb: number
  capMBps: number
  vnodes: number
  chainAttempts: number
  procs: boolean
  nodes: number
  broadcasts: number
  vnodesPerPeer: number
  wanDelayMs: number
  heartbeatMs: number
  /** NaN: the node's default */
  steadyProbeMs: number
  pingEdges: number
  pings: number
  stableTimeoutMs: number
  memNodes: number[]
  meshNodes: number
  memSettleMs: number
  seed: number
  json: boolean
}
