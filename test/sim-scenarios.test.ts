/**
 * Hand-written simulator scenarios (experiments/scenarios/test-*.json), each aimed at one
 * situation: a broadcast on stable trees, a crash in the middle of a long broadcast, a
 * leave during a reduction, a rejoin asking for its old ranges, many more virtual nodes
 * than peers. Every run must keep the invariants and complete its collectives correctly.
 * Replay any of them with `npm run --silent sim -- experiments/scenarios/<file>`.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parseScenario, type Scenario } from '../experiments/sim/scenario.ts'
import { Simulation } from '../experiments/sim/simulation.ts'
import type { BroadcastReport, SimReport } from '../experiments/sim/report.ts'
import { DEFAULT_CHUNK_BYTES, DEFAULT_FAILURE_DETECTION_TIMEOUT_MS, type CoreInit } from '../overlay/config.ts'
import type { ReductionStats } from '../overlay/reduction.ts'
import { initialAssignment } from '../virtual-nodes/assignment.ts'
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'

const SCENARIOS = new URL('../experiments/scenarios/', import.meta.url)
/** Generous bound on a chunk's or acknowledgement's framing (stream header, interval set, ids). */
const MAX_OVERHEAD_PER_MESSAGE = 256

function load (name: string): Scenario {
  return parseScenario(JSON.parse(readFileSync(fileURLToPath(new URL(`${name}.json`, SCENARIOS)), 'utf8')))
}

function replay (name: string): string {
  return `npm run --silent sim -- experiments/scenarios/${name}.json`
}

interface Run { report: SimReport, sim: Simulation }

function run (name: string, core: CoreInit = {}): Run {
  const scenario = load(name)
  const sim = new Simulation({ ...scenario, core: { ...(scenario.core ?? {}), ...core } })
  return { sim, report: sim.run() }
}

/**
 * What the run got wrong, as readable lines (empty: nothing). Checks the invariants and
 * that every collective completed, exactly once and correctly.
 */
function problems (r: SimReport): string[] {
  const t = r.totals
  const out: string[] = r.violations.map((v) => `violation: ${v}`)
  if (t.lostDeliveries !== 0) out.push(`${t.lostDeliveries} lost deliveries`)
  if (t.duplicates !== 0) out.push(`${t.duplicates} duplicate deliveries`)
  if (t.broadcastsComplete !== t.broadcasts) out.push(`${t.broadcasts - t.broadcastsComplete} of ${t.broadcasts} broadcasts incomplete`)
  if (t.reductionsWrong !== 0) out.push(`${t.reductionsWrong} reductions wrong`)
  if (t.reductionsIncomplete !== 0) out.push(`${t.reductionsIncomplete} reductions incomplete`)
  if (t.sendsLost !== 0 || t.sendDuplicates !== 0) out.push(`point-to-point: ${t.sendsLost} lost, ${t.sendDuplicates} duplicates`)
  if (t.unownedVnodesAtEnd !== 0) out.push(`${t.unownedVnodesAtEnd} virtual nodes without a live owner at the end`)
  for (const b of r.broadcasts) {
    if (b.delivered !== r.vnodes || b.missing !== 0 || b.duplicates !== 0) out.push(`broadcast ${b.id}: ${b.delivered}/${r.vnodes} delivered, ${b.duplicates} duplicates`)
  }
  for (const x of r.reductions) if (!x.complete || !x.correct) out.push(`reduction ${x.id}: complete=${x.complete} correct=${x.correct}`)
  return out
}

function expectClean (name: string, r: SimReport): void {
  const p = problems(r)
  expect(p, `${name}: ${p.length} problems; replay: ${replay(name)}\n${p.join('\n')}`).toEqual([])
}

/**
 * The simulator's per-peer state, for checks the report does not expose (who owns what at
 * the end). Reads a private field: if the simulator is restructured, update this view.
 */
interface PeerView {
  readonly name: string
  readonly status: string
  readonly core: { readonly ownedSet: IntervalSet, readonly members: { alive (): string[] } } | null
}

function peersOf (sim: Simulation): PeerView[] {
  const peers = (sim as unknown as { peers?: unknown }).peers
  if (!Array.isArray(peers) || peers.some((p) => typeof p !== 'object' || p === null || !('core' in p) || !('name' in p))) {
    throw new Error('Simulation no longer keeps a `peers` array of { name, status, core }: update peersOf() in test/sim-scenarios.test.ts')
  }
  return peers as PeerView[]
}

