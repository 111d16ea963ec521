/**
 * The control API's validation (node/daemon/api.ts), on one daemon in this process that
 * founds an overlay (ports and API address 0). A request field or query parameter the API
 * does not know is refused with 400 and a JSON error naming it, as the daemon's config
 * refuses unknown fields: `{"op":"sum","length":2,"extra":1}` was answered 200, and
 * `?tre=bw` or `?wait=yes` silently ran with the defaults. Good requests still work.
 * test/daemon.test.ts covers the other 4xx answers against daemon processes.
 * A request target that is no URL (`GET //[`, even without a token) got no answer at all:
 * parsing it threw before the handler's try, the connection hung (no request timeout) and
 * the rejection was unhandled (a stack trace in the daemon's log; a crash for a program
 * that embeds ControlApi without an unhandledRejection handler). Now it is a 400.
 * An /events subscriber that stops reading (`treecast events | less`, paused) had every
 * later event buffered for it in the daemon, without bound; past EVENTS_MAX_BACKLOG_BYTES
 * it is now disconnected.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EVENTS_MAX_BACKLOG_BYTES } from '../node/daemon/api.ts'
import { ApiError, TreecastClient } from '../node/daemon/client.ts'
import { resolveConfig } from '../node/daemon/config.ts'
import { Daemon } from '../node/daemon/daemon.ts'
import { createLogger } from '../node/daemon/log.ts'
import { readApiInfo } from '../node/daemon/state.ts'

const VNODES = 16
const tmp = mkdtempSync(join(tmpdir(), 'treecast-api-test-'))
let daemon: Daemon
let url = ''
let auth: Record<string, string> = {}

beforeAll(async () => {
  const cfg = resolveConfig({
    flags: { dataDir: join(tmp, 'a'), listen: ['/ip4/127.0.0.1/tcp/0'], apiListen: '127.0.0.1:0', vnodes: String(VNODES) },
    env: {}
  })
  daemon = new Daemon(cfg, createLogger('warn', 'text', () => {}))
  await daemon.start({ exit: () => {} })
  const info = readApiInfo(join(tmp, 'a'))!
  url = info.url
  auth = { authorization: `Bearer ${info.token}` }
}, 30_000)

afterAll(async () => {
  await daemon.shutdown('test over', 0, false)
  rmSync(tmp, { recursive: true, force: true })
})

async function call (method: string, path: string, body?: string): Promise<{ status: number, error: string | undefined }> {
  const res = await fetch(url + path, { method, headers: auth, ...(body !== undefined ? { body } : method === 'POST' ? { body: '' } : {}) })
  const j = await res.json() as { error?: string }
  return { status: res.status, error: j.error }
}

describe('control API: unknown fields and parameters', () => {
  it('a JSON body with a field the endpoint does not know is 400, naming the field', async () => {
    const r = await call('POST', '/reduce', JSON.stringify({ op: 'sum', length: 2, extra: 1 }))
    expect(r.status).toBe(400)
    expect(r.error).toMatch(/"extra"/)
    expect(r.error).toMatch(/unknown field/)
    // Collective form too, and a misspelt known field.
    const c = await call('POST', '/reduce', JSON.stringify({ op: 'sum', length: 2, id: 'x', rot: 'y' }))
    expect([c.status, c.error]).toEqual([400, expect.stringMatching(/"rot"/)])
  })

  it('a JSON body that is not an object is 400', async () => {
    for (const body of ['[1,2]', '7', 'null', '"sum"']) {
      const r = await call('POST', '/reduce', body)
      expect([body, r.status]).toEqual([body, 400])
      expect(r.error).toMatch(/object/)
    }
  })

  it('a query parameter the route does not know is 400, naming it', async () => {
    const cases: Array<[string, string, string]> = [
      ['POST', '/broadcast?tre=bw', 'tre'],
      ['POST', '/broadcast?tree=bw&extra=1', 'extra'],
      ['POST', '/send?vnode=1&root=2', 'root'],
      ['GET', '/trees?rot=x', 'rot'],
      ['GET', '/status?verbose=1', 'verbose'],
      ['GET', '/peers?x', 'x'],
      ['GET', '/owned?json=1', 'json'],
      ['POST', '/reduce?op=sum', 'op'],
      ['POST', '/leave?now=1', 'now']
    ]
    for (const [method, path, name] of cases) {
      const r = await call(method, path, method === 'POST' ? 'a' : undefined)
      expect([path, r.status]).toEqual([path, 400])
      expect(r.error).toContain(`"${name}"`)
    }
    // Still running: /leave was refused before leaving.
    expect(daemon.phase).toBe('running')
  })

  it('a known query parameter with a value it does not take is 400; a repeated one too', async () => {
    const cases: Array<[string, string, RegExp]> = [
      ['POST', '/broadcast?wait=yes', /wait/],
      ['POST', '/broadcast?tree=lat&tree=bw', /tree.*more than once/],
      ['POST', '/send?vnode=1&vnode=2', /vnode.*more than once/],
      ['GET', '/trees?root=', /root/]
    ]
    for (const [method, path, re] of cases) {
      const r = await call(method, path, method === 'POST' ? 'a' : undefined)
      expect([path, r.status]).toEqual([path, 400])
      expect(r.error).toMatch(re)
    }
  })

  it('the client\'s ApiError carries the status and the API\'s message', async () => {
    const info = readApiInfo(join(tmp, 'a'))!
    const c = new TreecastClient(info.url, info.token)
    const err = await c.trees('').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect((err as ApiError).status).toBe(400)
    expect((err as ApiError).message).toMatch(/400 .*root/)
  })

  it('good requests still work', async () => {
    const info = readApiInfo(join(tmp, 'a'))!
    const c = new TreecastClient(info.url, info.token)
    expect((await c.reduce('sum', 2)).value).toEqual([VNODES, VNODES])
    const coll = await c.reduceCollective('step-1', 'sum', 1)
    expect(coll.value).toEqual([VNODES])
    const b = await c.broadcast(new Uint8Array([1, 2, 3]), { tree: 'lat', root: 3, wait: true })
    expect(b.done).toBe(true)
    for (const path of ['/broadcast?wait=0', '/broadcast?wait=false', '/broadcast?wait=true&tree=auto']) {
      const r = await fetch(url + path, { method: 'POST', headers: auth, body: 'x' })
      expect([path, r.status]).toEqual([path, path.includes('wait=true') ? 200 : 202])
    }
    expect((await c.trees(daemon.node()!.id)).length).toBe(2)
    expect((await c.send(5, new Uint8Array([9]))).bytes).toBe(1)
  })
})

/** Sends `head` (a raw request without body) and resolves with the status line and body, or 'no answer' after 3 s. */
async function raw (head: string): Promise<{ statusLine: string, body: string }> {
  const { port } = new URL(url)
  return await new Promise((resolve) => {
    const s = connect(Number(port), '127.0.0.1', () => { s.write(head) })
    let out = ''
    const timer = setTimeout(() => { s.destroy(); resolve({ statusLine: 'no answer', body: '' }) }, 3000)
    s.setEncoding('utf8').on('data', (d: string) => { out += d })
    s.on('close', () => {
      clearTimeout(timer)
      resolve({ statusLine: out.split('\r\n')[0] ?? '', body: out.slice(out.indexOf('\r\n\r\n') + 4) })
    })
    s.on('error', () => {})
  })
}

