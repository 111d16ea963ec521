/**
 * The daemon's control API over HTTP (node:http). Every request needs
 * `Authorization: Bearer <token>` (the token is in api.json, mode 0600). Answers are JSON
 * (`/metrics`: Prometheus text; `/events`: server-sent events); a bad request gets a 4xx
 * `{ "error": "..." }` and never takes the daemon down. A JSON body field or a query
 * parameter the route does not know, or one given twice, is a 400 naming it (as the
 * daemon's config refuses unknown fields): a misspelt one would otherwise be ignored.
 *
 *   GET  /status                 this peer: id, state, owned, members, connections
 *   GET  /peers                  members with measured RTT/bandwidth and whether connected
 *   GET  /trees[?root=ID]        this peer's place in every tree (or one root's two trees)
 *   GET  /owned                  owned virtual nodes
 *   POST /broadcast[?tree=lat|bw|auto][&root=V][&wait=1|true|0|false]   body: the payload
 *   POST /send?vnode=V           body: the payload
 *   POST /reduce                 JSON {op, length}; answers with the result. With {id[, root]}: this
 *                                peer's call of collective reduction `id` (every peer calls it; root:
 *                                an overlay id or a bare peer id, default this one): the result at the
 *                                root, value null elsewhere
 *   POST /leave                  leaves gracefully, answers, then the daemon exits
 *   GET  /events                 SSE: deliver, broadcast-done, reduced, reduce-failed, member, ownership, tree, joined, left, evicted
 *   GET  /metrics                Prometheus text
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { timingSafeEqual } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import type { TreecastNode } from '../create-treecast.ts'
import type { DaemonMetrics } from './metrics.ts'
import type { Logger } from './log.ts'
import { unknownKey } from '../../overlay/unknown-keys.ts'
import { sendJsonWithArray } from './json-array.ts'

/** A JSON event for /events subscribers. */
export interface DaemonEvent { readonly type: string, readonly data: Record<string, unknown> }

/** Fan-out of daemon events to /events streams. */
export class EventHub {
  private readonly subs = new Set<(e: DaemonEvent) => void>()
  subscribe (f: (e: DaemonEvent) => void): () => void {
    this.subs.add(f)
    return () => { this.subs.delete(f) }
  }

  publish (type: string, data: Record<string, unknown>): void {
    for (const f of this.subs) {
      try { f({ type, data }) } catch { /* a broken subscriber never hurts the others */ }
    }
  }

  get size (): number { return this.subs.size }
}

/** What the API needs from the daemon. */
export interface ApiHost {
  /** The running node, or undefined while starting or stopping. */
  node (): TreecastNode | undefined
  status (): Record<string, unknown>
  readonly metrics: DaemonMetrics
  readonly events: EventHub
  readonly log: Logger
  /** Leaves gracefully and shuts the daemon down; resolves once the leave is done. */
  leave (): Promise<{ drained: boolean }>
  /** Largest payload accepted. */
  maxPayloadBytes (): number
}

export class HttpError extends Error {
  constructor (readonly status: number, message: string) { super(message) }
}

const ERROR_STATUS: Record<string, number> = {
  InvalidArgumentError: 400,
  InvalidIntervalError: 400,
  AlreadyMemberError: 409,
  NotRunningError: 409,
  NotStartedError: 503,
  ReduceFailedError: 504,
  RelayFailedError: 502,
  QueueFullError: 503,
  EvictedError: 503
}

export class ControlApi {
  private server: Server | undefined
  private readonly streams = new Set<ServerResponse>()

  constructor (private readonly host: ApiHost, private readonly token: string) {}

