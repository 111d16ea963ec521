/**
 * A seeded fuzz of tree tables (trees/tree-table.ts) as the core uses them: every live
 * member roots both trees, peers probe each other (real probe entries, jittered RTTs and
 * bandwidths between two clusters), links are FIFO but interleave at random, ops of one
 * input travel as one message per neighbour (overlay/tree-outbox.ts), time advances, and
 * peers crash, restart unnoticed, leave (handling ops while leaving), join and move virtual
 * nodes. Each peer learns of a death, leave, join or restart on its own, later; ops from a
 * peer it holds dead are dropped (adopts and reaches answered with a disown), ops from a
 * peer it does not know likewise (overlay/strangers.ts).
 *
 * Checked after every step: no cycle among running peers. Once quiet (faults stopped,
 * every change known, links drained, parentless peers probed): every live peer has a parent
 * in every tree, parents and children agree, reach sets equal the subtrees' ownership,
 * cluster entries match the tree (`farRttMs`), distances match the parent's (`strict`), no
 * lock is held and (`noUnanswered`) no tree waits for an answer.
 *
 * A failure's log (FuzzFailure.log) lists parent changes, faults and what peers learnt;
 * `trace` adds the ops it selects, sent and delivered.
 */
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { TreeTable, type TreeHost } from '../trees/tree-table.ts'
import { ROOT_EST_BYTES_PER_SEC } from '../trees/parent-rules.ts'
import type { TreeKind } from '../trees/tree-kind.ts'
import { disownsFor, type TreeOp } from '../trees/tree-ops.ts'
import { firstNumberOf, numberedBy } from '../overlay/incarnation-numbers.ts'
import { strangerDisowns } from '../overlay/strangers.ts'
import { isTreeRoot } from '../overlay/tree-roots.ts'
import { mulberry32 } from './core-loop.ts'

interface Msg { from: PeerId, to: PeerId, ops: TreeOp[], inc: number }
type Status = 'alive' | 'dead' | 'left'
interface News { who: PeerId, peer: PeerId, inc: number, status: Status }

export interface FuzzOptions {
  peers?: number
  steps?: number
  lockTimeoutMs?: number
  tieTolerance?: number
  crashes?: boolean
  restarts?: boolean
  leaves?: boolean
  joins?: boolean
  moves?: boolean
  /**
   * Drop ops of an incarnation that arrive at a peer that knows a newer one (as if messages
   * carried it; they do not). Off, an adopt or reach the old incarnation sent before it
   * crashed, arriving after the restart is known, leaves a child that points elsewhere.
   */
  dropOldIncarnations?: boolean
  /** Links from this RTT on are far: bandwidth trees report their cluster entries (checked once quiet). */
  farRttMs?: number
  /** overlay/tree-roots.ts: only about one peer in this many roots trees (default 1: all). */
  treeRootStride?: number
  /** The bandwidth trees' child limit (0: none). */
  bwMaxChildren?: number
  /** Share of probe replies that are stale: the candidate looks as good as the root (default 0.3). */
  staleReplies?: number
  /** Time advances by up to this at a time (default a quarter of the lock timeout). */
  timeStepMs?: number
  /** Once quiet, no tree may still wait for an answer (unanswered: it would never be a leaf again). */
  noUnanswered?: boolean
  /** Ops to log as delivered. */
  trace?: (op: TreeOp) => boolean
  /** Check metrics against the parent's once quiet (latency trees; bandwidth trees too with strictBw). */
  strict?: boolean
  strictBw?: boolean
}

export class FuzzFailure extends Error {
  constructor (message: string, readonly log: string[]) { super(message) }
}