describe('control API: a request target that is not a URL', () => {
  it('is answered 400 with a JSON error, with or without the token, and the daemon still answers', async () => {
    const rejections: unknown[] = []
    const onRejection = (r: unknown): void => { rejections.push(r) }
    process.on('unhandledRejection', onRejection)
    try {
      for (const token of [auth.authorization, undefined]) {
        const r = await raw(`GET //[ HTTP/1.1\r\nHost: x\r\n${token !== undefined ? `Authorization: ${token}\r\n` : ''}Connection: close\r\n\r\n`)
        expect(r.statusLine).toMatch(/^HTTP\/1\.1 400 /)
        expect(JSON.parse(r.body)).toEqual({ error: expect.stringMatching(/request target/) })
      }
      expect(rejections).toEqual([])
      expect((await call('GET', '/status')).status).toBe(200)
    } finally {
      process.off('unhandledRejection', onRejection)
    }
  })
})

describe('control API: a collective reduction\'s root', () => {
  it('may be given as the peer id that status shows (README: --root <peer id>), not only as the overlay id', async () => {
    // It was refused: `root 12D3KooW... is not a live member` (400), though README and
    // `treecast reduce --help` ask for the root's peer id.
    const info = readApiInfo(join(tmp, 'a'))!
    const c = new TreecastClient(info.url, info.token)
    const byPeerId = await c.reduceCollective('by-peer-id', 'sum', 1, info.peerId)
    expect(byPeerId.value).toEqual([VNODES])
    const byId = await c.reduceCollective('by-overlay-id', 'sum', 1, daemon.node()!.id)
    expect(byId.value).toEqual([VNODES])
    const r = await call('POST', '/reduce', JSON.stringify({ op: 'sum', length: 1, id: 'nobody', root: '12D3KooWNobody' }))
    expect([r.status, r.error]).toEqual([400, expect.stringMatching(/not a live member/)])
  })
})

describe('control API: an /events subscriber that does not read', () => {
  it('is disconnected once its backlog passes the bound, instead of buffering for ever', async () => {
    const { port } = new URL(url)
    const sock = connect(Number(port), '127.0.0.1')
    sock.on('error', () => {})
    const closed = new Promise<void>((resolve) => { sock.on('close', () => { resolve() }) })
    sock.write(`GET /events HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth.authorization}\r\n\r\n`)
    const deadline = Date.now() + 5000
    while (daemon.events.size === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(daemon.events.size).toBe(1)
    sock.pause() // reads nothing more: the kernel's buffers fill, then the daemon's
    const blob = 'x'.repeat(64 * 1024)
    const total = EVENTS_MAX_BACKLOG_BYTES * 2 + 32 * 1024 * 1024
    for (let sent = 0; sent < total; sent += blob.length) {
      daemon.events.publish('test', { blob })
      if (sent % (4 * 1024 * 1024) === 0) await new Promise((resolve) => setTimeout(resolve, 5))
    }
    const until = Date.now() + 5000
    while (daemon.events.size > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(daemon.events.size).toBe(0)
    sock.destroy()
    await closed
    expect((await call('GET', '/status')).status).toBe(200)
  })
})