  /** Listens; resolves with the actual URL. */
  async listen (host: string, port: number): Promise<string> {
    const server = createServer((req, res) => { void this.handle(req, res) })
    server.requestTimeout = 0 // long uploads and /events; clients are local and authenticated
    this.server = server
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, host, () => { server.off('error', reject); resolve() })
    })
    const a = server.address() as AddressInfo
    const h = a.family === 'IPv6' ? `[${a.address}]` : a.address
    return `http://${h}:${a.port}`
  }

  async close (): Promise<void> {
    for (const s of this.streams) s.end()
    const server = this.server
    if (server === undefined) return
    await new Promise<void>((resolve) => { server.close(() => { resolve() }); server.closeAllConnections() })
  }

  private authorized (req: IncomingMessage): boolean {
    const h = req.headers.authorization ?? ''
    const m = /^Bearer (.+)$/.exec(h)
    if (m === null) return false
    const a = Buffer.from(m[1] as string)
    const b = Buffer.from(this.token)
    return a.length === b.length && timingSafeEqual(a, b)
  }

  private async handle (req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Parsed inside the try: a target that is no URL (`GET //[`) threw here, unanswered.
    let route = `${req.method ?? 'GET'} ?`
    try {
      const url = parseTarget(req.url)
      route = `${req.method ?? 'GET'} ${url.pathname}`
      if (!this.authorized(req)) throw new HttpError(401, 'missing or wrong bearer token (see api.json)')
      await this.route(route, url, req, res)
    } catch (err) {
      const status = err instanceof HttpError ? err.status : ERROR_STATUS[(err as Error).name] ?? 500
      if (status >= 500) this.host.log.warn('api request failed', { route, status, err: (err as Error).message })
      else this.host.log.debug('api request rejected', { route, status, err: (err as Error).message })
      if (!res.headersSent) sendJson(res, status, { error: (err as Error).message })
      else res.destroy()
      // A body not read (a request rejected before its body): drop it, so the answer gets through.
      if (!req.complete && req.listenerCount('data') === 0) drain(req)
    } finally {
      this.host.metrics.apiRequests.inc({ route: KNOWN_ROUTES.has(route) ? route : 'other', code: String(res.statusCode) })
    }
  }

  private running (): TreecastNode {
    const n = this.host.node()
    if (n === undefined) throw new HttpError(503, 'the node is not running (starting or stopping)')
    return n
  }

  private async route (route: string, url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const q = url.searchParams
    const known = QUERY_PARAMS[route]
    if (known !== undefined) checkQuery(q, known, route)
    switch (route) {
      case 'GET /': sendJson(res, 200, { routes: [...KNOWN_ROUTES] }); return
      case 'GET /status': sendJson(res, 200, this.host.status()); return
      case 'GET /owned': {
        const o = this.running().owned()
        sendJson(res, 200, { ranges: o.ranges, size: o.size, text: o.toString() })
        return
      }
      case 'GET /peers': {
        const n = this.running()
        const measured = n.measured()
        const connected = new Set(n.overlay.connectedPeers())
        const peers = n.members().map((id) => {
          const m = measured.get(id)
          return { id, self: id === n.id, connected: connected.has(id), rttMs: m?.rttMs ?? null, bandwidthBytesPerSec: m?.bandwidthBytesPerSec ?? null }
        })
        sendJson(res, 200, { peers })
        return
      }
      case 'GET /trees': {
        const n = this.running()
        const root = q.get('root')
        if (root === '') throw new HttpError(400, 'root must be an overlay id (…/p2p/<peer id>), got an empty value')
        const trees = n.trees().filter((t) => root === null || t.root === root)
        if (root !== null && trees.length === 0) throw new HttpError(404, `no tree rooted at ${root} here`)
        sendJson(res, 200, { trees })
        return
      }
      case 'GET /metrics': {
        const body = await this.host.metrics.text()
        res.writeHead(200, { 'content-type': this.host.metrics.contentType })
        res.end(body)
        return
      }
      case 'GET /events': this.events(req, res); return
      case 'POST /broadcast': await this.broadcast(q, req, res); return
      case 'POST /send': {
        const n = this.running()
        const vnode = intParam(q, 'vnode', true) as number
        if (vnode >= n.vnodeCount()) throw new HttpError(400, `vnode must be in 0..${n.vnodeCount() - 1}`)
        const payload = await readBody(req, this.host.maxPayloadBytes())
        const id = n.send(vnode, payload)
        sendJson(res, 200, { id, bytes: payload.length })
        return
      }
      case 'POST /reduce': {
        const n = this.running()
        const body = await readBody(req, 64 * 1024)
        let j: unknown
        try { j = JSON.parse(Buffer.from(body).toString('utf8')) } catch { throw new HttpError(400, 'body must be JSON {"op": "sum", "length": N}') }
        if (typeof j !== 'object' || j === null || Array.isArray(j)) throw new HttpError(400, 'body must be a JSON object {"op": "sum", "length": N}')
        const extra = unknownKey(j, REDUCE_FIELDS)
        if (extra !== undefined) throw new HttpError(400, `unknown field ${JSON.stringify(extra)} in the body of POST /reduce (known: ${REDUCE_FIELDS.join(', ')})`)
        const { op, length, id, root } = j as { op?: unknown, length?: unknown, id?: unknown, root?: unknown }
        if (typeof op !== 'string' || op === '') throw new HttpError(400, 'op must be a non-empty string')
        if (typeof length !== 'number' || !Number.isInteger(length) || length < 1) throw new HttpError(400, 'length must be a positive integer')
        if (id !== undefined && typeof id !== 'string') throw new HttpError(400, 'id must be a string (a collective reduction)')
        if (root !== undefined && (id === undefined || typeof root !== 'string')) throw new HttpError(400, 'root must be a peer id, with an id')
        const rootId = root === undefined ? n.id : memberId(n, root)
        const r = id === undefined ? await n.reduce(op, length) : await n.reduceCollective({ id, root: rootId, op, length })
        if (r === null) sendJson(res, 200, { id, root: rootId, value: null })
        else await sendJsonWithArray(res, 200, { id: r.id, covered: r.covered.ranges, coveredSize: r.covered.size, durationMs: r.durationMs }, 'value', r.value)
        return
      }
      case 'POST /leave': {
        this.running()
        const r = await this.host.leave()
        sendJson(res, 200, r)
        return
      }
      default:
        if ([...KNOWN_ROUTES].some((r) => r.endsWith(' ' + url.pathname))) throw new HttpError(405, `method ${req.method ?? ''} not allowed on ${url.pathname}`)
        throw new HttpError(404, `no route ${route}`)
    }
  }

  private async broadcast (q: URLSearchParams, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const n = this.running()
    const tree = q.get('tree') ?? 'auto'
    if (tree !== 'lat' && tree !== 'bw' && tree !== 'auto') throw new HttpError(400, 'tree must be lat, bw or auto')
    const root = intParam(q, 'root', false)
    if (root !== undefined && root >= n.vnodeCount()) throw new HttpError(400, `root must be a virtual node in 0..${n.vnodeCount() - 1}`)
    const w = q.get('wait')
    if (w !== null && !WAIT_VALUES.has(w)) throw new HttpError(400, `wait must be 1, true, 0 or false, got ${JSON.stringify(w)}`)
    const wait = w === '1' || w === 'true'
    const payload = await readBody(req, this.host.maxPayloadBytes())
    const started = performance.now()
    const h = await n.broadcast(payload, { mode: tree, ...(root !== undefined ? { root } : {}) })
    this.host.metrics.broadcasts.inc({ role: 'root' })
    this.host.log.info('broadcast started', { id: h.id, bytes: payload.length, tree, root })
    const done = h.done.then(() => {
      this.host.metrics.broadcasts.inc({ role: 'done' })
      this.host.metrics.broadcastSeconds.observe((performance.now() - started) / 1000)
      this.host.log.info('broadcast done', { id: h.id, ms: Math.round(performance.now() - started) })
    })
    done.catch((err: unknown) => { this.host.log.warn('broadcast not completed', { id: h.id, err: (err as Error).message }) })
    if (!wait) { sendJson(res, 202, { id: h.id, bytes: payload.length }); return }
    await done
    sendJson(res, 200, { id: h.id, bytes: payload.length, done: true, durationMs: performance.now() - started })
  }

  private events (req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
    res.write(': treecast events\n\n')
    this.streams.add(res)
    let unsubscribe = (): void => {}
    const ping = setInterval(() => { res.write(': ping\n\n') }, 15_000)
    const end = (): void => { clearInterval(ping); unsubscribe(); this.streams.delete(res) }
    unsubscribe = this.host.events.subscribe((e) => {
      // A subscriber that stops reading had every later event buffered here, without bound.
      if (res.writableLength > EVENTS_MAX_BACKLOG_BYTES) {
        this.host.log.warn('dropping an /events subscriber that does not read', { backlogBytes: res.writableLength })
        end()
        res.destroy()
        return
      }
      res.write(`event: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`)
    })
    req.on('close', end)
    res.on('close', end)
  }
}

