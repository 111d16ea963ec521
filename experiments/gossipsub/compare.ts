/**
 * `gossipsub-compare`: treecast against @libp2p/gossipsub on the same real libp2p peers
 * (in this process, TCP on loopback, Noise, Yamux) over the emulated 4-cluster wide-area
 * network of node/wan. Both systems run as services of the same hosts and their messages
 * alternate, so they see the same connections, links and machine load. See README.md.
 */
import { performance } from 'node:perf_hooks'
import type { Experiment, ExperimentContext, ExperimentResult } from '../harness/types.ts'
import { Rng } from '../sim/rng.ts'
import { ArrivalRecorder, type System } from './arrivals.ts'
import { GOSSIPSUB_DEFAULT_MAX_RPC_BYTES, GOSSIPSUB_RECORDED, GOSSIPSUB_RPC_OVERHEAD_BYTES, KiB, planOf, type Plan, type PlanOverrides, type SizeSpec } from './config.ts'
import { connectAll, connectionsPerPeer, formMesh, foundTreecast, startHosts, treecastDiagnosis, stopHosts, type Hosts } from './hosts.ts'
import { runMessage, type MessageOutcome } from './message-runner.ts'
import { plotsOf } from './plots.ts'
import { toPoints, type Background } from './points.ts'
import { tablesOf, targetsOf } from './report.ts'
import { median } from './stats.ts'

const sleep = async (ms: number): Promise<void> => { await new Promise<void>((resolve) => { setTimeout(resolve, ms) }) }

/** True when a gossipsub message of `bytes` cannot fit its default RPC frame limit. */
const overLimit = (bytes: number): boolean => bytes + GOSSIPSUB_RPC_OVERHEAD_BYTES > GOSSIPSUB_DEFAULT_MAX_RPC_BYTES

/** What the setup found, for the parameters. */
interface Setup {
  treecastStableMs: number | null
  treecastUnstable?: string
  connectionsAfterTreecast: number[]
  extraDials: { dialled: number, failed: number }
  connections: number[]
  gossipsubMeshMs: number | null
  gossipsubMeshSizes: number[]
  gossipsubMeshProblem?: string
  background: Record<System, Background>
}

async function setUp (hosts: Hosts, plan: Plan, ctx: ExperimentContext, tick: (label: string) => void): Promise<Setup> {
  const t = await foundTreecast(hosts, plan.stableTimeoutMs)
  ctx.log(Number.isNaN(t.stableMs) ? `treecast NOT stable after ${plan.stableTimeoutMs} ms (${t.why ?? ''}; ${treecastDiagnosis(hosts)}); measuring anyway` : `treecast trees stable after ${t.stableMs.toFixed(0)} ms`)
  if (plan.treecastSettleMs > 0) {
    ctx.log(`letting treecast's trees settle ${plan.treecastSettleMs} ms more`)
    await sleep(plan.treecastSettleMs)
  }
  tick('treecast stable')
  const connectionsAfterTreecast = connectionsPerPeer(hosts)
  const extraDials = await connectAll(hosts)
  ctx.log(`connections per peer after treecast's start: median ${median(connectionsAfterTreecast)}; ${extraDials.dialled} more dialled for a full mesh (${extraDials.failed} failed)`)
  tick('full mesh')
  const m = await formMesh(hosts, plan.meshTimeoutMs, plan.meshSettleHeartbeats)
  ctx.log(Number.isNaN(m.meshMs) ? `gossipsub mesh NOT ready after ${plan.meshTimeoutMs} ms (${m.why ?? ''}); measuring anyway` : `gossipsub mesh ready after ${m.meshMs.toFixed(0)} ms (mesh sizes ${Math.min(...m.meshSizes)}..${Math.max(...m.meshSizes)})`)
  tick('gossipsub mesh')
  const a = hosts.counter.snapshot()
  const t0 = performance.now()
  await sleep(plan.idleMs)
  const b = hosts.counter.snapshot()
  const ms = performance.now() - t0
  const rate = (s: System): Background => ({ bytesPerMs: (b[s].bytes - a[s].bytes) / ms, writesPerMs: (b[s].writes - a[s].writes) / ms })
  const background = { treecast: rate('treecast'), gossipsub: rate('gossipsub') }
  ctx.log(`idle background: treecast ${(background.treecast.bytesPerMs * 1000).toFixed(0)} B/s, gossipsub ${(background.gossipsub.bytesPerMs * 1000).toFixed(0)} B/s`)
  tick('idle background')
  return {
    treecastStableMs: Number.isNaN(t.stableMs) ? null : Math.round(t.stableMs),
    ...(t.why !== undefined ? { treecastUnstable: t.why } : {}),
    connectionsAfterTreecast,
    extraDials,
    connections: connectionsPerPeer(hosts),
    gossipsubMeshMs: Number.isNaN(m.meshMs) ? null : Math.round(m.meshMs),
    gossipsubMeshSizes: m.meshSizes,
    ...(m.why !== undefined ? { gossipsubMeshProblem: m.why } : {}),
    background
  }
}

