/**
 * `npm run bench:net -- [part...] [--json]`: treecast on real libp2p (TCP + Noise + Yamux on
 * loopback, this machine), next to plain libp2p doing the same work in the same run.
 *
 * - chain: one raw libp2p stream (64 MiB in 64 KiB writes) vs a 64 MiB bandwidth-tree
 *   broadcast down a forced chain A→B→C→D of 4 treecast peers (the WAN emulator caps every
 *   other pair), vs a hand-written libp2p relay chain (the same 3 hops, no treecast); in
 *   this process, then with every peer in its own process (`--no-procs` skips that).
 * - latency: 1-byte broadcasts from random roots on 32 stable peers, on plain loopback and
 *   with the emulator (4 clusters of 8, 10 ms one way between clusters), against the
 *   latency tree's depth × the per-hop latency measured by a 1-byte ping-pong.
 * - memory: RSS and heap per idle treecast peer (8, 16, 32 peers) and per libp2p connection
 *   (plain hosts in a full mesh), each N in a fresh child process run with `--expose-gc`
 *   (the latency part's loopback process gives the figure for its own N).
 *
 * Every latency and memory measurement runs in a fresh `node --expose-gc --import ./bin/ts-loader.mjs
 * experiments/bench-net.ts overlay-child ...` process (the command is printed), so the
 * chain part's 64 MiB buffers do not distort the others.
 *
 * Steady probing is off by default (`--steady-probe-ms 0`, also the node's default since
 * 2026-11-23): with a probe per peer every 2 s the trees keep changing under load, a chain
 * does not stay a chain and 32 peers in one process never settle (BENCHMARKS.md, "Real
 * network (libp2p)").
 *
 * Progress goes to stderr; stdout gets a table, or with `--json` only the JSON report.
 */
import '../node/polyfill.ts'
import { writeFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { Command } from 'commander'
import { installLibp2pGuard } from '../node/libp2p-guard.ts'
import { chainPart } from './bench-net/chain.ts'
import { inChild } from './bench-net/children.ts'
import { log, type Options } from './bench-net/common.ts'
import type { LatencyReport } from './bench-net/latency.ts'
import { meshChild, memoryPart, overlayChild, type MemoryChildResult } from './bench-net/memory.ts'
import { printTable, type Report } from './bench-net/report.ts'

const PARTS = ['chain', 'latency', 'memory'] as const

const program = new Command()
  .name('bench-net')
  .description('treecast on real libp2p: pipelined chain vs one stream, 1-byte broadcast latency, memory')
  .argument('[parts...]', `${PARTS.join(', ')} (default: all)`)
  .option('--reps <n>', 'chain: repetitions (raw and chain alternate)', '3')
  .option('--mb <n>', 'chain: payload in MiB', '64')
  .option('--cap-mbps <n>', 'chain: rate of the pairs off the chain, MB/s', '1')
  .option('--vnodes <n>', 'chain: virtual nodes', '16')
  .option('--chain-attempts <n>', 'chain: overlays founded at most until the bw tree is a chain', '5')
  .option('--no-procs', 'chain: skip the 4-process chain')
  .option('--nodes <n>', 'latency: peers', '32')
  .option('--broadcasts <n>', 'latency: 1-byte broadcasts per network', '20')
  .option('--vnodes-per-peer <n>', 'latency, memory: virtual nodes per peer', '8')
  .option('--wan-delay-ms <n>', 'latency: one-way delay between clusters', '10')
  .option('--heartbeat-ms <n>', 'latency: heartbeatIntervalMs of the peers (failure detection 3x, at least 5 s)', '1000')
  .option('--steady-probe-ms <n>', "all parts: the core's steadyProbeIntervalMs; 0 = off (trees stay as built), 'node' = the node's default (off since 2026-11-23: the same as 0)", '0')
  .option('--ping-edges <n>', 'latency: tree edges pinged per class', '8')
  .option('--pings <n>', 'latency: ping-pongs per edge', '20')
  .option('--stable-timeout <ms>', 'longest wait for the peers to stop probing', '90000')
  .option('--mem-nodes <list>', 'memory: treecast peer counts', '8,16,32')
  .option('--mesh-nodes <n>', 'memory: libp2p hosts in a full mesh', '16')
  .option('--mem-settle <ms>', 'memory: wait after quiet before measuring', '2000')
  .option('--seed <n>', 'broadcast roots', '1')
  .option('--json', 'print only the JSON report on stdout')
  .option('--out <file>', 'also write the JSON report to this file')
  // internal: the parts run in fresh child processes
  .option('--mem-n <n>', 'overlay-child, mesh-child: N', '8')
  .option('--wan', 'overlay-child: on the emulator')
  .option('--latency', 'overlay-child: also the 1-byte broadcasts')
  .action(async (parts: string[], raw: Record<string, string | boolean>) => {
    installLibp2pGuard()
    const num = (k: string): number => Number(raw[k])
    const o: Options = {
      reps: num('reps'),
      mb: num('mb'),
      capMBps: num('capMbps'),
      vnodes: num('vnodes'),
      chainAttempts: num('chainAttempts'),
      procs: raw.procs !== false,
      nodes: num('nodes'),
      broadcasts: num('broadcasts'),
      vnodesPerPeer: num('vnodesPerPeer'),
      wanDelayMs: num('wanDelayMs'),
      heartbeatMs: num('heartbeatMs'),
      steadyProbeMs: raw.steadyProbeMs === 'node' ? NaN : num('steadyProbeMs'),
      pingEdges: num('pingEdges'),
      pings: num('pings'),
      stableTimeoutMs: num('stableTimeout'),
      memNodes: String(raw.memNodes).split(',').map(Number),
      meshNodes: num('meshNodes'),
      memSettleMs: num('memSettle'),
      seed: num('seed'),
      json: raw.json === true
    }
    if (parts[0] === 'overlay-child' || parts[0] === 'mesh-child') {
      const result = parts[0] === 'mesh-child'
        ? await meshChild(num('memN'))
        : await overlayChild(o, num('memN'), raw.wan === true, raw.latency === true)
      process.stdout.write(JSON.stringify({ ev: 'result', result }) + '\n')
      process.exit(0)
    }
    const selected = parts.length === 0 ? [...PARTS] : parts
    for (const p of selected) if (!(PARTS as readonly string[]).includes(p)) throw new Error(`unknown part '${p}' (${PARTS.join(', ')})`)
    const report: Report = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: (await import('node:os')).cpus().length,
      command: `npm run bench:net -- ${process.argv.slice(2).join(' ')}`.trim()
    }
    const t0 = performance.now()
    if (selected.includes('chain')) report.chain = await chainPart(o)
    const memoryDone: MemoryChildResult[] = []
    if (selected.includes('latency')) {
      // Each network in a fresh process; the loopback one also gives the memory figure for its N.
      report.latency = []
      for (const wan of [false, true]) {
        const r = await inChild('overlay-child', ['--mem-n', String(o.nodes), '--latency', ...(wan ? ['--wan'] : [])], o, 600_000)
        report.latency.push(r.latency as LatencyReport)
        if (!wan) memoryDone.push(r.memory as MemoryChildResult)
      }
    }
    if (selected.includes('memory')) report.memory = await memoryPart(o, memoryDone)
    log(`total ${((performance.now() - t0) / 1000).toFixed(0)} s`)
    if (typeof raw.out === 'string') writeFileSync(raw.out, JSON.stringify(report, null, 2) + '\n')
    if (o.json) console.log(JSON.stringify(report, null, 2))
    else printTable(report)
    process.exit(0)
  })

await program.parseAsync()