/** Runs one seed; throws FuzzFailure with a description on the first violation. */
export function runTreeFuzz (seed: number, opts: FuzzOptions = {}): { commits: number, log: string[] } {
  const rnd = mulberry32(seed)
  const int = (n: number): number => Math.floor(rnd() * n)
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T
  const nPeers = opts.peers ?? 4 + int(4)
  const steps = opts.steps ?? 400
  const lockTimeoutMs = opts.lockTimeoutMs ?? 50
  const tie = opts.tieTolerance ?? (rnd() < 0.5 ? 0 : 0.05)
  const names: PeerId[] = []
  for (let i = 0; i < nPeers + 3; i++) names.push(`p${i}` as PeerId)
  const cluster = (p: PeerId): number => Number(p.slice(1)) % 2
  const log: string[] = []
  const fail = (msg: string): never => { throw new FuzzFailure(`seed ${seed}: ${msg}`, log) }

  const tables = new Map<PeerId, TreeTable>()
  const owned = new Map<PeerId, IntervalSet>()
  /** Each running peer's view: status and incarnation of every member it knows. */
  const view = new Map<PeerId, Map<PeerId, { status: Status, inc: number }>>()
  /** Running peers (leaving ones included), with their incarnation. */
  const up = new Map<PeerId, number>()
  /** Leaving peers (frozen, still handling ops), steps left before they go. */
  const leaving = new Map<PeerId, number>()
  /** Crashed peers that may restart, with their last incarnation. */
  const crashed = new Map<PeerId, number>()
  /** The truth: each peer's latest incarnation and status. */
  const truth = new Map<PeerId, { status: Status, inc: number }>()
  const links = new Map<string, Msg[]>()
  const outbox = new Map<PeerId, Map<PeerId, TreeOp[]>>()
  const news: News[] = []
  let now = 0
  let commits = 0

  const post = (p: PeerId): void => {
    const box = outbox.get(p)
    if (box === undefined || box.size === 0) return
    outbox.set(p, new Map())
    for (const [to, ops] of box) {
      const key = `${p}>${to}`
      let l = links.get(key)
      if (l === undefined) { l = []; links.set(key, l) }
      const inc = up.get(p) ?? 0
      // One message per neighbour and input, as overlay/tree-outbox.ts sends them: the leaf
      // argument (trees/tree-table.ts) needs an unlock and its adoption handled together.
      l.push({ from: p, to, ops, inc })
    }
  }

  const makeTable = (p: PeerId, inc: number): TreeTable => {
    const host: TreeHost = {
      self: p,
      owned: () => owned.get(p) ?? IntervalSet.EMPTY,
      isAlive: (q) => q === p || view.get(p)?.get(q)?.status === 'alive',
      sendOp: (to, op) => {
        if (opts.trace?.(op) === true) log.push(`${now} SEND ${p}>${to} ${JSON.stringify(op)}`)
        let box = outbox.get(p)
        if (box === undefined) { box = new Map(); outbox.set(p, box) }
        let l = box.get(to)
        if (l === undefined) { l = []; box.set(to, l) }
        l.push(op)
      },
      parentChanged: (kind, root, parent) => { if (parent !== null) commits++; log.push(`${now} ${p} ${kind}:${root} parent=${parent}`) },
      farRttMs: () => opts.farRttMs ?? Infinity,
      isTreeRoot: (q) => isTreeRoot(q, opts.treeRootStride ?? 1),
      // A restarted peer: full checks until every peer knows its old incarnation is gone (the core: a failure detection timeout).
      mayShortCheck: () => inc === 0 || !news.some((n) => n.peer === p)
    }
    const t = new TreeTable(host, lockTimeoutMs, tie, opts.bwMaxChildren ?? 0)
    t.numberFrom(firstNumberOf(inc))
    return t
  }

  const input = (p: PeerId, f: (t: TreeTable) => void): void => {
    const t = tables.get(p) as TreeTable
    f(t)
    t.flush()
    post(p)
  }

  const start = (p: PeerId, inc: number, members: Map<PeerId, { status: Status, inc: number }>): void => {
    up.set(p, inc)
    truth.set(p, { status: 'alive', inc })
    const v = new Map(members)
    v.set(p, { status: 'alive', inc })
    view.set(p, v)
    tables.set(p, makeTable(p, inc))
    input(p, (t) => { for (const [m, s] of v) if (s.status === 'alive') t.ensureRoot(m) })
  }

  let vnodeNext = 0
  const initial = names.slice(0, nPeers)
  for (const p of initial) { owned.set(p, IntervalSet.range(vnodeNext, vnodeNext + 10)); vnodeNext += 10 }
  const initialView = new Map(initial.map((p) => [p, { status: 'alive' as Status, inc: 0 }]))
  for (const p of initial) start(p, 0, initialView)
  let nextJoiner = nPeers

  const rtt = (a: PeerId, b: PeerId): number => (cluster(a) === cluster(b) ? 1 : 20) * (0.8 + 0.4 * rnd())
  const bw = (a: PeerId, b: PeerId): number => (cluster(a) === cluster(b) ? 1e8 : 1e6) * (0.5 + rnd())
  const running = (): PeerId[] => [...up.keys()].filter((p) => !leaving.has(p))

  const deliver = (key: string): void => {
    const m = links.get(key)?.shift()
    if (m === undefined || !up.has(m.to)) return
    const known = view.get(m.to)?.get(m.from)
    // Option: what an incarnation sent is dropped where a newer one is known (as if ops carried it).
    if (opts.dropOldIncarnations === true && known !== undefined && known.inc > m.inc) return
    if (known?.status !== 'alive' && known?.status !== 'left') {
      if (opts.trace !== undefined) for (const op of m.ops) if (opts.trace(op)) log.push(`${now} ${m.from}>${m.to} DROPPED ${JSON.stringify(op)}`)
      // overlay/core.ts: a dead member's (or a stranger's) tree ops are dropped; its adopts and reaches are disowned (a stranger's disowns answered).
      input(m.to, () => {
        const back = known === undefined ? strangerDisowns({ t: 'tree', ops: m.ops }) : disownsFor(m.ops)
        if (back.length > 0) {
          const k = `${m.to}>${m.from}`
          let l = links.get(k)
          if (l === undefined) { l = []; links.set(k, l) }
          l.push({ from: m.to, to: m.from, ops: back, inc: up.get(m.to) ?? 0 })
        }
      })
      return
    }
    if (opts.trace !== undefined) for (const op of m.ops) if (opts.trace(op)) log.push(`${now} ${m.from}>${m.to} ${JSON.stringify(op)}`)
    input(m.to, (t) => { for (const op of m.ops) t.handleOp(now, m.from, op) })
  }

  /** A peer learns a member fact (overlay/ownership-engine.ts memberChanged). */
  const learn = (n: News): void => {
    if (!up.has(n.who) || n.who === n.peer) return
    const v = view.get(n.who) as Map<PeerId, { status: Status, inc: number }>
    const was = v.get(n.peer)
    if (was !== undefined && (n.inc < was.inc || (n.inc === was.inc && (was.status !== 'alive' || n.status === 'alive')))) return
    v.set(n.peer, { status: n.status, inc: n.inc })
    log.push(`${now} ${n.who} learns ${n.peer} ${n.status} inc ${n.inc}`)
    input(n.who, (t) => {
      if (n.status === 'alive') {
        if (was?.status === 'alive') {
          // A newer incarnation of a peer held alive: the old one's death first, as a restart.
          t.removeRoot(n.peer)
          t.peerGone(n.peer, { keepsCheck: (id) => numberedBy(id, n.inc) })
        }
        t.ensureRoot(n.peer)
      } else if (was?.status === 'alive') {
        t.removeRoot(n.peer)
        t.peerGone(n.peer, n.status)
      }
    })
  }

  const tell = (peer: PeerId, status: Status, inc: number, except?: PeerId): void => {
    for (const q of up.keys()) if (q !== peer && q !== except) news.push({ who: q, peer, inc, status })
  }

  const probe = (p: PeerId, cand: PeerId): void => {
    const c = tables.get(cand) as TreeTable
    // Sometimes the reply is stale (the candidate has since moved deep): it looks as good as a root.
    const wild = rnd() < (opts.staleReplies ?? 0.3)
    const entries = wild ? c.probeEntries().map((e) => ({ ...e, dist: e.dist < 0 ? e.dist : 0, est: e.est < 0 ? e.est : ROOT_EST_BYTES_PER_SEC })) : c.probeEntries()
    input(p, (t) => { t.judge(now, cand, wild ? 0.01 : rtt(p, cand), rnd() < 0.8 ? (wild ? 1e15 : bw(p, cand)) : undefined, entries) })
  }

  const checkAcyclic = (where: string): void => {
    for (const p of up.keys()) {
      for (const st of (tables.get(p) as TreeTable).all()) {
        const seen = [p]
        let cur = st.parent
        while (cur !== null && up.has(cur)) {
          if (seen.includes(cur)) fail(`cycle in ${st.kind}:${st.root}: ${[...seen, cur].join(' -> ')} ${where}`)
          seen.push(cur)
          cur = (tables.get(cur) as TreeTable).get(st.kind, st.root)?.parent ?? null
        }
      }
    }
  }

  const changeOwned = (p: PeerId, s: IntervalSet): void => {
    owned.set(p, s)
    if (up.has(p)) input(p, (t) => { t.ownedChanged() })
  }
  const takeOver = (lost: IntervalSet, except: PeerId): void => {
    const succ = pick(running().filter((q) => q !== except))
    changeOwned(succ, (owned.get(succ) as IntervalSet).union(lost))
  }

  for (let step = 0; step < steps; step++) {
    for (const [p, left] of leaving) {
      if (left > 0) { leaving.set(p, left - 1); continue }
      leaving.delete(p)
      up.delete(p)
      log.push(`${now} GONE ${p}`)
    }
    const r = rnd()
    const busy = [...links].filter(([, l]) => l.length > 0).map(([k]) => k)
    if (r < 0.5 && busy.length > 0) deliver(pick(busy))
    else if (r < 0.75) {
      const p = pick(running())
      const cands = [...(view.get(p) ?? [])].filter(([q, s]) => q !== p && s.status === 'alive' && up.has(q) && truth.get(q)?.inc === up.get(q)).map(([q]) => q)
      if (cands.length > 0) probe(p, pick(cands))
    } else if (r < 0.85) now += int(opts.timeStepMs ?? lockTimeoutMs / 4)
    else if (r < 0.9 && news.length > 0) learn(news.splice(int(news.length), 1)[0] as News)
    else if (r < 0.93 && opts.crashes !== false && running().length > 3) {
      const p = pick(running())
      const inc = up.get(p) as number
      up.delete(p)
      outbox.delete(p)
      // What was on the wire to it is lost with its connections.
      for (const [k, l] of links) if (k.endsWith(`>${p}`)) l.length = 0
      crashed.set(p, inc)
      truth.set(p, { status: 'dead', inc })
      const lost = owned.get(p) as IntervalSet
      owned.delete(p)
      log.push(`${now} CRASH ${p}`)
      tell(p, 'dead', inc)
      takeOver(lost, p)
    } else if (r < 0.95 && opts.restarts !== false && crashed.size > 0) {
      // A crashed peer restarts with a newer incarnation, through a contact: maybe before anyone noticed the crash.
      const [p, inc] = pick([...crashed])
      crashed.delete(p)
      const contact = pick(running())
      const mine = (owned.get(contact) as IntervalSet)
      const half = mine.size > 1 ? IntervalSet.fromRanges(mine.ranges.slice(0, 1)) : IntervalSet.EMPTY
      owned.set(p, IntervalSet.EMPTY)
      log.push(`${now} RESTART ${p} as ${inc + 1} via ${contact}`)
      // The join goes on the link to the contact, behind what the old incarnation sent there.
      while ((links.get(`${p}>${contact}`)?.length ?? 0) > 0) deliver(`${p}>${contact}`)
      learn({ who: contact, peer: p, inc: inc + 1, status: 'alive' })
      start(p, inc + 1, view.get(contact) as Map<PeerId, { status: Status, inc: number }>)
      changeOwned(contact, mine.difference(half))
      changeOwned(p, half)
      tell(p, 'alive', inc + 1, contact)
    } else if (r < 0.97 && opts.leaves !== false && running().length > 3) {
      const p = pick(running())
      log.push(`${now} LEAVE ${p}`)
      input(p, (t) => { t.leaveAll() })
      leaving.set(p, int(30))
      truth.set(p, { status: 'left', inc: up.get(p) as number })
      const lost = owned.get(p) as IntervalSet
      changeOwned(p, IntervalSet.EMPTY)
      owned.delete(p)
      takeOver(lost, p)
      tell(p, 'left', up.get(p) as number)
    } else if (r < 0.98 && opts.joins !== false && nextJoiner < names.length) {
      const j = names[nextJoiner++] as PeerId
      const contact = pick(running())
      const cs = owned.get(contact) as IntervalSet
      const half = cs.size > 1 ? IntervalSet.fromRanges(cs.ranges.slice(0, 1)) : IntervalSet.EMPTY
      owned.set(j, IntervalSet.EMPTY)
      log.push(`${now} JOIN ${j} via ${contact}`)
      learn({ who: contact, peer: j, inc: 0, status: 'alive' })
      start(j, 0, view.get(contact) as Map<PeerId, { status: Status, inc: number }>)
      changeOwned(contact, cs.difference(half))
      changeOwned(j, half)
      tell(j, 'alive', 0, contact)
    } else if (opts.moves !== false) {
      const a = pick(running())
      const b = pick(running())
      const s = owned.get(a) as IntervalSet
      if (a !== b && !s.isEmpty) {
        const v = s.min as number
        changeOwned(a, s.difference(IntervalSet.of(v)))
        changeOwned(b, (owned.get(b) as IntervalSet).union(IntervalSet.of(v)))
      }
    }
    checkAcyclic(`at step ${step}`)
  }

  // Quiet: leavers gone, every change known (the membership protocol tells every member of
  // every other), every link drained (FIFO per link, random interleaving).
  for (const p of leaving.keys()) up.delete(p)
  leaving.clear()
  for (const p of up.keys()) {
    for (const [q, s] of truth) if (q !== p) news.push({ who: p, peer: q, ...s })
  }
  const checkMetrics = (when: string): void => {
    if (opts.strict !== true) return
    // Metrics: a distance is the parent's plus the RTT to it; a rate min(parent's, bw / n) (1% slack: closeEnough).
    for (const p of up.keys()) {
      for (const st of (tables.get(p) as TreeTable).all()) {
        if (st.parent === null || (st.kind === 'bw' && opts.strictBw !== true)) continue
        const ps = tables.get(st.parent)?.get(st.kind, st.root)
        if (ps === undefined) continue
        const want = st.kind === 'lat' ? ps.metric + st.parentRttMs : Math.min(ps.metric, (ps.childBw.get(p) ?? NaN) / ps.children.size)
        if (!(Math.abs(st.metric - want) <= 0.011 * Math.abs(want) + 1e-9)) fail(`${p}'s ${st.kind === 'lat' ? 'distance' : 'rate'} in ${st.kind}:${st.root} is ${st.metric}, its parent ${st.parent} says ${want} (${when})`)
      }
    }
  }
  const drain = (where: string): void => {
    for (let i = 0; ; i++) {
      if (i > 200_000) fail(`tree ops never settle ${where}`)
      const busy = [...links].filter(([, l]) => l.length > 0).map(([k]) => k)
      if (busy.length === 0 && news.length === 0) return
      if (news.length > 0 && (busy.length === 0 || rnd() < 0.2)) learn(news.splice(int(news.length), 1)[0] as News)
      else deliver(pick(busy))
      checkAcyclic(where)
    }
  }
  drain('while settling')
  checkMetrics('after the faults')
  // Liveness: faults stopped; parentless peers probe until they have every parent.
  for (let round = 0; round < 60; round++) {
    now += lockTimeoutMs + 1
    for (const p of up.keys()) {
      const t = tables.get(p) as TreeTable
      const cands = [...up.keys()].filter((q) => q !== p)
      if (cands.length > 0 && (t.parentlessCount() > 0 || round < 5)) probe(p, pick(cands))
    }
    drain(`in liveness round ${round}`)
  }
  const held: string[] = []
  for (const p of up.keys()) {
    for (const st of (tables.get(p) as TreeTable).all()) {
      for (const lock of st.locks.values()) if (lock.expiresAt > now) held.push(`${p} ${st.kind}:${st.root} lock ${lock.origin}#${lock.id}`)
      if (st.pending !== null && now - st.pending.sentAt <= lockTimeoutMs) held.push(`${p} ${st.kind}:${st.root} pending to ${st.pending.candidate}`)
      if (opts.noUnanswered === true && st.unanswered.size > 0) held.push(`${p} ${st.kind}:${st.root} unanswered ${[...st.unanswered.keys()].join(',')}`)
    }
  }
  for (const p of up.keys()) {
    const t = tables.get(p) as TreeTable
    for (const st of t.all()) {
      const where = `${st.kind}:${st.root}`
      if (st.root !== p && !up.has(st.root)) fail(`${p} still has trees of ${st.root}, which is gone`)
      if (st.root !== p && st.parent === null) fail(`${p} has no parent in ${where} once quiet (locks ${[...st.locks.keys()].join(',')}, pending ${JSON.stringify(st.pending)}, refused ${JSON.stringify(st.refused)}, unanswered ${[...st.unanswered.keys()].join(',')})`)
      if (st.parent !== null && !up.has(st.parent)) fail(`${p} has gone parent ${st.parent} in ${where}`)
      if (st.parent !== null && (tables.get(st.parent)?.get(st.kind, st.root)?.children.has(p) !== true)) fail(`${p}'s parent ${st.parent} in ${where} does not have it as a child`)
      for (const c of st.children.keys()) {
        if (!up.has(c)) fail(`${p} has gone child ${c} in ${where}`)
        if (tables.get(c)?.get(st.kind, st.root)?.parent !== p) fail(`${p} has child ${c} in ${where}, whose parent is ${tables.get(c)?.get(st.kind, st.root)?.parent}`)
      }
    }
    for (const q of up.keys()) if (isTreeRoot(q, opts.treeRootStride ?? 1) && t.get('lat', q) === undefined) fail(`${p} has no trees of live ${q}`)
  }
  // Reach: each child's reach as its parent holds it is its subtree's ownership.
  const subtree = (p: PeerId, kind: TreeKind, root: PeerId): IntervalSet => {
    const st = tables.get(p)?.get(kind, root)
    const own = owned.get(p) ?? IntervalSet.EMPTY
    return st === undefined ? own : IntervalSet.unionAll([own, ...[...st.children.keys()].map((c) => subtree(c, kind, root))])
  }
  for (const p of up.keys()) {
    for (const st of (tables.get(p) as TreeTable).all()) {
      for (const [c, reach] of st.children) {
        const want = subtree(c, st.kind, st.root)
        if (!reach.equals(want)) fail(`${p} holds reach ${JSON.stringify(reach.ranges)} for child ${c} in ${st.kind}:${st.root}, its subtree owns ${JSON.stringify(want.ranges)}`)
      }
    }
  }
  checkMetrics('once quiet')
  if (opts.farRttMs !== undefined) {
    // Cluster entries: every peer whose link to its bandwidth-tree parent is far, with its subtree's virtual nodes not below a deeper entry.
    const entriesBelow = (p: PeerId, root: PeerId, out: Map<PeerId, IntervalSet>): IntervalSet => {
      const st = tables.get(p)?.get('bw', root)
      let mine = owned.get(p) ?? IntervalSet.EMPTY
      for (const c of st?.children.keys() ?? []) mine = mine.union(entriesBelow(c, root, out))
      if (st !== undefined && st.parent !== null && st.entry) { out.set(p, mine); return IntervalSet.EMPTY }
      return mine
    }
    for (const root of up.keys()) {
      if (!isTreeRoot(root, opts.treeRootStride ?? 1)) continue
      const want = new Map<PeerId, IntervalSet>()
      entriesBelow(root, root, want)
      const got = (tables.get(root) as TreeTable).stripeEntries()
      const same = got.length === want.size && got.every((e) => want.get(e.peer)?.equals(e.reach) === true)
      if (!same) fail(`${root}'s cluster entries are ${JSON.stringify(got.map((e) => [e.peer, e.reach.ranges]))}, its tree says ${JSON.stringify([...want].map(([p, r]) => [p, r.ranges]))}`)
      for (const p of up.keys()) {
        const st = tables.get(p)?.get('bw', root)
        if (st !== undefined && st.parent !== null && st.entry !== st.parentRttMs >= opts.farRttMs) fail(`${p}'s entry flag in bw:${root} is ${st.entry} with a ${st.parentRttMs} ms parent link`)
      }
    }
  }
  if (held.length > 0) fail(`locks held once quiet: ${held.join('; ')}`)
  return { commits, log }
}
