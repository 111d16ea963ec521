/**
 * The daemon from the outside: five `treecast start` processes (bin/treecast.ts) on
 * 127.0.0.1, each with its own temporary data dir and its API on 127.0.0.1:0 (read from
 * api.json). The first founds the overlay, the others --join it. Through the HTTP API: a
 * 2 MB broadcast and a sum reduction; then a 4 MB broadcast during which one daemon gets
 * SIGTERM (graceful leave) and another SIGKILL. Every daemon appends its deliveries to a
 * delivery log synchronously, so the log of the SIGKILLed one holds what it delivered
 * before dying. Checks: every virtual node received each broadcast, exactly once among
 * the peers that did not crash (a crashed peer's deliveries may be repeated at the new
 * owner: README "Crash semantics"); the reductions count every virtual node once; the
 * SIGTERMed daemon exits 0; restarted with the same data dir it keeps its peer id and
 * gets its old virtual nodes back; a bad config file exits 2 naming the field; bad API
 * requests get 4xx. Every wait is bounded; no durations are asserted.
 * DAEMON_TEST_KILL=term|kill runs the churn step with only the SIGTERM or only the SIGKILL.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TreecastClient, type ReduceReply, type ServerEvent } from '../node/daemon/client.ts'
import { readApiInfo, readState } from '../node/daemon/state.ts'

const ROOT_DIR = fileURLToPath(new URL('..', import.meta.url))
const BIN = fileURLToPath(new URL('../bin/treecast.ts', import.meta.url))
const VNODES = 256
const MB = 1024 * 1024
const MAX_PAYLOAD = 8 * MB

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

interface Delivery { id: string, peer: string, vnodes: Array<[number, number]>, bytes: number, sha: string }

class Daemon {
  child: ChildProcessWithoutNullStreams | undefined
  exit: { code: number | null, signal: NodeJS.Signals | null } | undefined
  closed: Promise<void> = Promise.resolve()
  stderr = ''
  client: TreecastClient | undefined
  peerId = ''
  id = ''
  /** Set before the test SIGKILLs it. */
  crashed = false

  constructor (readonly name: string, readonly dir: string) {}

  get log (): string { return join(this.dir, 'deliveries.jsonl') }
  get alive (): boolean { return this.child !== undefined && this.exit === undefined }

  start (extra: string[]): void {
    this.exit = undefined
    this.stderr = ''
    this.client = undefined
    const args = ['--import', './bin/ts-loader.mjs', BIN, 'start', '--data-dir', this.dir, '--listen', '/ip4/127.0.0.1/tcp/0', '--api-listen', '127.0.0.1:0',
      '--vnodes', String(VNODES), '--delivery-log', this.log, '--max-payload-bytes', String(MAX_PAYLOAD), ...extra]
    const child = spawn(process.execPath, args, { cwd: ROOT_DIR, stdio: ['pipe', 'pipe', 'pipe'] })
    this.child = child
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (d: string) => { this.stderr = (this.stderr + d).slice(-20_000) })
    child.stdout.resume()
    this.closed = new Promise((resolve) => { child.on('close', (code, signal) => { this.exit = { code, signal }; resolve() }) })
  }

  /** Waits for api.json from this process and for the node to run. */
  async ready (timeoutMs = 30_000): Promise<void> {
    await waitUntil(`${this.name} api.json`, timeoutMs, async () => {
      if (this.exit !== undefined) throw new Error(`${this.name} exited ${JSON.stringify(this.exit)}\n${this.stderr}`)
      const info = readApiInfo(this.dir)
      if (info === undefined || info.pid !== this.child?.pid) return 'no api.json yet'
      this.client = new TreecastClient(info.url, info.token)
      const s = await this.client.status()
      if (s.phase !== 'running') return `phase ${s.phase}`
      this.peerId = s.peerId
      this.id = s.id ?? ''
      return undefined
    })
  }

  api (): TreecastClient {
    if (this.client === undefined) throw new Error(`${this.name} has no API`)
    return this.client
  }

  deliveries (id?: string): Delivery[] {
    if (!existsSync(this.log)) return []
    return readFileSync(this.log, 'utf8').split('\n').filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Delivery).filter((d) => id === undefined || d.id === id)
  }

  describe (): string { return `${this.name} exit=${JSON.stringify(this.exit)}\n${this.stderr.split('\n').slice(-15).join('\n')}` }
}