/**
 * A member's overlay id (`/ip4/…/p2p/<peer id>`) from itself or from its bare libp2p peer id
 * (what `treecast status` shows as "peer id", and README's `--root <peer id>`): the bare
 * one was refused as "not a live member". Anything else is returned as given.
 */
function memberId (n: TreecastNode, id: string): string {
  if (id.startsWith('/')) return id
  const found = n.members().filter((m) => m.endsWith(`/p2p/${id}`))
  return found.length === 1 ? found[0] as string : id
}

/** A request's target as a URL; one that is not (`//[`) is a 400. */
function parseTarget (target: string | undefined): URL {
  try {
    return new URL(target ?? '/', 'http://local')
  } catch {
    throw new HttpError(400, `bad request target ${JSON.stringify(target)}`)
  }
}

/** Most bytes of events buffered for one /events subscriber that does not read; past it, it is disconnected. */
export const EVENTS_MAX_BACKLOG_BYTES = 16 * 1024 * 1024

/** The query parameters each route takes; any other is refused (400). */
const QUERY_PARAMS: Record<string, readonly string[]> = {
  'GET /': [],
  'GET /status': [],
  'GET /owned': [],
  'GET /peers': [],
  'GET /trees': ['root'],
  'GET /metrics': [],
  'GET /events': [],
  'POST /broadcast': ['tree', 'root', 'wait'],
  'POST /send': ['vnode'],
  'POST /reduce': [],
  'POST /leave': []
}