function peer (sim: Simulation, name: string): PeerView {
  const p = peersOf(sim).find((x) => x.name === name)
  if (p === undefined) throw new Error(`no peer ${name}`)
  return p
}

function chunkCount (bytes: number): number {
  return Math.max(1, Math.ceil(bytes / DEFAULT_CHUNK_BYTES))
}

describe('simulated scenarios', () => {
  it.each([
    ['the default probing (near lane, light repeat probes)', {}],
    ["003's probing (one probe at a time, each with its download)", { probeNearLane: false, probeBandwidthReuseMs: 0 }]
  ])('stable trees, %s: every broadcast reaches each non-root peer once, along the tree only', (_what, core) => {
    const name = 'test-stable-broadcast'
    const { report } = run(name, core)
    expectClean(name, report)
    const peers = report.peers.total
    expect(report.vnodes, 'one virtual node per peer').toBe(peers)
    const first = Math.min(...report.broadcasts.map((b) => b.startMs))
    expect(report.stability.firstStableMs, 'trees stable before the first broadcast').not.toBeNull()
    expect(report.stability.firstStableMs as number).toBeLessThan(first)
    expect(report.stability.repairs, 'no membership change').toEqual([])
    expect(report.broadcasts.map((b) => `${b.bytes}@${b.tree}`)).toEqual(['1@lat', '1048576@bw', '1048576@lat', '1@bw'])
    for (const b of report.broadcasts) {
      const chunks = chunkCount(b.bytes)
      const what = `${replay(name)}: broadcast ${b.id} (${b.bytes} B, ${chunks} chunks, ${b.tree} tree)`
      expect(b.fallbackSends, `${what}: point-to-point fallback sends`).toBe(0)
      // `messages` counts the broadcast's chunk messages and acknowledgements (one per
      // stream). On a stable tree every non-root peer gets every chunk once: chunks =
      // (peers - 1) x chunkCount. Unstriped, each gets one stream; striped (overlay/stripes.ts,
      // the long bandwidth-tree one here), a peer outside the root's cluster gets one per stripe.
      expect(b.messages - b.streams, `${what}: chunk messages`).toBe((peers - 1) * chunks)
      if (b.tree === 'bw' && b.bytes >= 256 * 1024) {
        expect(b.stripes, `${what}: stripes (one per other cluster)`).toBe(2)
        expect(b.streams, `${what}: streams`).toBeGreaterThan(peers - 1)
        expect(b.streams, `${what}: streams`).toBeLessThanOrEqual((peers - 1) * b.stripes)
      } else {
        expect(b.stripes, `${what}: stripes`).toBe(1)
        expect(b.streams, `${what}: streams`).toBe(peers - 1)
      }
      // One copy of the payload per non-root peer: a second copy anywhere would add b.bytes.
      expect(b.bytesSent, `${what}: bytes sent`).toBeGreaterThanOrEqual((peers - 1) * b.bytes)
      expect(b.bytesSent, `${what}: bytes sent`).toBeLessThan((peers - 1) * b.bytes + b.messages * MAX_OVERHEAD_PER_MESSAGE)
      expect(b.doneAtRootMs, `${what}: the root saw every acknowledgement`).not.toBeNull()
    }
  })

  it.each(['swarm-striped-40', 'swarm-striped-71'])('%s: a crash ends a stripe\'s custody after delivery; the new owner asks the origin for every chunk', (name) => {
    // Crashes during striped broadcasts (swarm seeds of test/sim-swarm.test.ts's striped
    // family): a peer delivered its virtual nodes and acknowledged one stripe, then crashed
    // while another stripe's stream to it was still unacknowledged. That stripe alone was
    // routed again, to the virtual nodes' new owner, which could never complete the payload;
    // the broadcast was never acknowledged at its root, and a leaver waited for its timeout.
    // Seeds 27 and 378 found it first; after the probing changes of 2026-11-27 their trees
    // no longer lead there, so these two were found by searching the family for runs that
    // fail without the resend (out/find-striped.ts-style scratch) and pass with it. Both
    // files pin `probeDownloadOnDemand: false` (every probe downloads, the default until
    // the twenty-first round): with downloads on demand their trees no longer lead there.
    const { report } = run(name)
    expectClean(name, report)
    expect(report.broadcasts.some((b) => b.stripes > 1), 'striped broadcasts').toBe(true)
    for (const b of report.broadcasts) expect(b.doneAtRootMs, `${b.id} acknowledged at its root`).not.toBeNull()
    expect(report.totals.leavesTimedOut, 'no leave waited for its timeout').toBe(0)
    // Without the resend (overlay/stripes.ts) one of them stays unacknowledged.
    const without = run(name, { stripeResendMs: 1e9 }).report
    expect(without.broadcasts.filter((b) => b.doneAtRootMs === null).length + without.totals.leavesTimedOut).toBeGreaterThan(0)
  })

  it('swarm-striped-3341: a leaver holding one stripe keeps the custody of the others it passes on', () => {
    // A leaver that had its virtual nodes pending through one stripe handed them on with
    // every chunk it had; its streams of the other stripes had nothing of their own left
    // to do and were acknowledged before their chunks came. Their custody ended there, the
    // new owner never got one stripe, and 11 virtual nodes never got the broadcast while
    // its root saw every acknowledgement. Such a stream now waits for its chunks while an
    // open route of every chunk draws on them.
    const name = 'swarm-striped-3341'
    const { report } = run(name)
    expectClean(name, report)
    for (const b of report.broadcasts) expect(b.doneAtRootMs, `${b.id} acknowledged at its root`).not.toBeNull()
    expect(report.totals.leavesTimedOut).toBe(0)
  })

  it('a wide-area link busy for seconds with bulk chunks does not make its peers look dead', () => {
    // Two 8 MB broadcasts keep the 5 MB/s link between the clusters busy for seconds, far
    // longer than the 1 s failure-detection timeout. Liveness pings travel in the control
    // lane (the node's control stream), not behind the queued chunks of the bulk lane;
    // with one lane per pair this run declared live peers dead (16 violations).
    const name = 'test-busy-link-liveness'
    const { report } = run(name)
    expectClean(name, report)
    expect(report.peers.final, 'nobody was evicted').toBe(report.peers.initial)
    expect(report.totals.fallbackSends, 'no stream had to be re-routed').toBe(0)
    // Each broadcast crosses the link once (16 MB at 5 MB/s): it stays busy for over 3 s.
    const durations = report.broadcasts.map((b) => b.durationMs as number)
    for (const d of durations) expect(d, 'each broadcast took longer than the timeout').toBeGreaterThan(1000)
    expect(Math.max(...durations), 'the link was busy for seconds').toBeGreaterThan(3000)
  })

  it('two peers crash 1 ms into an 8 MB broadcast: still delivered everywhere exactly once', () => {
    const name = 'test-crash-mid-broadcast'
    const { report } = run(name)
    expectClean(name, report)
    expect(report.peers.final, 'three peers crashed').toBe(report.peers.initial - 3)
    const big = report.broadcasts.find((b) => b.bytes === 8 * 1024 * 1024) as BroadcastReport
    expect(big.startMs).toBe(3000)
    // The crash (at 3001 ms) came while the broadcast was still in flight.
    expect(big.completeMs as number).toBeGreaterThan(3001 + 200)
    expect(big.delivered).toBe(report.vnodes)
    expect(big.duplicates).toBe(0)
    expect(report.stability.repairs.map((x) => x.event)).toEqual(['crash', 'crash'])
  })

  it('peers leave while reductions run: every reduction complete and correct, trees repaired within 1 s of each leave', () => {
    // With the near probe lane (the default): a parentless peer whose only near peers were its
    // own descendants asked them again and again; each doomed check locked its tree, and the
    // repair never ended (trees/tree-table.ts no longer retries a candidate whose check just failed).
    const name = 'test-leave-mid-reduction'
    const { report } = run(name)
    expectClean(name, report)
    for (const r of report.stability.repairs) {
      expect(r.treesRepairedAfterMs, `${replay(name)}: repaired after the ${r.event} at ${r.atMs}`).not.toBeNull()
      expect(r.treesRepairedAfterMs as number).toBeLessThan(1000)
    }
    expect(report.peers.final).toBe(report.peers.initial - 3)
    expect(report.reductions).toHaveLength(3)
    const big = report.reductions.find((x) => x.length === 65536)
    expect(big?.startMs).toBe(3000)
    // The leaves (at 3002 ms) came while the big reduction was still running.
    expect(big?.durationMs as number).toBeGreaterThan(2)
    expect(report.stability.repairs.every((x) => x.stableAfterMs !== null), 'stable again after each leave').toBe(true)
  })

  it('crashes, a leave and rejoins during back-to-back 128 KB reductions: every one complete and correct, no pull storm', () => {
    // 100 long reductions (two roots, every 37 and 53 ms) over 42 peers in 3 clusters, with
    // crashes before and after a leave and a rejoin. Long partials combine among siblings
    // (overlay/combine-plan.ts). Before pulls backed off, the root asked every owner of a
    // part missing after a crash again every 250 ms while the first 128 KB answers still
    // queued on the wide-area links: 50,000 pulls, more than 6 GB over the wide area, and
    // up to 43 reductions that never completed (overlay/reduction.ts, onTimer).
    const name = 'test-crash-mid-combined-reduction'
    const { report, sim } = run(name)
    expectClean(name, report)
    expect(report.reductions).toHaveLength(100)
    let pulls = 0
    let announced = 0
    for (const p of peersOf(sim)) {
      const stats = (p.core as unknown as { reductions?: { stats: ReductionStats } } | null)?.reductions?.stats
      pulls += stats?.pulls ?? 0
      announced += stats?.siblingsAnnounced ?? 0
    }
    expect(announced, 'siblings combined').toBeGreaterThan(100)
    expect(pulls, `pulls; replay: ${replay(name)}`).toBeLessThan(10_000)
    expect(report.totals.wanBytes).toBeLessThan(1e9)
    // Simulated time (deterministic). Parts whose start had not been acknowledged yet were
    // pulled as if lost, and answers that overlapped a late partial waited out the owner's
    // patience: the median was 9.4 s, the slowest 14 s. A reduction that needs a crashed
    // peer's part waits for the crash to be detected (the failure-detection timeout, 5 s),
    // so which reductions do depends on the trees: medians of 0.3 s to 3.8 s over seeds
    // 2-4 and 21 with either probing (2026-11-24, seventh round). Past the timeout is a bug.
    // The slowest waits for the detection and then for the root's next pull round, which
    // backs off to 16 retry intervals (about 4.8 s here): 7.8 s at this seed with tree news
    // (median 0.8 s; 9.7 s when latency trees began to regroup), 6.5-13.7 s over seeds 2-4
    // and 21 with one probe lane (README, Known limits). With tree news one reduction here
    // waited for ever for a member declared dead that came back (test/reduction.test.ts).
    const durations = report.reductions.map((x) => x.durationMs as number).sort((a, b) => a - b)
    expect(durations[50]).toBeLessThan(DEFAULT_FAILURE_DETECTION_TIMEOUT_MS)
    expect(durations[99]).toBeLessThan(2 * DEFAULT_FAILURE_DETECTION_TIMEOUT_MS)
  })

  it('crashes seen in different orders, then rejoins: a hand-off whose version ties another view\'s is still taken (swarm seed 434)', () => {
    // Two peers crash at once; survivors that see the deaths in different orders give the
    // same ranges different versions. When the crashed peers rejoin asking for their old
    // ranges, the owner's hand-off record tied (same version) with a record naming the
    // owner itself: the receiver kept the owner, the owner had given the ranges away, and
    // 6 virtual nodes had no owner (6 lost deliveries). The receiver now claims them.
    const name = 'test-handoff-version-tie'
    const { report } = run(name)
    expectClean(name, report)
    expect(report.peers.final).toBe(12)
  })

  it('a crashed peer rejoins asking for its old ranges and gets them back', () => {
    const name = 'test-rejoin-old-ranges'
    const { report, sim } = run(name)
    expectClean(name, report)
    const scenario = load(name)
    const founders = Array.from({ length: report.peers.initial }, (_, i) => `p${String(i).padStart(4, '0')}`)
    const old = initialAssignment(scenario.vnodes as number, founders).get('p0004') as IntervalSet
    const p4 = peer(sim, 'p0004')
    expect(p4.status).toBe('running')
    expect(p4.core?.ownedSet.ranges, `${replay(name)}: p0004 owns its old ranges again`).toEqual(old.ranges)
    for (const p of peersOf(sim)) if (p.core !== null) expect(p.core.members.alive(), `${p.name} sees p0004 alive`).toContain('p0004')
    const last = report.stability.repairs.at(-1)
    expect(last?.event).toBe('join')
    expect(last?.stableAfterMs, 'trees stable again after the rejoin').not.toBeNull()
  })

  // Fixed bug (simulator), kept as a regression test: `rejoin: true` does nothing for a peer that left gracefully: the
  // simulator remembers a peer's last owned set (`lastOwned`), and a leave ends with an
  // `ownership` output whose owned set is empty, so the rejoin asks for no ranges and gets
  // a default share instead (here p0004 ends with [10,12) instead of [12,15)).
  it('a peer that left rejoins asking for its old ranges and gets them back', () => {
    const name = 'test-rejoin-after-leave'
    const { report, sim } = run(name)
    expectClean(name, report)
    const old = initialAssignment(load(name).vnodes as number, Array.from({ length: report.peers.initial }, (_, i) => `p${String(i).padStart(4, '0')}`)).get('p0004') as IntervalSet
    expect(peer(sim, 'p0004').core?.ownedSet.ranges, `${replay(name)}: p0004 owns its old ranges again`).toEqual(old.ranges)
  })

  // Fixed bug (core), kept as a regression test: a crashed peer that restarts before its crash is noticed (crashDetectionMs)
  // is declared dead by the late connection-loss notice of its old incarnation: the core's
  // peerDown(peer) carries no incarnation, so it kills the new one. The others drop it; it
  // keeps running alone (a zombie: it believes itself a member, owns nothing, and the
  // trees are never stable again).
  it('a crashed peer that rejoins before its crash is noticed stays a member', () => {
    const name = 'test-rejoin-before-detection'
    const { report, sim } = run(name)
    for (const p of peersOf(sim)) if (p.core !== null) expect(p.core.members.alive(), `${replay(name)}: ${p.name} sees p0003 alive`).toContain('p0003')
    expect(report.stability.repairs.at(-1)?.stableAfterMs, 'trees stable again after the rejoin').not.toBeNull()
  })

  // Fixed bug (simulator checker), kept as a regression test: in the same run the checker reports "two owners of virtual
  // node 6: p3 and p4" when p0004 takes the old incarnation's ranges over at 2700 ms, a
  // false positive: Checker.crashed() does not forget what the crashed peer owned, and the
  // restarted p0003 (owning nothing) counts as alive again.
  it('a crashed peer that rejoins before its crash is noticed: invariants hold', () => {
    const name = 'test-rejoin-before-detection'
    expectClean(name, run(name).report)
  })

  // Fixed bug (core), kept as a regression test: a leaving peer hands its ranges to its successor, which crashed a moment earlier
  // and is not yet known to be dead. The hand-off is lost with it, and the hand-off record
  // reaches the crashed peer's own successor (another cluster) only after it has taken
  // over the crashed peer's ranges, so nobody takes these: virtual nodes [12,15) have no
  // owner for the rest of the run, every later broadcast misses them and reductions never
  // complete.
  it('a peer leaves by handing off to a peer that has just crashed: no virtual node is lost', () => {
    const name = 'test-leave-to-crashed'
    const { report } = run(name)
    expectClean(name, report)
  })

  // Fixed bug (simulator), kept as a regression test: an action on a peer that has joined but whose core is still 'joining'
  // (its contact's welcome has not arrived) throws out of Simulation.run(): the simulator
  // marks a joining peer 'running' at once, so `leave`, and `broadcast`/`reduce` naming it
  // as root (or picking it as a `random` root), call core.leave()/broadcast()/reduce(),
  // which throw NotRunningError("this call needs state 'running', the core is 'joining'").
  // The swarm hit it with `leave` by count right after a join (seeds 57, 233, 254, 262,
  // 281, 324 before commit c99d2ed changed the timings).
  it('a peer leaves while its join is still in progress', () => {
    const name = 'test-leave-while-joining'
    const { report } = run(name)
    expectClean(name, report)
  })

  it('a broadcast and a reduction rooted at a peer whose join is still in progress', () => {
    const name = 'test-broadcast-while-joining'
    const { report } = run(name)
    expectClean(name, report)
  })

  it('two peers leave at once, one handing off to the other', () => {
    const name = 'test-concurrent-leaves'
    const { report } = run(name)
    expectClean(name, report)
  })

  // Fixed bug (core), kept as a regression test: half of 64 peers leave at once while 4 MB
  // broadcasts run back to back. A leaving peer drains its streams before it goes, and
  // parts for virtual nodes whose owner (in its view) was another leaver were parked, not
  // sent: leavers hear of no later hand-off (facts go to alive members only), so those
  // parts waited until some leaver's leave timeout (10 s) broke the wait. Trees were
  // stable again only 10 s after the leave, and the broadcast in flight stalled with them
  // (2 broadcasts in this run instead of 8). Data for a leaving owner is now sent to it
  // (it forwards along its own hand-off) until its connection closes.
  it('half the peers leave during back-to-back 4 MB broadcasts: no leaver waits for its leave timeout', () => {
    const name = 'test-mass-leave-b2b'
    const { report } = run(name)
    expectClean(name, report)
    expect(report.peers.final).toBe(report.peers.initial / 2)
    const leave = report.stability.repairs.find((x) => x.event === 'leave')
    expect(leave?.stableAfterMs, `${replay(name)}: stable again after the leave`).not.toBeNull()
    // Simulated time (deterministic); the leave timeout is 10 s.
    expect(leave?.stableAfterMs as number, replay(name)).toBeLessThan(5000)
    expect(report.totals.broadcastsComplete, replay(name)).toBeGreaterThanOrEqual(6)
  })

  it('1000 virtual nodes on 12 peers, with joins, a crash, a leave and a rejoin', () => {
    const name = 'test-many-vnodes'
    const { report, sim } = run(name)
    expectClean(name, report)
    expect(report.vnodes).toBe(1000)
    expect(report.peers.total).toBe(12)
    for (const b of report.broadcasts) expect(b.delivered).toBe(1000)
    // Every virtual node has exactly one live owner at the end.
    const owned = peersOf(sim).filter((p) => p.core !== null).map((p) => p.core?.ownedSet as IntervalSet)
    expect(owned.reduce((n, s) => n + s.size, 0)).toBe(1000)
    for (let i = 0; i < owned.length; i++) {
      for (let j = i + 1; j < owned.length; j++) expect((owned[i] as IntervalSet).intersects(owned[j] as IntervalSet)).toBe(false)
    }
  })

  it('point-to-point messages while their virtual nodes\' owners join, leave, crash and rejoin: each at the owner once', () => {
    const name = 'test-sends-under-churn'
    const { report } = run(name)
    // The checker flags a delivery at a peer that does not own the virtual node then, a second one, or another payload.
    expectClean(name, report)
    expect(report.totals.sends).toBe(1530)
    for (const m of report.sends) expect(m.deliveredMs, `${m.id} to ${m.vnode}`).not.toBeNull()
    // Messages to the crashed peers' virtual nodes wait for the take-over (200 ms to notice, then the grace).
    const slow = report.sends.filter((m) => (m.durationMs as number) > 100)
    expect(slow.length).toBeGreaterThan(0)
    for (const m of slow) expect(m.startMs).toBeGreaterThanOrEqual(3000)
  })
})

