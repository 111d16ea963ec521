/**
 * `npm start`: the real thing. 18 treecast peers run in this process on loopback over TCP
 * (Noise, Yamux), in 4 clusters whose wide-area links are emulated (6 to 40 ms RTT, shared
 * 12.5 to 50 MB/s links). They found an overlay, build their latency and bandwidth trees,
 * broadcast short and long payloads, reduce, and stay exact while one peer leaves
 * gracefully, one crashes and two join. A live log shows trees, deliveries and timings;
 * the run ends by itself (25 to 60 s on two cores) and exits 0 when every check held.
 */
import { runLive } from './net/run-live.ts'
import { summarize } from './sim/report.ts'
import type { Scenario } from './sim/scenario.ts'

const MB = 1024 * 1024
const scenario: Scenario = {
  name: 'demo-live',
  seed: 7,
  topology: {
    clusters: [{ name: 'tokyo', peers: 5 }, { name: 'osaka', peers: 5 }, { name: 'paris', peers: 4 }, { name: 'lyon', peers: 4 }],
    intraRttMs: 0.3,
    // tokyo-osaka and paris-lyon are close; Japan-France is far.
    interRttMs: [[0, 8, 40, 40], [8, 0, 40, 40], [40, 40, 0, 6], [40, 40, 6, 0]],
    wanLinkBytesPerSec: [[0, 50e6, 12.5e6, 12.5e6], [50e6, 0, 12.5e6, 12.5e6], [12.5e6, 12.5e6, 0, 50e6], [12.5e6, 12.5e6, 50e6, 0]]
  },
  initialPeers: 16,
  vnodes: 64,
  until: 14_000,
  drainMs: 15_000,
  schedule: [
    { at: 0, do: 'broadcast', root: 'p0000', bytes: 1 },
    { at: 500, do: 'broadcast', root: 'p0010', bytes: 64 * 1024 },
    { at: 1000, do: 'broadcast', root: 'p0005', bytes: 4 * MB },
    { at: 3000, do: 'reduce', root: 'p0003', op: 'sum', length: 1024 },
    { at: 4000, do: 'leave', peers: ['p0007'] },
    { at: 5000, do: 'crash', peers: ['p0012'] },
    { at: 5100, do: 'broadcast', root: 'p0000', bytes: 1 * MB },
    { at: 7000, do: 'join', peers: ['p0016', 'p0017'] },
    { at: 11_000, do: 'broadcast', root: 'p0016', bytes: 1000 },
    { at: 11_500, do: 'reduce', root: 'p0015', op: 'max', length: 16 },
    { at: 12_000, do: 'broadcast', root: 'p0001', bytes: 2 * MB }
  ]
}

console.log('treecast demo: 16 real libp2p peers (TCP + Noise + Yamux) in 4 emulated clusters; 2 more join later')
console.log('clusters: tokyo p0000-p0004, osaka p0005-p0009, paris p0010-p0013, lyon p0014-p0015 (+p0016, p0017 join)')
const started = performance.now()
// The schedule's clock starts once the founders' trees are first stable.
const report = await runLive(scenario, scenario.seed, (line) => { console.log(line) }, { startAfterStableMaxMs: 60_000 })
console.log('')
console.log(summarize(report, performance.now() - started).replace(/\n {2}(broadcast|reduction) \/ip4\/[^ ]+/g, '\n  $1'))
process.exit(report.violations.length === 0 && report.totals.lostDeliveries === 0 ? 0 : 1)