const KNOWN_ROUTES = new Set(Object.keys(QUERY_PARAMS))

/** The fields of POST /reduce's JSON body. */
const REDUCE_FIELDS = ['op', 'length', 'id', 'root']

const WAIT_VALUES = new Set(['1', 'true', '0', 'false'])

/** Refuses a query parameter the route does not take, or one given twice (400, naming it). */
function checkQuery (q: URLSearchParams, known: readonly string[], route: string): void {
  const seen = new Set<string>()
  for (const name of q.keys()) {
    if (!known.includes(name)) {
      throw new HttpError(400, `unknown query parameter ${JSON.stringify(name)} for ${route} (${known.length === 0 ? 'it takes none' : `known: ${known.join(', ')}`})`)
    }
    if (seen.has(name)) throw new HttpError(400, `query parameter ${JSON.stringify(name)} given more than once`)
    seen.add(name)
  }
}

function intParam (q: URLSearchParams, name: string, required: boolean): number | undefined {
  const v = q.get(name)
  if (v === null) {
    if (required) throw new HttpError(400, `query parameter ${name} is required`)
    return undefined
  }
  if (!/^\d+$/.test(v)) throw new HttpError(400, `${name} must be a non-negative integer, got ${JSON.stringify(v)}`)
  return Number(v)
}

function sendJson (res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

/** Reads a request body of at most `limit` bytes (413 past it; the rest is drained, up to a bound). */
async function readBody (req: IncomingMessage, limit: number): Promise<Uint8Array> {
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > limit) {
    drain(req)
    throw new HttpError(413, `payload of ${declared} bytes exceeds the limit of ${limit}`)
  }
  return await new Promise<Uint8Array>((resolve, reject) => {
    const chunks: Buffer[] = []
    let total = 0
    const onData = (c: Buffer): void => {
      total += c.length
      if (total > limit) {
        cleanup()
        drain(req)
        reject(new HttpError(413, `payload exceeds the limit of ${limit} bytes`))
        return
      }
      chunks.push(c)
    }
    const onEnd = (): void => {
      cleanup()
      const out = Buffer.concat(chunks, total)
      resolve(new Uint8Array(out.buffer, out.byteOffset, out.length))
    }
    const onError = (err: Error): void => { cleanup(); reject(new HttpError(400, `request body: ${err.message}`)) }
    const cleanup = (): void => { req.off('data', onData); req.off('end', onEnd); req.off('error', onError) }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
  })
}

/** Most bytes of a rejected body read and dropped (so the client sees the answer) before the connection is cut. */
const MAX_DRAIN_BYTES = 64 * 1024 * 1024

/** Reads and drops the rest of a rejected body; cuts the connection past MAX_DRAIN_BYTES. */
function drain (req: IncomingMessage): void {
  let n = 0
  req.on('data', (c: Buffer) => {
    n += c.length
    if (n > MAX_DRAIN_BYTES) req.destroy()
  })
  req.on('error', () => {})
  req.resume()
}
