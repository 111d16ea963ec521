/**
 * Stripe asks (overlay/stripe-asks.ts): a peer that roots no trees holds a long broadcast
 * for its tree root's cluster entries, then stripes it from itself, or sends it unstriped
 * when no answer comes in time.
 */
import { describe, expect, it } from 'vitest'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { BroadcastPlan } from '../overlay/broadcast-plan.ts'
import type { Message } from '../overlay/messages.ts'
import { MAX_HELD_BROADCASTS, StripeAsks, type StripeAskLimits } from '../overlay/stripe-asks.ts'
import type { StripePlan } from '../overlay/stripes.ts'
import { wireSize } from '../overlay/codec.ts'
import type { BcastTrack } from '../experiments/sim/report.ts'
import { MAX_STREAMS_PER_SENDER, StreamTraffic } from '../experiments/sim/stream-traffic.ts'

const V = 400
const OWN = IntervalSet.range(0, 10)

function harness (limits: Partial<StripeAskLimits> = {}, alive: (p: PeerId) => boolean = () => true) {
  const sent: Array<{ to: PeerId, msg: Message }> = []
  const started: Array<{ now: number, id: string, stripes: StripePlan | undefined }> = []
  const timers: Array<{ at: number, id: string }> = []
  const rejected: string[] = []
  const asks = new StripeAsks({
    self: 'p0',
    send: (to, msg) => sent.push({ to, msg }),
    originate: (now, id, _plan, stripes) => started.push({ now, id, stripes }),
    setTimer: (at, id) => timers.push({ at, id }),
    owned: () => OWN,
    isAlive: alive,
    reject: (r) => rejected.push(r)
  }, { timeoutMs: 100, maxStripes: 8, minBytes: 256 * 1024, ...limits })
  return { asks, sent, started, timers, rejected }
}

function plan (over: Partial<BroadcastPlan> = {}): BroadcastPlan {
  const chunks = Array.from({ length: 64 }, () => new Uint8Array(65536))
  return { chunks, totalBytes: 64 * 65536, mode: 'bw', tree: 'p3', header: IntervalSet.range(0, V), stripes: undefined, ...over }
}

/** Entries of p3's bandwidth tree: three other clusters, 100 virtual nodes each. */
const ENTRIES = [
  { peer: 'p5', reach: IntervalSet.range(100, 200) },
  { peer: 'p6', reach: IntervalSet.range(200, 300) },
  { peer: 'p7', reach: IntervalSet.range(300, 400) }
]

describe('stripe asks', () => {
  it('holds a long broadcast on another root\'s bandwidth tree, asks that root, and stripes it along the answer', () => {
    const h = harness()
    h.asks.start(5, 'p0/0.1', plan())
    expect(h.started).toEqual([])
    expect(h.sent).toEqual([{ to: 'p3', msg: { t: 'entries-req', id: 'p0/0.1' } }])
    expect(h.timers).toEqual([{ at: 105, id: 'p0/0.1' }])
    expect(h.asks.size).toBe(1)
    h.asks.onEntries(6, 'p3', 'p0/0.1', ENTRIES)
    expect(h.asks.size).toBe(0)
    expect(h.started).toHaveLength(1)
    const s = h.started[0]?.stripes as StripePlan
    expect(s.stripes.map((x) => x.to)).toEqual(['p5', 'p6', 'p7'])
    // Its own cluster's part (0..100) goes along the tree; each stripe carries the far parts and relays the others.
    expect(s.local.toString()).toBe(IntervalSet.range(0, 100).toString())
    expect(s.stripes[0]?.header.toString()).toBe(IntervalSet.range(100, 400).toString())
    expect(s.stripes[0]?.relay.map((r) => r.to)).toEqual(['p6', 'p7'])
    // The deadline finds nothing held any more.
    h.asks.onTimeout(105, 'p0/0.1')
    expect(h.started).toHaveLength(1)
  })

  it('entries that make no plan (fewer than two far parts) send it unstriped; an answer from another peer or for nothing held is rejected', () => {
    const h = harness()
    h.asks.start(0, 'a', plan())
    h.asks.onEntries(1, 'p2', 'a', ENTRIES)
    expect(h.rejected).toEqual(['unknown-entries'])
    h.asks.onEntries(1, 'p3', 'b', ENTRIES)
    expect(h.rejected).toEqual(['unknown-entries', 'unknown-entries'])
    expect(h.started).toEqual([])
    h.asks.onEntries(2, 'p3', 'a', ENTRIES.slice(0, 1))
    expect(h.started).toEqual([{ now: 2, id: 'a', stripes: undefined }])
    // This peer as an entry is skipped too (its own cluster's part goes along the tree).
    h.asks.start(3, 'c', plan())
    h.asks.onEntries(4, 'p3', 'c', [{ peer: 'p0', reach: IntervalSet.range(0, 100) }, ENTRIES[0] as typeof ENTRIES[0]])
    expect(h.started[1]).toEqual({ now: 4, id: 'c', stripes: undefined })
  })

  it('no answer in time: unstriped at the deadline; leaving sends every held one at once', () => {
    const h = harness()
    h.asks.start(0, 'a', plan())
    h.asks.start(1, 'b', plan())
    h.asks.onTimeout(100, 'a')
    expect(h.started).toEqual([{ now: 100, id: 'a', stripes: undefined }])
    h.asks.releaseAll(50)
    expect(h.started[1]).toEqual({ now: 50, id: 'b', stripes: undefined })
    expect(h.asks.size).toBe(0)
    h.asks.onEntries(120, 'p3', 'b', ENTRIES)
    expect(h.started).toHaveLength(2)
  })

  it('starts at once what it need not ask about: short, latency tree, its own tree, already striped, asks off, a dead root, too many held', () => {
    const cases: Array<[string, ReturnType<typeof harness>, BroadcastPlan]> = [
      ['short', harness(), plan({ totalBytes: 1000, chunks: [new Uint8Array(1000)] })],
      ['latency tree', harness(), plan({ mode: 'lat' })],
      ['own tree', harness(), plan({ tree: 'p0' })],
      ['already striped', harness(), plan({ stripes: { local: OWN, stripes: [] } })],
      ['timeout 0', harness({ timeoutMs: 0 }), plan()],
      ['stripeMaxCount 1', harness({ maxStripes: 1 }), plan()],
      ['dead tree root', harness({}, (p) => p !== 'p3'), plan()]
    ]
    for (const [what, h, p] of cases) {
      h.asks.start(0, what, p)
      expect(h.started.map((s) => s.id), what).toEqual([what])
      expect(h.sent, what).toEqual([])
    }
    const h = harness()
    for (let i = 0; i < MAX_HELD_BROADCASTS; i++) h.asks.start(0, `h${i}`, plan())
    expect(h.started).toEqual([])
    h.asks.start(0, 'over', plan())
    expect(h.started.map((s) => s.id)).toEqual(['over'])
    expect(h.asks.size).toBe(MAX_HELD_BROADCASTS)
  })
})