/** Runs every message of the plan; the systems alternate which goes first. */
async function measure (hosts: Hosts, plan: Plan, seed: number, background: Record<System, Background>, ctx: ExperimentContext, tick: (label: string) => void): Promise<{ outcomes: MessageOutcome[], afterLimit: Set<MessageOutcome> }> {
  const recorder = new ArrivalRecorder()
  recorder.attach(hosts.peers)
  const rng = new Rng(seed).fork('gossipsub-compare/roots')
  const outcomes: MessageOutcome[] = []
  const afterLimit = new Set<MessageOutcome>()
  let seq = 0
  const one = async (system: System, bytes: number, root: number, label: string): Promise<MessageOutcome> => {
    const o = await runMessage(hosts, recorder, plan, system, bytes, seq++, root, background[system].bytesPerMs)
    outcomes.push(o)
    const c = o.completionMs === null ? `${o.delivered}/${o.expected} delivered${o.publishError !== null ? ` (${o.publishError})` : ''}` : `${o.completionMs.toFixed(1)} ms`
    tick(`${system} ${label}: ${c}`)
    return o
  }
  let lastOverLimitRoot: number | undefined
  for (const size of plan.sizes) {
    for (let i = 0; i < size.messages; i++) {
      const root = rng.int(plan.peers)
      const order: readonly System[] = i % 2 === 0 ? size.systems : [...size.systems].reverse()
      for (const system of order) {
        await one(system, size.bytes, root, size.label)
        if (system === 'gossipsub' && overLimit(size.bytes)) lastOverLimitRoot = root
      }
    }
  }
  if (lastOverLimitRoot !== undefined) {
    ctx.log('after the over-limit gossipsub message: 1 KB from its root and from another peer, both systems')
    const other = (lastOverLimitRoot + Math.floor(plan.peers / 2)) % plan.peers
    for (const root of [lastOverLimitRoot, other]) {
      for (const system of ['treecast', 'gossipsub'] as const) afterLimit.add(await one(system, KiB, root, '1 KB after the limit'))
    }
  }
  return { outcomes, afterLimit }
}

function stepsOf (plan: Plan): number {
  const messages = plan.sizes.reduce((n, s: SizeSpec) => n + s.messages * s.systems.length, 0)
  return 4 + messages + (plan.sizes.some((s) => s.systems.includes('gossipsub') && overLimit(s.bytes)) ? 4 : 0)
}

