/**
 * The worker thread of one partition (experiments/sim/parallel/parallel-simulation.ts):
 * it answers the coordinator's window orders until told to finish.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { PartitionSim, type Crossing } from './partition-sim.ts'
import type { Scenario } from '../scenario.ts'

/** An order from the coordinator. */
export type PartitionOrder =
  | { t: 'start' }
  | { t: 'window', crossings: Crossing[], endMs: number, inclusive: boolean, quiet: boolean, untilMs?: number }
  | { t: 'quiet' }
  | { t: 'finish' }

const port = parentPort
if (port === null) throw new Error('partition-worker.ts runs as a worker thread')
const { scenario, seed, index, count } = workerData as { scenario: Scenario, seed: number, index: number, count: number }
const sim = new PartitionSim(scenario, seed, index, count)

let busyMs = 0
port.on('message', (order: PartitionOrder) => {
  const t0 = performance.now()
  try {
    switch (order.t) {
      case 'start':
        sim.start()
        port.postMessage({ next: sim.runWindow(-Infinity, false), crossings: sim.takeExports(), records: sim.takeRecords() })
        return
      case 'window': {
        sim.importCrossings(order.crossings)
        const next = sim.runWindow(order.endMs, order.inclusive, order.untilMs)
        const crossings = sim.takeExports()
        const busy = performance.now() - t0
        busyMs += busy
        port.postMessage({ next, crossings, records: sim.takeRecords(), quiet: order.quiet ? sim.quietPart() : undefined, busy })
        return
      }
      case 'quiet':
        port.postMessage({ quiet: sim.quietPart() })
        return
      case 'finish':
        port.postMessage({ result: { ...sim.result(), busyMs, heapUsedBytes: process.memoryUsage().heapUsed } })
    }
  } catch (err) {
    port.postMessage({ error: err instanceof Error ? `${err.message}\n${err.stack ?? ''}` : String(err) })
  }
})
