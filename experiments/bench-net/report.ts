/** bench-net: the Report type and its tables. */
import type { ChainReport } from './chain.ts'
import { MiB, median, steadyLabel } from './common.ts'
import type { LatencyReport } from './latency.ts'
import type { MemoryRow } from './memory.ts'

// ---- report -------------------------------------------------------------------------------------

export interface Report {
  date: string
  node: string
  cpus: number
  command: string
  chain?: ChainReport
  latency?: LatencyReport[]
  memory?: MemoryRow[]
}

export const f = (x: number, d = 1): string => Number.isFinite(x) ? x.toFixed(d) : 'n/a'

export function printTable (r: Report): void {
  const out: string[] = []
  if (r.chain !== undefined) {
    const c = r.chain
    const m = c.median
    out.push(`## chain: ${c.payloadBytes / MiB} MiB, ${c.hops} hops${steadyLabel(c.steadyProbeMs ?? NaN)}; bw parents from A: in-process ${c.inProcess.bwParents.join(' ')}${c.processes !== undefined ? `, processes ${c.processes.bwParents.join(' ')}` : ''}`)
    out.push('| rep | raw stream MB/s | relay chain MB/s | treecast chain MB/s | chain/raw | 4 procs: raw MB/s | 4 procs: chain MB/s | chain/raw | bw parents after (1 proc / 4) |')
    out.push('|---|---|---|---|---|---|---|---|---|')
    for (const x of c.reps) out.push(`| ${x.rep} | ${f(x.rawMBps)} | ${f(x.relayMBps)} | ${f(x.chainMBps)} | ${f(x.chainMBps / x.rawMBps, 2)} | ${f(x.procRawMBps ?? NaN)} | ${f(x.procChainMBps ?? NaN)} | ${f((x.procChainMBps ?? NaN) / (x.procRawMBps ?? NaN), 2)} | ${x.bwParentsAfter} / ${x.procBwParentsAfter ?? 'n/a'} |`)
    out.push(`| median | ${f(m.rawMBps)} | ${f(m.relayMBps)} | ${f(m.chainMBps)} | ${f(m.chainOverRaw, 2)} | ${f(m.procRawMBps)} | ${f(m.procChainMBps)} | ${f(m.procChainOverProcRaw, 2)} | |`)
    out.push(`per-hop normalised (chain x ${c.hops} / raw): in-process ${f(m.perHopNormalised, 2)}, processes ${f(m.procPerHopNormalised, 2)}; treecast chain / relay chain ${f(m.chainOverRelay, 2)}; relay chain / raw ${f(m.relayOverRaw, 2)}`)
    const cpu = (k: 'raw' | 'relay' | 'chain'): string => f(median(c.reps.map((x) => x.cpuShare[k])), 2)
    const procCpu = (k: 'procRawCpuShare' | 'procChainCpuShare'): string => {
      const per = c.reps[0]?.[k]?.map((_x, i) => f(median(c.reps.map((x) => x[k]?.[i] ?? NaN)), 2))
      return per === undefined ? 'n/a' : per.join(' ')
    }
    out.push(`CPU busy (cores, medians): in-process raw ${cpu('raw')}, relay ${cpu('relay')}, chain ${cpu('chain')}; processes: raw (sender sink) ${procCpu('procRawCpuShare')}, chain (A B C D) ${procCpu('procChainCpuShare')}`)
    out.push(`first touch of a fresh 64 MiB array: ${f(c.firstTouchMsPer64MiB, 0)} ms; chain attempts (bw parents of A B C D): in-process ${c.inProcess.attempts.map((a) => a.join('')).join(', ')}${c.processes !== undefined ? `; processes ${c.processes.attempts.map((a) => a.join('')).join(', ')}` : ''}`)
    out.push('')
  }
  if (r.latency !== undefined) {
    out.push('## 1-byte broadcasts on stable trees (medians)')
    out.push('| network | peers | quiet after s | idle CPU cores | idle loop delay p50 / p99 ms | done ms | CPU ms per broadcast | last delivery ms | depth | hop ms (intra / inter) | probe hop ms | path ms | depth x hop ms | done / path | delivery / path | propagation ms | delivery / propagation | done / 2 x propagation |')
    out.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
    for (const l of r.latency) {
      const m = l.median
      out.push(`| ${l.network} | ${l.peers} | ${f(l.stableMs / 1000, 1)} | ${f(l.idleCpuCores, 2)} | ${f(l.eventLoopDelayMs.idle.p50, 1)} / ${f(l.eventLoopDelayMs.idle.p99, 1)} | ${f(m.doneMs, 2)} | ${f(m.cpuMs, 1)} | ${f(m.deliverMs, 2)} | ${f(m.depth, 1)} | ${f(l.hopMs.intra, 3)} / ${f(l.hopMs.inter, 2)} | ${f(l.probeHopMs, 2)} | ${f(m.pathMs, 2)} | ${f(m.depthTimesHopMs, 2)} | ${f(m.doneOverPath, 2)} | ${f(m.deliverOverPath, 2)} | ${f(m.propagationMs, 0)} | ${f(m.deliverOverPropagation, 2)} | ${f(m.doneOverTwicePropagation, 2)} |`)
    }
    out.push('')
  }
  if (r.memory !== undefined) {
    out.push('## memory (fresh process each; MB per peer, KB per connection end)')
    out.push('| kind | N | started: RSS / heap MB per peer | stable: RSS / heap MB per peer | connection ends | per end: RSS / heap KB | quiet after s |')
    out.push('|---|---|---|---|---|---|---|')
    for (const x of r.memory) {
      out.push(`| ${x.kind} | ${x.n} | ${f(x.startedPerPeer.rssMB, 2)} / ${f(x.startedPerPeer.heapMB, 2)} | ${f(x.stablePerPeer.rssMB, 2)} / ${f(x.stablePerPeer.heapMB, 2)} | ${x.connectionEnds} | ${f(x.perConnectionEnd.rssKB, 0)} / ${f(x.perConnectionEnd.heapKB, 0)} | ${f(x.stableMs / 1000, 1)} |`)
    }
  }
  console.log(out.join('\n'))
}
