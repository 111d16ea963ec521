/**
 * Scenario files are checked before a run (experiments/sim/scenario.ts): a field the format
 * does not have, a value of the wrong type, a peer or cluster the topology lacks, or a bad
 * topology or core option is an InvalidScenarioError naming it (the CLI exits 2). Before,
 * a misspelt selector (`peer` for `peers`) selected every running peer, and an unknown
 * peer name or cluster selected nobody, both without a word.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { InvalidScenarioError, parseScenario, type Scenario } from '../experiments/sim/scenario.ts'
import { Simulation } from '../experiments/sim/simulation.ts'
import { isTreeRoot } from '../overlay/tree-roots.ts'

const base = (): Record<string, unknown> => ({
  name: 't',
  seed: 1,
  topology: { clusters: [{ name: 'a', peers: 3 }, { name: 'b', peers: 3 }] },
  until: 1000,
  schedule: [{ at: 100, do: 'broadcast', root: 'p0000', bytes: 1 }]
})

/** `change` applied to a valid scenario must be rejected with a message matching `says`. */
function rejects (change: (s: Record<string, unknown>) => void, says: RegExp): void {
  const s = base()
  change(s)
  let err: unknown
  try { parseScenario(s) } catch (e) { err = e }
  expect(err, JSON.stringify(s)).toBeInstanceOf(InvalidScenarioError)
  expect((err as Error).message).toMatch(says)
}
const action = (a: Record<string, unknown>) => (s: Record<string, unknown>): void => { s.schedule = [a] }