/** Runs the comparison (8 peers quick, 24 full, at most `ctx.maxPeers`; treecast's defaults), or a variant of it. */
export async function runComparison (ctx: ExperimentContext, overrides: PlanOverrides = {}): Promise<ExperimentResult> {
  const capped = ctx.maxPeers !== undefined && overrides.peers === undefined ? { ...overrides, peers: Math.max(4, Math.min(planOf(ctx.quick).peers, ctx.maxPeers)) } : overrides
  const plan = planOf(ctx.quick, capped)
  ctx.log(`gossipsub-compare: ${plan.peers} peers in 4 clusters, ${plan.sizes.map((s) => `${s.messages} × ${s.label}`).join(', ')}`)
  const bar = ctx.progress(stepsOf(plan), 'gossipsub-compare')
  const tick = (label: string): void => { bar.tick(1, label) }
  const hosts = await startHosts(plan, ctx.seed)
  try {
    const setup = await setUp(hosts, plan, ctx, tick)
    const { outcomes, afterLimit } = await measure(hosts, plan, ctx.seed, setup.background, ctx, tick)
    await sleep(1200) // the last gossipsub message's next heartbeat (IHAVE gossip) falls in its window
    const end = { at: performance.now(), traffic: { treecast: hosts.counter.of('treecast'), gossipsub: hosts.counter.of('gossipsub') } }
    const points = toPoints(outcomes, {
      label: (bytes) => plan.sizes.find((s) => s.bytes === bytes)?.label ?? `${bytes} B`,
      cluster: (peer) => hosts.peers[peer]?.cluster ?? '?',
      phase: (o) => afterLimit.has(o) ? 'after-limit' : 'measure',
      peers: plan.peers
    }, end, setup.background)
    bar.done()
    return {
      parameters: {
        peers: plan.peers,
        topology: plan.topology,
        emulator: 'node/wan WanEmulator.fromTopology: intra-cluster RTT 0.3 ms is below minIntraRttMs (1 ms), so intra-cluster connections are plain loopback; one shared, rate-capped pipe per direction and cluster pair; TCP connect delayed one RTT',
        sizes: plan.sizes,
        idleMs: plan.idleMs,
        gapMs: plan.gapMs,
        stallMs: plan.stallMs,
        maxMessageMs: plan.maxMessageMs,
        seed: ctx.seed,
        hosts: 'one libp2p 3.3.11 host per peer running both systems: treecast, @libp2p/identify 4.1.14, gossipsub; TCP with corked sends + Noise reading lengths without an exception (quietNoise) + Yamux with window updates at half a window (halfWindowYamux, maxStreamWindowSize 2 MiB), shared by both systems, connection monitor off, maxConnections 256',
        gossipsub: GOSSIPSUB_RECORDED,
        treecast: {
          options: 'defaults (node/config.ts, overlay/config.ts) except `core` below: switch point 256 KiB (latency tree below, bandwidth tree from it), 64 KiB chunks, steady probing off',
          core: plan.treecastCore,
          settleMsAfterStable: plan.treecastSettleMs,
          vnodes: plan.peers,
          mode: 'auto'
        },
        counting: 'send() calls and bytes on every protocol stream, via libp2p\'s metrics.trackProtocolStream, per system (/treecast/* vs /meshsub/* and /floodsub/*), before Yamux and Noise; background subtracted',
        gossipsubSizeLimitBytes: GOSSIPSUB_DEFAULT_MAX_RPC_BYTES,
        gossipsubRpcOverheadBytes: GOSSIPSUB_RPC_OVERHEAD_BYTES,
        setup,
        trafficTotals: hosts.counter.snapshot(),
        machine: 'two shared cores with other jobs: real-time figures are noisy, compare ratios within a run'
      },
      points,
      tables: tablesOf(points, plan.peers, { limitBytes: GOSSIPSUB_DEFAULT_MAX_RPC_BYTES, overheadBytes: GOSSIPSUB_RPC_OVERHEAD_BYTES }),
      plots: plotsOf(points),
      targets: targetsOf(points)
    }
  } finally {
    await stopHosts(hosts)
  }
}

export const gossipsubCompare: Experiment = {
  name: 'gossipsub-compare',
  description: 'treecast against @libp2p/gossipsub on real in-process libp2p peers (4 emulated clusters)',
  run: async (ctx) => await runComparison(ctx)
}