describe('the simulator counts a stripe ask in its broadcast (experiments/sim/stream-traffic.ts)', () => {
  it('the question and the answer add to the messages and bytes of the broadcast they name, nothing to others', () => {
    const track = (id: string): BcastTrack => ({ id, root: 'p0001', bytes: 1 << 20, tree: 'bw', startMs: 0, doneAtRootMs: null, fallback: 0, messages: 0, bytesSent: 0, streams: 0, stripes: 1, backToBack: null })
    const b = track('p0001/0.1')
    const other = track('p0002/0.1')
    const traffic = new StreamTraffic(new Map([[b.id, b], [other.id, other]]))
    const req: Message = { t: 'entries-req', id: b.id }
    const rep: Message = { t: 'entries-rep', id: b.id, entries: [] }
    traffic.account(1, 3, req)
    traffic.account(3, 1, rep)
    traffic.account(3, 1, { t: 'entries-rep', id: 'p0009/0.1', entries: [] }) // no such broadcast: ignored
    expect(b.messages).toBe(2)
    expect(b.bytesSent).toBe(wireSize(req) + wireSize(rep))
    expect(other.messages).toBe(0)
  })

  it('chunks and acknowledgements count in the broadcast their stream opened, until the stream ends; a sender\'s streams are bounded', () => {
    const track = (id: string): BcastTrack => ({ id, root: 'p0001', bytes: 1, tree: 'lat', startMs: 0, doneAtRootMs: null, fallback: 0, messages: 0, bytesSent: 0, streams: 0, stripes: 1, backToBack: null })
    const b = track('p0001/0.1')
    const traffic = new StreamTraffic(new Map([[b.id, b]]))
    const open = { id: b.id, origin: 'p0001', mode: 'lat' as const, header: IntervalSet.range(0, 4), chunkCount: 3, totalBytes: 3, fallback: false, hops: 1 }
    const chunk = (stream: number, index: number, withOpen = index === 0): Message => ({ t: 'chunk', stream, index, data: new Uint8Array(1), ...(withOpen ? { open } : {}) })
    traffic.account(1, 2, chunk(7, 0))
    traffic.account(1, 2, chunk(7, 1))
    traffic.account(2, 1, { t: 'ack', stream: 7 }) // early: a chunk is still to come
    traffic.account(1, 2, chunk(7, 2))
    expect(b.messages).toBe(4)
    traffic.account(2, 1, { t: 'ack', stream: 7 }) // the stream ended: nothing of it is left here
    traffic.account(2, 1, { t: 'ack', stream: 8 }) // peer 1 never opened stream 8
    expect(b.messages).toBe(4)
    expect(b.streams).toBe(1)
    // Streams under way at once are bounded per sender: the oldest is forgotten, and counted.
    for (let s = 100; s < 100 + MAX_STREAMS_PER_SENDER; s++) traffic.account(3, 4, chunk(s, 0))
    expect(traffic.forgottenOpen).toBe(0)
    traffic.account(3, 4, chunk(100 + MAX_STREAMS_PER_SENDER, 0))
    expect(traffic.forgottenOpen).toBe(1)
    const before = b.messages
    traffic.account(4, 3, { t: 'ack', stream: 100 }) // forgotten
    traffic.account(4, 3, { t: 'ack', stream: 101 })
    expect(b.messages).toBe(before + 1)
  })
})