/*
 * Swarm failures saved as experiments/scenarios/swarm-<seed>.json (generated by
 * test/swarm.ts; saved so they replay even if the generator changes). Each fails
 * deterministically because of a bug, not fixed here.
 */
describe('saved swarm failures', () => {
  // Fixed bug (core), kept as a regression test: seed 112. Two adjacent peers (p0003,
  // p0004) crash and restart before their crashes are noticed. Survivors learn the
  // restarts in different orders and compute different successors for p0003's old range:
  // p0004's new incarnation took virtual node 3 while p0005 did too, and for a moment two
  // peers owned it. A take-over is now a claim owned only once every member answered
  // (overlay/pending-claims.ts); seeds 310, 936, 1039, 1791 and 1833 of SWARM_SEEDS=2000
  // were the same case.
  it('swarm-112: crash and quick restart of two peers, one owner throughout', () => {
    expectClean('swarm-112', run('swarm-112').report)
  })

  // Fixed bug (core), kept as a regression test: seed 206. p0007 and p0008 crash, rejoin (p0007 gets its old ranges
  // [28,32) back), then p0007 crashes again: nobody takes [28,32) over (views disagree on
  // their owner: p0000 believes p0001, p0001 believes p0008), 4 virtual nodes stay
  // unowned and 4 broadcasts miss them.
  it('swarm-206: a rejoined peer crashes again, its ranges are taken over', () => {
    expectClean('swarm-206', run('swarm-206').report)
  })

  // Fixed bug (core), kept as a regression test: seed 222. p0000 and p0008 leave at the same time (367 ms); p0008 hands
  // [32,36) to p0000, which is leaving too and gone before the hand-off arrives (it is in
  // another cluster). The others learn "[32,36) belongs to p0000" after p0000 left, and
  // nobody takes the range over: every later broadcast misses 4 virtual nodes and both
  // reductions stay incomplete. (The simulator's connection-closed notice of a leaver, sent
  // 1 ms after it leaves, also overtakes its in-flight 'left' facts to other clusters, so
  // some peers declare it dead instead.)
  it('swarm-222: concurrent leaves, one handing off to the other, lose nothing', () => {
    expectClean('swarm-222', run('swarm-222').report)
  })

  // Fixed bug (core), kept as a regression test: seed 357. p0002 gives [14,21) to p0001 when p0001 rejoins (1548 ms), but when
  // p0002 crashes (noticed at 2660 ms) its successor p0003 takes over [7,21), p0001's range
  // included: two live owners of virtual nodes 14-20 until p0003 leaves at 3283 ms.
  it('swarm-357: a crash take-over takes only what the crashed peer still owned', () => {
    expectClean('swarm-357', run('swarm-357').report)
  })

  it('swarm-346 and swarm-1663: a peer whose partial went to a parent that then died does not make the root wait for it', () => {
    // The peer acknowledged a later copy of the start after its partial had gone to its
    // first parent, which crashed: the root counted the part as on its way (the receiver
    // is alive) and waited for it to the end (overlay/reduction.ts, partialAway).
    expectClean('swarm-346', run('swarm-346').report)
    expectClean('swarm-1663', run('swarm-1663').report)
  })

  it('swarm-1270 and swarm-1344: a hand-off beats a successor a stale view only guessed', () => {
    // A peer that rejoined with a stale snapshot learnt of restarts one after the other and
    // guessed successors for the old incarnations' ranges, above the versions of the real
    // claims. The hand-offs of the peers that really held them lost to the guesses: 51
    // virtual nodes without an owner (1270), and a reduction's start passed back and forth
    // between two peers that each thought the other owned two virtual nodes (1344).
    expectClean('swarm-1270', run('swarm-1270').report)
    expectClean('swarm-1344', run('swarm-1344').report)
  })

  it('swarm-908: data for a virtual node claimed and not owned yet waits at the claimer', () => {
    // Found once take-overs waited for agreement (overlay/pending-claims.ts): p0006 had
    // claimed p0005's virtual node 5; a broadcast's part for it came to p0006, which sent
    // it down its tree (its child's reach set still listed p0005's range), and the peer
    // there sent it back point-to-point to the owner its view named, p0006: a loop until
    // the hop limit, and virtual node 5 never got the broadcast. Claimed parts now wait.
    expectClean('swarm-908', run('swarm-908').report)
  })

  it.each(['test-tree-roots-crash', 'test-tree-roots-churn'])('%s: 8 of 64 peers root trees; the others broadcast and reduce through theirs while peers crash, leave and rejoin', (name) => {
    // overlay/tree-roots.ts: p0000, p0001, p0017, p0020, p0033 and p0040 are no tree roots.
    const { report } = run(name)
    expectClean(name, report)
    expect(report.stability.firstStableMs, 'trees of the 8 tree roots stable').not.toBeNull()
    for (const x of report.stability.repairs) if (!x.interrupted) expect(x.treesRepairedAfterMs, `${name}: repair after ${x.event}@${x.atMs}`).not.toBeNull()
    expect(report.broadcasts.length).toBeGreaterThanOrEqual(42)
    // Long broadcasts from p0000 and p0020 are striped along their tree root's cluster
    // entries, which they ask it for (overlay/stripe-asks.ts).
    const long = report.broadcasts.filter((b) => b.bytes >= 256 * 1024)
    expect(long.length).toBeGreaterThan(0)
    for (const b of long) expect(b.treeRoot, `${b.id} from a peer that roots no trees`).toBeDefined()
    for (const b of long) expect(b.stripes, `${b.id} at ${b.startMs} ms striped`).toBeGreaterThan(1)
  })

  it('swarm-2061: a peer with nothing left to send tells the peer that sent it the start', () => {
    // Two crashes just before a reduction: p0007 had forwarded its only part to a peer that
    // crashed, whose virtual nodes reached the root another way; p0007 had nothing to send
    // and sent nothing, so p0005 waited for it (alive, it had acknowledged the start), and
    // the root waited for p0005, for ever. An empty partial now reports "nothing more".
    expectClean('swarm-2061', run('swarm-2061').report)
  })
})
