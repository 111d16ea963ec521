/**
 * A typed client of the daemon's control API (node/daemon/api.ts), used by the CLI and
 * usable from any Node program:
 *
 *   const c = TreecastClient.fromDataDir('~/.treecast')   // reads api.json
 *   await c.status()
 *   const { id } = await c.broadcast(bytes, { tree: 'bw' })
 *   for await (const e of c.events()) console.log(e.type, e.data)
 */
import { homedir } from 'node:os'
import { resolve } from 'node:path'
import { readApiInfo } from './state.ts'

export class ApiError extends Error {
  override readonly name = 'ApiError'
  constructor (readonly status: number, message: string) { super(message) }
}

export type Ranges = Array<[number, number]>

export interface StatusReply {
  phase: string
  id: string | null
  peerId: string
  state: string | null
  vnodeCount: number
  owned: { ranges: Ranges, size: number, text: string }
  members: number
  connected: number
  probing: boolean
  pid: number
  uptimeMs: number
  [k: string]: unknown
}
export interface PeerReply { id: string, self: boolean, connected: boolean, rttMs: number | null, bandwidthBytesPerSec: number | null }
export interface TreeReply { kind: 'lat' | 'bw', root: string, parent: string | null, children: string[], metric: number }
export interface BroadcastReply { id: string, bytes: number, done?: boolean, durationMs?: number }
export interface ReduceReply { id: string, value: number[], covered: Ranges, coveredSize: number, durationMs: number }
/** A collective reduction's answer away from its root: the call is made, the result is the root's. */
export interface CollectiveCallReply { id: string, root: string, value: null }
export interface ServerEvent { type: string, data: Record<string, unknown> }

export class TreecastClient {
  readonly url: string
  constructor (url: string, private readonly token: string) { this.url = url.replace(/\/+$/, '') }

  /** From a data dir's api.json (written by `treecast start`). */
  static fromDataDir (dataDir: string): TreecastClient {
    const dir = dataDir.startsWith('~/') ? resolve(homedir(), dataDir.slice(2)) : resolve(dataDir)
    const info = readApiInfo(dir)
    if (info === undefined) throw new Error(`no ${dir}/api.json: is a daemon running with this data dir? (or pass --api and --token)`)
    return new TreecastClient(info.url, info.token)
  }

  async status (): Promise<StatusReply> { return await this.json('GET', '/status') }
  async peers (): Promise<PeerReply[]> { return (await this.json<{ peers: PeerReply[] }>('GET', '/peers')).peers }
  async trees (root?: string): Promise<TreeReply[]> {
    return (await this.json<{ trees: TreeReply[] }>('GET', '/trees' + (root !== undefined ? `?root=${encodeURIComponent(root)}` : ''))).trees
  }

  async owned (): Promise<{ ranges: Ranges, size: number, text: string }> { return await this.json('GET', '/owned') }
  async metrics (): Promise<string> { return await (await this.request('GET', '/metrics')).text() }

  /** Broadcasts `payload` (bytes, or a stream of them); `wait`: answer only once every virtual node has it. */
  async broadcast (payload: Uint8Array | AsyncIterable<Uint8Array>, opts: { tree?: 'lat' | 'bw' | 'auto', root?: number, wait?: boolean } = {}): Promise<BroadcastReply> {
    const q = new URLSearchParams()
    if (opts.tree !== undefined) q.set('tree', opts.tree)
    if (opts.root !== undefined) q.set('root', String(opts.root))
    if (opts.wait === true) q.set('wait', '1')
    const qs = q.toString()
    return await this.json('POST', '/broadcast' + (qs === '' ? '' : '?' + qs), payload)
  }

  async send (vnode: number, payload: Uint8Array | AsyncIterable<Uint8Array>): Promise<{ id: string, bytes: number }> {
    return await this.json('POST', `/send?vnode=${vnode}`, payload)
  }

  async reduce (op: string, length: number): Promise<ReduceReply> {
    return await this.json('POST', '/reduce', new TextEncoder().encode(JSON.stringify({ op, length })), 'application/json')
  }

  /** This daemon's call of collective reduction `id` (every daemon calls it; `root` defaults to this one). */
  async reduceCollective (id: string, op: string, length: number, root?: string): Promise<ReduceReply | CollectiveCallReply> {
    return await this.json('POST', '/reduce', new TextEncoder().encode(JSON.stringify({ op, length, id, ...(root !== undefined ? { root } : {}) })), 'application/json')
  }

  async leave (): Promise<{ drained: boolean }> { return await this.json('POST', '/leave') }

  /** The /events stream, parsed; ends when the daemon closes it or `signal` aborts. */
  async * events (signal?: AbortSignal): AsyncGenerator<ServerEvent> {
    const res = await this.request('GET', '/events', undefined, undefined, signal)
    if (res.body === null) return
    const decoder = new TextDecoder()
    let buf = ''
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true })
        let i: number
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i)
          buf = buf.slice(i + 2)
          let type = 'message'
          let data = ''
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) type = line.slice(7)
            else if (line.startsWith('data: ')) data += line.slice(6)
          }
          if (data !== '') yield { type, data: JSON.parse(data) as Record<string, unknown> }
        }
      }
    } catch (err) {
      if (signal?.aborted === true) return
      throw err
    }
  }

  private async json<T> (method: string, path: string, body?: Uint8Array | AsyncIterable<Uint8Array>, contentType?: string): Promise<T> {
    const res = await this.request(method, path, body, contentType)
    return await res.json() as T
  }

  private async request (method: string, path: string, body?: Uint8Array | AsyncIterable<Uint8Array>, contentType = 'application/octet-stream', signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}` }
    const init: RequestInit & { duplex?: 'half' } = { method, headers, ...(signal !== undefined ? { signal } : {}) }
    if (body !== undefined) {
      headers['content-type'] = contentType
      if (body instanceof Uint8Array) init.body = body
      else { init.body = body as unknown as ReadableStream; init.duplex = 'half' }
    } else if (method === 'POST') {
      init.body = new Uint8Array(0)
    }
    let res: Response
    try {
      res = await fetch(this.url + path, init)
    } catch (err) {
      const cause = (err as { cause?: { code?: string, message?: string } }).cause
      throw new Error(`cannot reach the daemon at ${this.url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`)
    }
    if (!res.ok) {
      let msg = res.statusText
      try { msg = ((await res.json()) as { error?: string }).error ?? msg } catch { /* not JSON */ }
      throw new ApiError(res.status, `${method} ${path}: ${res.status} ${msg}`)
    }
    return res
  }
}
