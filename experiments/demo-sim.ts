/**
 * `npm run demo:sim`: a simulated demo of treecast. 48 peers in 4 clusters build their trees,
 * broadcast short and long payloads, reduce, and keep every collective exact while one
 * peer leaves gracefully, one crashes and two join. Runs in virtual time, in seconds.
 * (`npm start` runs the real-network demo on libp2p: experiments/demo.ts.) It takes no
 * options but --help; anything else exits 2, as the sim CLI's bad usage does. Exits 1 when
 * a check failed.
 */
import { Command } from 'commander'
import { Simulation } from './sim/simulation.ts'
import { summarize } from './sim/report.ts'
import type { Scenario } from './sim/scenario.ts'

const scenario: Scenario = {
  name: 'demo',
  seed: 7,
  topology: {
    clusters: [{ name: 'tokyo', peers: 13 }, { name: 'osaka', peers: 13 }, { name: 'kyoto', peers: 12 }, { name: 'nagoya', peers: 12 }],
    intraRttMs: 0.3,
    interRttMs: 6
  },
  initialPeers: 48,
  vnodes: 256,
  until: 20_000,
  schedule: [
    { at: 8000, do: 'broadcast', root: 'p0000', bytes: 1 },
    { at: 8100, do: 'broadcast', root: 'p0020', bytes: 4 * 1024 * 1024 },
    { at: 9000, do: 'reduce', root: 'p0030', op: 'sum', length: 1024 },
    { at: 10_000, do: 'leave', count: 1 },
    { at: 10_000, do: 'broadcast', root: 'p0000', bytes: 64 * 1024 },
    { at: 11_000, do: 'crash', count: 1 },
    { at: 11_001, do: 'broadcast', root: 'p0020', bytes: 1024 * 1024 },
    { at: 11_002, do: 'reduce', root: 'p0030', op: 'max', length: 16 },
    { at: 13_000, do: 'join', peers: ['p0048', 'p0049'] },
    { at: 17_000, do: 'broadcast', root: 'p0000', bytes: 1 },
    { at: 17_100, do: 'reduce', root: 'p0030', op: 'sum', length: 1 }
  ]
}

new Command()
  // Bad usage exits 2 (commander's own default is 1), --help 0.
  .exitOverride((err) => { process.exit(err.exitCode === 0 ? 0 : 2) })
  .name('npm run demo:sim')
  .usage('[-- --help]')
  .description('A simulated demo of treecast: 48 peers in 4 clusters build their trees, broadcast, reduce, and keep every collective exact while one peer leaves, one crashes and two join. Runs in virtual time, in seconds; exits 1 if a check failed. For your own scenarios: npm run sim -- <scenario.json>.')
  .showHelpAfterError()
  .parse()

console.log('treecast demo: 48 simulated peers in 4 clusters (RTT 0.3 ms inside, 6 ms between)')
console.log('schedule: broadcasts of 1 B, 64 KB, 1 MB and 4 MB; reductions; a leave at 10 s, a crash at 11 s, two joins at 13 s\n')
const started = performance.now()
const report = new Simulation(scenario).run()
console.log(summarize(report, performance.now() - started))
if (report.violations.length > 0 || report.totals.lostDeliveries > 0 || report.totals.duplicates > 0) process.exitCode = 1
