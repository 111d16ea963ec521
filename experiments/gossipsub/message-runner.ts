/**
 * Sends one message with one system from one root and waits until every other peer has it,
 * or until it stalls (no new arrival and no new traffic of that system for `stallMs`), then
 * until the emulated links are idle again. Failures (a publish that throws, a message that
 * never arrives) are outcomes, never exceptions.
 */
import { performance } from 'node:perf_hooks'
import { TOPIC, type Plan } from './config.ts'
import { taggedPayload, type ArrivalRecorder, type System } from './arrivals.ts'
import { linksIdle, treeShapeOf, type Hosts, type Peer } from './hosts.ts'
import type { Traffic } from './traffic-counter.ts'

/** What happened to one message. */
export interface MessageOutcome {
  system: System
  bytes: number
  seq: number
  root: number
  /** performance.now() at the publish call. */
  startedAt: number
  /** The system's traffic counter at the publish call (the window ends at its next message). */
  trafficAtStart: Traffic
  /** ms after the publish call at which each non-root peer first had it (null: never). */
  arrivalsMs: Array<number | null>
  delivered: number
  expected: number
  /** Time until every non-root peer had it; null when some never did. */
  completionMs: number | null
  /** treecast: the root's 'broadcast-done' (every acknowledgement back), ms after the call. */
  doneAtRootMs: number | null
  /** gossipsub: peers `publish` said it sent to. */
  publishRecipients: number | null
  /** The error a publish threw or rejected with. */
  publishError: string | null
  stalled: boolean
  /** Deliveries to the application beyond the first per peer. */
  duplicates: number
  /** treecast: the tree the broadcast used (below the 256 KiB switch point the latency tree) and its shape when sent. */
  tree: { kind: 'lat' | 'bw', depth: number | null, wanEdges: number, rootChildren: number } | null
}

/** New traffic of the system that counts as progress of a message (more than IHAVE gossip). */
const PROGRESS_BYTES = 64 * 1024

/** treecast's default switch point between its latency and bandwidth trees. */
const SWITCH_POINT_BYTES = 256 * 1024

const sleep = async (ms: number): Promise<void> => { await new Promise<void>((resolve) => { setTimeout(resolve, ms) }) }

/** Starts the message; resolves when the system's send call has returned (or failed). */
function publish (system: System, root: Peer, payload: Uint8Array, out: MessageOutcome): { settled: Promise<void>, done: Promise<void> } {
  const fail = (err: unknown): void => { out.publishError = err instanceof Error ? `${err.name}: ${err.message}` : String(err) }
  if (system === 'treecast') {
    try {
      const h = root.treecast.startBroadcast(payload)
      const done = h.done.then(() => { out.doneAtRootMs = performance.now() - out.startedAt }, fail)
      return { settled: h.sent.catch(fail), done }
    } catch (err) {
      fail(err)
      return { settled: Promise.resolve(), done: Promise.resolve() }
    }
  }
  const settled = root.pubsub.publish(TOPIC, payload).then((r) => { out.publishRecipients = r.recipients.length }, fail)
  return { settled, done: settled }
}

/**
 * Sends message `seq` of `bytes` with `system` from peer `rootIndex` and measures it;
 * `backgroundBytesPerMs` is the system's idle traffic (not progress).
 */
export async function runMessage (hosts: Hosts, recorder: ArrivalRecorder, plan: Plan, system: System, bytes: number, seq: number, rootIndex: number, backgroundBytesPerMs = 0): Promise<MessageOutcome> {
  const { peers, counter, emulator } = hosts
  const root = peers[rootIndex] as Peer
  const payload = taggedPayload(bytes, seq)
  const arrivals = recorder.get(system, seq)
  const expected = peers.length - 1
  const received = (): number => [...arrivals.at.keys()].filter((i) => i !== rootIndex).length
  const out: MessageOutcome = {
    system, bytes, seq, root: rootIndex, startedAt: performance.now(), trafficAtStart: counter.of(system),
    arrivalsMs: [], delivered: 0, expected, completionMs: null, doneAtRootMs: null,
    publishRecipients: null, publishError: null, stalled: false, duplicates: 0, tree: null
  }
  if (system === 'treecast') {
    const kind = bytes >= SWITCH_POINT_BYTES ? 'bw' : 'lat'
    out.tree = { kind, ...treeShapeOf(hosts, kind, rootIndex) }
  }
  out.startedAt = performance.now()
  const { done } = publish(system, root, payload, out)

  // Wait for every non-root peer, or a stall, or the hard limit.
  let lastProgress = performance.now()
  let lastCount = 0
  let lastBytes = counter.of(system).bytes
  let wake: (() => void) | undefined
  recorder.onArrival(() => { wake?.() })
  try {
    while (received() < expected && out.publishError === null) {
      await new Promise<void>((resolve) => { wake = resolve; setTimeout(resolve, 50) })
      const now = performance.now()
      const count = received()
      const sent = counter.of(system).bytes
      // Progress: a new arrival, or a transfer under way beyond the system's idle traffic
      // (gossip of message ids alone is not; steady probes are idle traffic).
      const idle = backgroundBytesPerMs * (now - lastProgress)
      if (count !== lastCount || sent - lastBytes - idle > PROGRESS_BYTES) { lastProgress = now; lastCount = count; lastBytes = sent }
      if (now - lastProgress > plan.stallMs || now - out.startedAt > plan.maxMessageMs) { out.stalled = true; break }
    }
  } finally {
    recorder.onArrival(undefined)
  }

  // treecast: the acknowledgements (bounded); both: links idle, then a pause.
  if (system === 'treecast' && !out.stalled) await Promise.race([done, sleep(plan.stallMs)])
  const idleBy = performance.now() + plan.stallMs
  while (performance.now() < idleBy) {
    if (linksIdle(emulator)) { await sleep(20); if (linksIdle(emulator)) break }
    await sleep(20)
  }
  await sleep(plan.gapMs)

  for (const p of peers) {
    if (p.index === rootIndex) continue
    const t = arrivals.at.get(p.index)
    out.arrivalsMs.push(t === undefined ? null : t - out.startedAt)
  }
  out.delivered = received()
  out.duplicates = arrivals.duplicates
  const times = out.arrivalsMs.filter((x): x is number => x !== null)
  out.completionMs = out.delivered === expected ? Math.max(...times) : null
  return out
}