/** Polls `check` (undefined = satisfied, else why not) until it holds; fails after `timeoutMs`. */
async function waitUntil (what: string, timeoutMs: number, check: () => Promise<string | undefined>): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let why = 'never checked'
  while (Date.now() < deadline) {
    try {
      const r = await check()
      if (r === undefined) return
      why = r
    } catch (err) {
      why = (err as Error).message
      if (/exited/.test(why)) break
    }
    await sleep(200)
  }
  throw new Error(`timed out waiting for ${what}: ${why}\n${daemons.filter((d) => d.child !== undefined).map((d) => d.describe()).join('\n')}`)
}

/** Runs the CLI to completion (for the config checks). */
async function runCli (args: string[], timeoutMs = 20_000): Promise<{ code: number | null, stderr: string }> {
  const child = spawn(process.execPath, ['--import', './bin/ts-loader.mjs', BIN, ...args], { cwd: ROOT_DIR, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (d: string) => { stderr += d })
  child.stdout.resume()
  const timer = setTimeout(() => { child.kill('SIGKILL') }, timeoutMs)
  const code = await new Promise<number | null>((resolve) => { child.on('close', (c) => { resolve(c) }) })
  clearTimeout(timer)
  return { code, stderr }
}

/** How many times each virtual node got broadcast `id`, over the given daemons' logs. */
function counts (ds: Daemon[], id: string): number[] {
  const c = new Array<number>(VNODES).fill(0)
  for (const d of ds) for (const del of d.deliveries(id)) for (const [a, b] of del.vnodes) for (let v = a; v < b; v++) c[v]!++
  return c
}

const tmp = mkdtempSync(join(tmpdir(), 'treecast-daemon-test-'))
const daemons = Array.from({ length: 5 }, (_, i) => new Daemon(`d${i}`, join(tmp, `d${i}`)))
const [d0, d1, d2, d3, d4] = daemons as [Daemon, Daemon, Daemon, Daemon, Daemon]
const events: ServerEvent[] = []
const abort = new AbortController()

async function converged (ds: Daemon[]): Promise<string | undefined> {
  const ss = await Promise.all(ds.map(async (d) => await d.api().status()))
  const owned = new Array<number>(VNODES).fill(0)
  for (const s of ss) {
    if (s.members !== ds.length) return `${s.peerId.slice(-6)} sees ${s.members} members`
    for (const [a, b] of s.owned.ranges) for (let v = a; v < b; v++) owned[v]!++
  }
  const bad = owned.findIndex((n) => n !== 1)
  return bad >= 0 ? `vnode ${bad} has ${owned[bad]} owners` : undefined
}

describe('treecast daemon (5 processes, HTTP API)', () => {
  beforeAll(async () => {
    d0.start([])
    await d0.ready()
    for (const d of [d1, d2, d3, d4]) d.start(['--join', d0.id])
    await Promise.all([d1, d2, d3, d4].map(async (d) => { await d.ready(45_000) }))
    await waitUntil('5 members, owned sets partitioning the virtual nodes', 30_000, async () => await converged(daemons))
    // /events of the root, for the broadcast-done events.
    void (async () => {
      try { for await (const e of d0.api().events(abort.signal)) events.push(e) } catch { /* closed */ }
    })()
  }, 90_000)

  afterAll(async () => {
    abort.abort()
    for (const d of daemons) if (d.alive) d.child?.kill('SIGKILL')
    await Promise.all(daemons.map(async (d) => { await d.closed }))
    rmSync(tmp, { recursive: true, force: true })
  })

  it('a 2 MB broadcast reaches every virtual node exactly once, and a reduction counts each once', async () => {
    const payload = new Uint8Array(2 * MB).map((_, i) => (i * 7) & 0xff)
    const r = await d0.api().broadcast(payload, { wait: true })
    expect(r.done).toBe(true)
    await waitUntil('every vnode delivered', 15_000, async () => {
      const c = counts(daemons, r.id)
      const missing = c.findIndex((n) => n === 0)
      return missing >= 0 ? `vnode ${missing} not delivered` : undefined
    })
    await waitUntil('broadcast-done on /events', 10_000, async () => events.some((e) => e.type === 'broadcast-done' && e.data.id === r.id) ? undefined : 'not yet')
    await sleep(300) // late duplicates
    expect(counts(daemons, r.id).every((n) => n === 1)).toBe(true)
    const shas = new Set(daemons.flatMap((d) => d.deliveries(r.id).map((x) => x.sha)))
    expect(shas.size).toBe(1)
    expect(events.some((e) => e.type === 'deliver' && e.data.id === r.id && typeof e.data.bytes === 'number')).toBe(true)

    const red = await d2.api().reduce('sum', 3)
    expect(red.value).toEqual([VNODES, VNODES, VNODES])
    expect(red.coveredSize).toBe(VNODES)

    // A collective reduction: every daemon calls it, the root (d1) answers with the result.
    const calls = daemons.map(async (d) => await d.api().reduceCollective('step-1', 'sum', 2, d1.id))
    const replies = await Promise.all(calls)
    expect(replies.filter((r) => r.value === null)).toHaveLength(daemons.length - 1)
    const atRoot = replies[daemons.indexOf(d1)] as ReduceReply
    expect(atRoot.value).toEqual([VNODES, VNODES])
    expect(atRoot.coveredSize).toBe(VNODES)
  })

  it('bad API requests get 4xx JSON errors and the daemon keeps running', async () => {
    const info = readApiInfo(d0.dir)!
    const auth = { authorization: `Bearer ${info.token}` }
    const cases: Array<[string, RequestInit, number]> = [
      ['/status', {}, 401],
      ['/status', { headers: { authorization: 'Bearer nope' } }, 401],
      ['/nowhere', { headers: auth }, 404],
      ['/broadcast', { headers: auth }, 405],
      ['/reduce', { method: 'POST', headers: auth, body: 'not json' }, 400],
      ['/reduce', { method: 'POST', headers: auth, body: JSON.stringify({ op: 'sum', length: -1 }) }, 400],
      ['/reduce', { method: 'POST', headers: auth, body: JSON.stringify({ op: 'sum', length: 1, id: 7 }) }, 400],
      ['/reduce', { method: 'POST', headers: auth, body: JSON.stringify({ op: 'sum', length: 1, root: 'x' }) }, 400],
      ['/reduce', { method: 'POST', headers: auth, body: JSON.stringify({ op: 'sum', length: 1, id: 'a/b' }) }, 400],
      ['/send?vnode=x', { method: 'POST', headers: auth, body: 'a' }, 400],
      [`/send?vnode=${VNODES}`, { method: 'POST', headers: auth, body: 'a' }, 400],
      ['/broadcast?tree=oak', { method: 'POST', headers: auth, body: 'a' }, 400],
      ['/broadcast', { method: 'POST', headers: auth, body: new Uint8Array(MAX_PAYLOAD + 1) }, 413],
      ['/trees?root=nobody', { headers: auth }, 404]
    ]
    for (const [path, init, status] of cases) {
      const res = await fetch(info.url + path, init)
      expect([path, res.status]).toEqual([path, status])
      const body = await res.json() as { error?: string }
      expect(typeof body.error).toBe('string')
    }
    expect((await d0.api().status()).phase).toBe('running')
    const metrics = await d0.api().metrics()
    expect(metrics).toMatch(/treecast_broadcasts_total\{role="root"\} 1/)
    expect(metrics).toMatch(/treecast_probes_total \d+/)
    expect(metrics).toMatch(/treecast_payload_bytes_sent_total\{tree="(lat|bw)"\} [1-9]\d*/)
    expect(metrics).toMatch(/# TYPE treecast_fallback_sends_total counter/)
  })

  it('a broadcast survives a SIGTERM (graceful leave) and a SIGKILL (crash) mid-transfer', async () => {
    const payload = new Uint8Array(4 * MB).map((_, i) => (i * 13) & 0xff)
    const r = await d0.api().broadcast(payload, { tree: 'bw' })
    const mode = process.env.DAEMON_TEST_KILL ?? 'both'
    if (mode !== 'kill') d1.child?.kill('SIGTERM')
    d2.crashed = true
    if (mode !== 'term') d2.child?.kill('SIGKILL')
    if (mode !== 'kill') {
      await d1.closed
      expect(d1.exit).toEqual({ code: 0, signal: null })
    }
    if (mode !== 'term') await d2.closed
    const survivors = mode === 'kill' ? [d0, d1, d3, d4] : mode === 'term' ? [d0, d2, d3, d4] : [d0, d3, d4]
    const notCrashed = mode === 'term' ? daemons : [d0, d1, d3, d4]
    await waitUntil('every vnode delivered despite the crash', 40_000, async () => {
      const c = counts(daemons, r.id)
      const missing = c.findIndex((n) => n === 0)
      return missing >= 0 ? `vnode ${missing} not delivered` : undefined
    })
    await waitUntil('survivors converged', 30_000, async () => await converged(survivors))
    await sleep(500) // late duplicates
    const c = counts(notCrashed, r.id)
    const dup = c.findIndex((n) => n > 1)
    expect(dup, `vnode ${dup} delivered ${c[dup]} times among peers that did not crash`).toBe(-1)
    expect(counts(daemons, r.id).every((n) => n >= 1)).toBe(true)
    console.log(`broadcast during churn: done event ${events.some((e) => e.type === 'broadcast-done' && e.data.id === r.id) ? 'seen' : 'not seen'}; ` +
      `${d2.deliveries(r.id).length} deliveries at the crashed peer`)

    const red = await d3.api().reduce('sum', 1)
    expect(red.value).toEqual([VNODES])
    expect(red.coveredSize).toBe(VNODES)
  })

  it('a restarted daemon keeps its peer id and gets its old virtual nodes back', async () => {
    const before = d1.peerId
    const saved = readState(d1.dir)
    expect(saved?.owned.length).toBeGreaterThan(0)
    d1.start(['--join', d0.id])
    await d1.ready(45_000)
    expect(d1.peerId).toBe(before)
    await waitUntil('its old ranges back', 30_000, async () => {
      const o = await d1.api().owned()
      return JSON.stringify(o.ranges) === JSON.stringify(saved!.owned) ? undefined : `owns ${o.text}, saved ${JSON.stringify(saved!.owned)}`
    })
  })

  it('a bad config exits with code 2 and names the field', async () => {
    const file = join(tmp, 'bad.json')
    writeFileSync(file, JSON.stringify({ vnodes: 'many' }))
    const a = await runCli(['start', '--config', file, '--data-dir', join(tmp, 'bad')])
    expect(a.code).toBe(2)
    expect(a.stderr).toMatch(/vnodes/)
    writeFileSync(file, JSON.stringify({ core: { probeTimeoutMs: -5 } }))
    const b = await runCli(['start', '--config', file, '--data-dir', join(tmp, 'bad')])
    expect(b.code).toBe(2)
    expect(b.stderr).toMatch(/core\.probeTimeoutMs/)
    const c = await runCli(['start', '--listen', 'not-a-multiaddr', '--data-dir', join(tmp, 'bad')])
    expect(c.code).toBe(2)
    expect(c.stderr).toMatch(/listen/)
  })
})