describe('parseScenario', () => {
  it('accepts every scenario shipped in experiments/scenarios', () => {
    const dir = new URL('../experiments/scenarios/', import.meta.url)
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'))
    expect(files.length).toBeGreaterThan(10)
    for (const f of files) expect(() => parseScenario(JSON.parse(readFileSync(new URL(f, dir), 'utf8'))), f).not.toThrow()
  })

  it('rejects fields it does not know, at every level', () => {
    rejects((s) => { s.sead = 2 }, /^sead is not a scenario field/)
    rejects(action({ at: 1, do: 'crash', peer: ['p0001'] }), /^schedule\[0\]\.peer is not a field of a crash \(at, do, peers, count, fraction, cluster\)/)
    rejects(action({ at: 1, do: 'broadcast', bytes: 1, rejoin: true }), /schedule\[0\]\.rejoin is not a field of a broadcast/)
    rejects((s) => { (s.topology as Record<string, unknown>).intraRtMs = 1 }, /^topology: intraRtMs is not a topology field/)
    rejects((s) => { s.topology = { clusters: [{ name: 'a', peers: 2, size: 3 }] } }, /^topology: clusters\[0\]\.size is not a cluster field/)
    rejects((s) => { s.core = { probeBytez: 5 } }, /^core: probeBytez is not a core option/)
  })

  it('rejects peers and clusters the topology does not have', () => {
    rejects(action({ at: 1, do: 'crash', peers: ['p0001', 'p0006'] }), /peers names 'p0006', not a peer of the topology \(p0000\.\.p0005\)/)
    rejects(action({ at: 1, do: 'leave', count: 1, cluster: 'c' }), /cluster must name a cluster of the topology \(a, b\), got "c"/)
    rejects(action({ at: 1, do: 'broadcast', root: 'p9', bytes: 1 }), /root must be 'random' or a peer of the topology/)
    rejects((s) => { s.initialPeers = 7 }, /initialPeers must be an integer in 1\.\.6/)
  })

  it('rejects values of the wrong type or range, naming the field', () => {
    rejects(action({ at: 1, do: 'leave', fraction: 1.5 }), /schedule\[0\]\.fraction must be a number in \[0, 1\]/)
    rejects(action({ at: 1, do: 'crash', count: 1.5 }), /schedule\[0\]\.count must be an integer/)
    rejects(action({ at: 1, do: 'broadcast', bytes: 1, tree: 'fast' }), /tree must be 'auto', 'lat' or 'bw'/)
    rejects(action({ at: 1, do: 'reduce', op: 'avg' }), /op must be one of sum, prod, min, max/)
    rejects(action({ at: 1, do: 'join', peers: 'left', rejoin: 'yes' }), /rejoin must be a boolean/)
    rejects(action({ at: 1, do: 'broadcast', bytes: 1, backToBack: 1 }), /backToBack must be a boolean/)
    rejects(action({ at: 1, do: 'broadcast' }), /bytes must be an integer in 0\.\./)
    rejects(action({ at: -1, do: 'crash', count: 1 }), /at must be a finite number >= 0/)
    rejects(action({ at: 1, do: 'explode' }), /do must be one of broadcast, reduce, send, leave, crash, join/)
    rejects((s) => { s.vnodes = 0 }, /vnodes must be an integer in 1\.\.2\^31/)
    rejects((s) => { s.vnodes = 1e10 }, /vnodes must be an integer in 1\.\.2\^31/)
    rejects((s) => { s.wireCheck = 'on' }, /wireCheck must be a boolean/)
    rejects((s) => { s.core = [] }, /core must be an object/)
    rejects((s) => { s.until = Infinity }, /until must be a finite number > 0/)
    rejects((s) => { s.topology = { clusters: [] } }, /^topology: clusters must be a non-empty array/)
  })

  it('rejects fields that the action would ignore', () => {
    rejects(action({ at: 1, do: 'broadcast', bytes: 1, backToBack: true, every: 10 }), /schedule\[0\]\.every does not apply with backToBack/)
    rejects(action({ at: 1, do: 'broadcast', bytes: 1, until: 500 }), /schedule\[0\]\.until applies only with every or backToBack/)
    rejects(action({ at: 1, do: 'crash', peers: ['p0001'], count: 1 }), /schedule\[0\]: count, fraction and cluster do not apply to a list of peers/)
    rejects(action({ at: 1, do: 'join', peers: ['p0001'], cluster: 'a' }), /do not apply to a list of peers/)
    expect(() => parseScenario({ ...base(), schedule: [{ at: 1, do: 'join', peers: 'left', count: 1, cluster: 'a' }, { at: 2, do: 'broadcast', bytes: 1, backToBack: true, until: 500 }] })).not.toThrow()
  })

  it('checks a send: its sender, virtual node and size', () => {
    expect(() => parseScenario({ ...base(), schedule: [{ at: 1, do: 'send', from: 'p0001', vnode: 5, bytes: 10, every: 5, count: 3 }] })).not.toThrow()
    expect(() => parseScenario({ ...base(), schedule: [{ at: 1, do: 'send', vnode: 'random', bytes: 0 }] })).not.toThrow()
    rejects(action({ at: 1, do: 'send', vnode: 6, bytes: 1 }), /schedule\[0\]\.vnode must be 'random' or an integer in 0\.\.5 \(the scenario's virtual nodes\), got 6/)
    rejects((s) => { s.vnodes = 100; s.schedule = [{ at: 1, do: 'send', vnode: 100, bytes: 1 }] }, /vnode must be 'random' or an integer in 0\.\.99/)
    rejects((s) => { s.initialPeers = 4; s.schedule = [{ at: 1, do: 'send', vnode: 4, bytes: 1 }] }, /vnode must be 'random' or an integer in 0\.\.3/)
    rejects(action({ at: 1, do: 'send', vnode: 1.5, bytes: 1 }), /vnode must be/)
    rejects(action({ at: 1, do: 'send', from: 'p0009', bytes: 1 }), /schedule\[0\]\.from must be 'random' or a peer of the topology/)
    rejects(action({ at: 1, do: 'send', vnode: 1 }), /bytes must be an integer in 0\.\./)
    rejects(action({ at: 1, do: 'send', root: 'p0001', bytes: 1 }), /schedule\[0\]\.root is not a field of a send \(at, do, from, vnode, bytes, every, count\)/)
  })

  it('rejects what the core would refuse mid-run (the run used to stop with a stack trace)', () => {
    rejects(action({ at: 1, do: 'reduce', root: 'p0000', op: 'sum', length: 0 }), /length must be an integer in 1\.\.16777216 \(core maxReduceLength\)/)
    rejects((s) => { s.core = { maxReduceLength: 8 }; s.schedule = [{ at: 1, do: 'reduce', length: 9 }] }, /length must be an integer in 1\.\.8/)
    rejects(action({ at: 1, do: 'broadcast', bytes: 2 ** 31 }), /bytes must be an integer in 0\.\.1073741824 \(core maxPayloadBytes\)/)
    // Under a stride a collective reduction needs a tree root as its root; every call was refused and it never completed.
    const noTrees = ['p0000', 'p0001', 'p0002', 'p0003', 'p0004', 'p0005'].find((p) => !isTreeRoot(p, 3)) as string
    rejects((s) => { s.core = { treeRootStride: 3 }; s.schedule = [{ at: 1, do: 'reduce', root: noTrees, op: 'sum', length: 2, collective: true }] }, /roots no trees \(treeRootStride 3\): a collective reduction's root must be a tree root/)
  })

  it('rejects actions that would be dropped or run once without a word', () => {
    rejects(action({ at: 1001, do: 'broadcast', root: 'p0000', bytes: 1 }), /schedule\[0\]\.at \(1001\) is after until \(1000\): it would never run/)
    rejects(action({ at: 1, do: 'broadcast', bytes: 1, every: 100, count: 0 }), /schedule\[0\]\.count must be an integer >= 1/)
    rejects(action({ at: 1, do: 'reduce', every: 0, count: 3 }), /schedule\[0\]\.every must be a number > 0/)
    rejects(action({ at: 1, do: 'send', bytes: 1, every: 10, count: 0 }), /schedule\[0\]\.count must be an integer >= 1/)
    expect(() => parseScenario({ ...base(), schedule: [{ at: 1000, do: 'crash', count: 0 }] })).not.toThrow()
  })

  it('a join with no running peer to join through is an InvalidScenarioError, not a stack trace from the random pick', () => {
    const s = { ...base(), initialPeers: 2, schedule: [{ at: 100, do: 'crash', fraction: 1 }, { at: 200, do: 'join', peers: ['p0002'] }] }
    expect(() => new Simulation(s as unknown as Scenario).run()).toThrow(/join at 200 ms: no running peer to join through/)
    expect(() => new Simulation(s as unknown as Scenario).run()).toThrow(InvalidScenarioError)
  })

  it('a collective reduction with a random root picks a tree root (a peer rooting no trees made every call fail, and it never ended)', () => {
    for (let seed = 1; seed <= 6; seed++) {
      const s = { ...base(), topology: { clusters: [{ name: 'a', peers: 6 }] }, core: { treeRootStride: 3 }, until: 3000, schedule: [{ at: 1000, do: 'reduce', root: 'random', collective: true }] }
      const r = new Simulation(s as unknown as Scenario, seed).run()
      expect(r.reductions[0]?.correct, `seed ${seed}`).toBe(true)
      expect(isTreeRoot(r.reductions[0]?.root as string, 3)).toBe(true)
    }
  })

  it('a scenario built in code is checked when a Simulation is made of it', () => {
    const s = base()
    s.schedule = [{ at: 1, do: 'crash', peer: ['p0001'] }]
    expect(() => new Simulation(s as unknown as Scenario)).toThrow(InvalidScenarioError)
    expect(new Simulation(base() as unknown as Scenario).run().totals.broadcastsComplete).toBe(1)
  })
})
