/**
 * The long-running peer: one treecast node, its identity and state in a data dir, the
 * control API, logs, metrics and signal handling. `treecast start` runs {@link runDaemon}.
 *
 * Start-up: lock the data dir (node/daemon/lock.ts; held: exit 1, as for a port in use); load or create `peer.key`; start the control API (api.json); create and start
 * the node; join through the first reachable peer of `join` (each attempt on a fresh node,
 * the same key), asking for the ranges saved in state.json (or `want`) unless `fresh`; with
 * no peer to join (or only itself), found a new overlay of `vnodes` virtual nodes.
 * Shutdown (SIGTERM, SIGINT, SIGHUP, POST /leave): leave gracefully, stop, exit 0, within
 * `shutdownTimeoutMs`; a second signal exits at once (130 / 143). Evicted (declared dead
 * while alive): exits 1, so a supervisor restarts it and it rejoins with its old ranges.
 */
import { randomBytes, createHash } from 'node:crypto'
import { closeSync, openSync, writeSync } from 'node:fs'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import type { PrivateKey } from '@libp2p/interface'
import { createTreecast, type CreateTreecastInit, type TreecastNode } from '../create-treecast.ts'
import { installLibp2pGuard } from '../libp2p-guard.ts'
import { IntervalSet } from '../../virtual-nodes/interval-set.ts'
import { resolveCoreConfig } from '../../overlay/config.ts'
import { ControlApi, EventHub, type ApiHost } from './api.ts'
import { formatRanges, parseHostPort, parseRanges, readPsk, type DaemonConfig } from './config.ts'
import { contribution } from './contribute.ts'
import type { Logger } from './log.ts'
import { DaemonMetrics } from './metrics.ts'
import { lockDataDir, type DataDirLock } from './lock.ts'
import { ensureDataDir, keepBadState, loadOrCreateKey, readState, removeApiInfo, StateFileError, writeApiInfo, writeState, type SavedState } from './state.ts'

export type Phase = 'starting' | 'joining' | 'running' | 'leaving' | 'stopped'

const ranges = (s: IntervalSet): Array<[number, number]> => s.ranges.map(([a, b]) => [a, b])
const listenAddrs = (n: TreecastNode): string => n.libp2p.getMultiaddrs().map((a) => a.toString()).join(',')

export class Daemon implements ApiHost {
  readonly events = new EventHub()
  readonly metrics: DaemonMetrics
  phase: Phase = 'starting'
  private nodeValue: TreecastNode | undefined
  private api: ControlApi | undefined
  private apiUrl = ''
  private peerId = ''
  private deliveryFd: number | undefined
  /** The data dir's lock (node/daemon/lock.ts), held from the start of {@link start} to exit. */
  private lock: DataDirLock | undefined
  private readonly startedAt = Date.now()
  private leaving: Promise<{ drained: boolean }> | undefined
  private shuttingDown = false
  private onExit: (code: number) => void = (code) => { process.exit(code) }

  constructor (readonly cfg: DaemonConfig, readonly log: Logger) {
    this.metrics = new DaemonMetrics(() => this.nodeValue)
  }

  node (): TreecastNode | undefined { return this.phase === 'running' ? this.nodeValue : undefined }

  maxPayloadBytes (): number { return resolveCoreConfig(this.cfg.core).maxPayloadBytes }

  status (): Record<string, unknown> {
    const n = this.nodeValue
    const base = { phase: this.phase, peerId: this.peerId, pid: process.pid, uptimeMs: Date.now() - this.startedAt, dataDir: this.cfg.dataDir, api: this.apiUrl }
    if (n === undefined || this.phase === 'stopped' || this.phase === 'starting') {
      return { ...base, id: null, state: null, vnodeCount: 0, owned: { ranges: [], size: 0, text: '' }, members: 0, connected: 0, probing: false }
    }
    try {
      const owned = n.owned()
      return {
        ...base,
        id: n.id,
        state: n.state,
        vnodeCount: n.vnodeCount(),
        owned: { ranges: ranges(owned), size: owned.size, text: owned.toString() },
        members: n.members().length,
        connected: n.overlay.connectedPeers().length,
        connections: n.libp2p.getConnections().length,
        probing: n.overlay.probing,
        listen: n.libp2p.getMultiaddrs().map((a) => a.toString())
      }
    } catch {
      return { ...base, id: null, state: null, vnodeCount: 0, owned: { ranges: [], size: 0, text: '' }, members: 0, connected: 0, probing: false }
    }
  }

  /** Starts everything; resolves once the node runs (joined or bootstrapped). */
  async start (opts: { exit?: (code: number) => void } = {}): Promise<void> {
    if (opts.exit !== undefined) this.onExit = opts.exit
    const cfg = this.cfg
    ensureDataDir(cfg.dataDir)
    // Before anything in the dir is read or written: a second daemon on it stops here, and
    // leaves the first one's api.json and state.json alone (finish()).
    this.lock = lockDataDir(cfg.dataDir, (pid) => {
      this.log.warn('took over a stale data dir lock (its daemon is gone)', { dataDir: cfg.dataDir, pid })
    })
    const { key, created } = await loadOrCreateKey(cfg.dataDir)
    this.peerId = peerIdFromPrivateKey(key).toString()
    this.log.info(created ? 'created identity' : 'loaded identity', { peerId: this.peerId, dataDir: cfg.dataDir })
    const psk = cfg.pskFile !== undefined ? readPsk(cfg.pskFile) : undefined
    if (psk !== undefined) this.log.info('private network', { pskFile: cfg.pskFile })
    if (cfg.deliveryLog !== undefined) this.deliveryFd = openSync(cfg.deliveryLog, 'a', 0o600)

    // The API first: /status answers while the node starts and joins.
    const token = randomBytes(24).toString('base64url')
    this.api = new ControlApi(this, token)
    const { host, port } = parseHostPort(cfg.apiListen)
    this.apiUrl = await this.api.listen(host, port)
    this.log.info('control api listening', { url: this.apiUrl })

    const saved = cfg.fresh ? undefined : this.savedState()
    let want: IntervalSet | undefined
    // Saved ranges are asked for in the overlay they were owned in: a contact of an overlay
    // of another size ignores them (state.json reused elsewhere took every virtual node).
    let wantOf: number | undefined
    if (cfg.want !== undefined) want = parseRanges(cfg.want)
    else if (saved !== undefined && saved.owned.length > 0) { want = IntervalSet.fromRanges(saved.owned); wantOf = Number.isSafeInteger(saved.vnodeCount) && saved.vnodeCount >= 1 ? saved.vnodeCount : undefined }

    const contacts = cfg.join.filter((a) => !a.endsWith(`/p2p/${this.peerId}`))
    const init = (): CreateTreecastInit => ({
      privateKey: key,
      listen: cfg.listen,
      ...(cfg.announce.length > 0 ? { announce: cfg.announce } : {}),
      ...(psk !== undefined ? { psk } : {}),
      ...cfg.net,
      core: cfg.core,
      joinTimeoutMs: cfg.joinTimeoutMs,
      // Evicted, the daemon exits so that its supervisor restarts it (below), rather than
      // rejoining in place as a library node does.
      rejoinAttempts: 0,
      contribute: contribution(cfg.contribute)
    })

    if (contacts.length === 0) {
      const n = await this.startNode(init(), key, token)
      this.log.info('node started', { id: n.id, listen: listenAddrs(n) })
      n.bootstrap(cfg.vnodes)
      this.log.info('founded a new overlay', { id: n.id, vnodes: cfg.vnodes })
      // A restarted founder with no `join` (an eviction's restart too) splits from the overlay it was in.
      if (saved !== undefined && saved.owned.length > 0 && !(saved.owned.length === 1 && saved.owned[0]?.[0] === 0 && saved.owned[0][1] === saved.vnodeCount)) {
        this.log.warn('founded a new overlay, though state.json says this peer shared one with other peers: they are not in this one; start with --join <member> to rejoin them', {
          savedVnodes: saved.vnodeCount, savedOwned: formatRanges(IntervalSet.fromRanges(saved.owned))
        })
      }
    } else {
      this.phase = 'joining'
      let joined = false
      // Each attempt runs on a fresh node (same key): "node started" is logged for the
      // first; a later one's id is logged with its attempt only when it changed (a listen
      // port 0 gets a new port, so a new overlay id, each time).
      let lastId: string | undefined
      for (const [i, contact] of contacts.entries()) {
        if (this.shuttingDown) return
        const n = await this.startNode(init(), key, token)
        if (lastId === undefined) this.log.info('node started', { id: n.id, listen: listenAddrs(n) })
        const newId = lastId !== undefined && n.id !== lastId ? { id: n.id, listen: listenAddrs(n) } : {}
        lastId = n.id
        const attempt = `${i + 1}/${contacts.length}`
        this.log.info('joining', { contact, attempt, want: want?.toString(), ...newId })
        try {
          await n.join(contact, { ...(want !== undefined ? { want } : {}), ...(wantOf !== undefined ? { wantOf } : {}) })
          if (wantOf !== undefined && n.vnodeCount() !== wantOf) this.log.warn('state.json was for another overlay: joined as a new peer', { savedVnodes: wantOf, vnodes: n.vnodeCount() })
          joined = true
          break
        } catch (err) {
          this.nodeValue = undefined
          await n.stop().catch(() => {})
          // Stopped by a signal or POST /leave while it waited: not a failure of the join.
          if (this.shuttingDown) return
          const next = contacts[i + 1]
          this.log.warn(next !== undefined ? 'join failed: trying the next contact' : 'join failed', { contact, attempt, err: (err as Error).message, ...(next !== undefined ? { next } : {}) })
        }
      }
      if (!joined) throw new Error(`could not join through any of: ${contacts.join(', ')}`)
      this.log.info('joined', { id: this.nodeValue?.id, owned: this.nodeValue?.owned().toString(), members: this.nodeValue?.members().length })
    }
    if (this.shuttingDown) return
    this.phase = 'running'
    this.saveState()
  }

  /** state.json; one that cannot be used is kept as state.json.bad, with a warning, and the daemon joins as a new peer. */
  private savedState (): SavedState | undefined {
    try {
      return readState(this.cfg.dataDir)
    } catch (err) {
      if (!(err instanceof StateFileError)) throw err
      let keptAs: string | undefined
      try { keptAs = keepBadState(this.cfg.dataDir) } catch { /* left in place: written over once this peer owns virtual nodes */ }
      this.log.warn('state.json is unreadable: not asking for the virtual nodes owned last time (joining as a new peer)', { err: err.message, ...(keptAs !== undefined ? { keptAs } : {}) })
      return undefined
    }
  }

  private async startNode (init: CreateTreecastInit, _key: PrivateKey, token: string): Promise<TreecastNode> {
    const n = await createTreecast(init)
    await n.start()
    this.nodeValue = n
    this.attach(n)
    const id = n.id
    if (!this.warnedLoopback && /\/ip4\/127\./.test(id) && this.cfg.listen.some((a) => a.startsWith('/ip4/0.0.0.0/')) && this.cfg.announce.length === 0) {
      this.warnedLoopback = true
      this.log.warn('the overlay id is a loopback address: peers on other machines cannot dial it; set announce (or listen on the machine\'s address)', { id })
    }
    writeApiInfo(this.cfg.dataDir, { url: this.apiUrl, token, pid: process.pid, peerId: this.peerId, id })
    return n
  }

  /** Said once, not again for each join attempt's fresh node. */
  private warnedLoopback = false

  /** Node events → logs, metrics, state.json, delivery log, /events. */
  private attach (n: TreecastNode): void {
    this.metrics.attach(n)
    const live = (): boolean => this.nodeValue === n
    n.addEventListener('deliver', (e) => {
      const d = e.detail
      const rec = { id: d.id, origin: d.origin, mode: d.mode, vnodes: ranges(d.vnodes), bytes: d.payload.length }
      if (this.deliveryFd !== undefined) {
        const sha = createHash('sha256').update(d.payload).digest('hex').slice(0, 16)
        writeSync(this.deliveryFd, JSON.stringify({ t: Date.now(), peer: this.peerId, ...rec, sha }) + '\n')
      }
      this.log.debug('delivered', { id: d.id, mode: d.mode, vnodes: d.vnodes.toString(), bytes: d.payload.length })
      this.events.publish('deliver', rec)
    })
    n.addEventListener('broadcast-done', (e) => { this.events.publish('broadcast-done', { id: e.detail.id }) })
    n.addEventListener('reduced', (e) => {
      const d = e.detail
      this.log.info('reduced', { id: d.id, ms: Math.round(d.durationMs), covered: d.covered.size })
      this.events.publish('reduced', { id: d.id, value: Array.from(d.value.subarray(0, 1024)), length: d.value.length, covered: ranges(d.covered), durationMs: d.durationMs })
    })
    n.addEventListener('reduce-failed', (e) => {
      this.log.warn('reduction failed', { id: e.detail.id, missing: e.detail.missing.toString() })
      this.events.publish('reduce-failed', { id: e.detail.id, missing: ranges(e.detail.missing) })
    })
    n.addEventListener('member', (e) => {
      this.log.info('member', { peer: e.detail.peer, status: e.detail.status })
      this.events.publish('member', { peer: e.detail.peer, status: e.detail.status })
    })
    n.addEventListener('ownership', (e) => {
      const d = e.detail
      this.log.info('ownership', { reason: d.reason, owned: d.owned.toString(), added: d.added.toString(), removed: d.removed.toString() })
      this.events.publish('ownership', { owned: ranges(d.owned), added: ranges(d.added), removed: ranges(d.removed), reason: d.reason })
      if (live()) this.saveState()
    })
    n.addEventListener('tree', (e) => {
      this.log.debug('parent changed', { kind: e.detail.kind, root: e.detail.root, parent: e.detail.parent })
      this.events.publish('tree', { kind: e.detail.kind, root: e.detail.root, parent: e.detail.parent })
    })
    n.addEventListener('joined', () => { this.events.publish('joined', {}) })
    n.addEventListener('left', (e) => { this.events.publish('left', { drained: e.detail.drained }) })
    n.addEventListener('evicted', () => {
      this.events.publish('evicted', {})
      this.log.error('evicted: the others declared this peer dead; exiting so that a supervisor restarts it (it will ask its ranges back)')
      if (live()) void this.shutdown('evicted', 1, false)
    })
  }

  /** Saves the last non-empty owned set (a graceful leave empties it; a restart asks it back). */
  private saveState (): void {
    const n = this.nodeValue
    if (n === undefined) return
    try {
      const owned = n.owned()
      if (owned.isEmpty) return
      writeState(this.cfg.dataDir, { peerId: this.peerId, overlayId: n.id, vnodeCount: n.vnodeCount(), owned: ranges(owned), savedAt: new Date().toISOString() })
    } catch (err) {
      this.log.warn('cannot save state.json', { err: (err as Error).message })
    }
  }

  /** ApiHost: POST /leave. */
  async leave (): Promise<{ drained: boolean }> {
    const r = this.doLeave()
    void this.shutdown('api leave', 0)
    return await r
  }

  private async doLeave (): Promise<{ drained: boolean }> {
    this.leaving ??= (async () => {
      const n = this.nodeValue
      if (n === undefined || this.phase !== 'running') return { drained: false }
      this.phase = 'leaving'
      this.log.info('leaving', { owned: n.owned().toString() })
      const r = await n.leave()
      this.log.info('left', { drained: r.drained })
      return r
    })()
    return await this.leaving
  }

  /**
   * Leaves (when `graceful` and running), stops the node and the API and exits with
   * `code`; exits with 1 anyway after `shutdownTimeoutMs`.
   */
  async shutdown (reason: string, code: number, graceful = true): Promise<void> {
    if (this.shuttingDown) return
    this.shuttingDown = true
    this.log.info('shutting down', { reason, graceful })
    const timer = setTimeout(() => {
      this.log.error('shutdown took too long; exiting', { timeoutMs: this.cfg.shutdownTimeoutMs })
      this.finish(code === 0 ? 1 : code)
    }, this.cfg.shutdownTimeoutMs)
    try {
      if (graceful) {
        try { await this.doLeave() } catch (err) { this.log.warn('leave failed', { err: (err as Error).message }) }
      }
      this.phase = 'stopped'
      await this.nodeValue?.stop().catch((err: unknown) => { this.log.warn('stop failed', { err: (err as Error).message }) })
      await this.api?.close()
    } finally {
      clearTimeout(timer)
      this.finish(code)
    }
  }

  /** Exits now with `code`, as a second signal asks, with a clean exit's cleanup (api.json, the lock). */
  exitAtOnce (code: number): void { this.finish(code) }

  private finished = false
  private finish (code: number): void {
    if (this.finished) return
    this.finished = true
    this.phase = 'stopped'
    // Only with the lock: without it, api.json is another daemon's.
    if (this.lock !== undefined) {
      try { removeApiInfo(this.cfg.dataDir) } catch { /* gone */ }
      this.lock.release()
    }
    if (this.deliveryFd !== undefined) { try { closeSync(this.deliveryFd) } catch { /* closed */ } }
    this.log.info('exit', { code })
    this.onExit(code)
  }
}

/**
 * Runs a daemon in this process until a signal or POST /leave: the entry point of
 * `treecast start`. A start-up failure exits 1.
 */
export async function runDaemon (cfg: DaemonConfig, log: Logger): Promise<Daemon> {
  installLibp2pGuard()
  const d = new Daemon(cfg, log)
  let signals = 0
  const onSignal = (sig: NodeJS.Signals): void => {
    signals++
    if (signals > 1) {
      log.warn('second signal: exiting at once', { signal: sig })
      // Through finish(): process.exit alone left api.json behind, naming an API nobody served.
      d.exitAtOnce(sig === 'SIGINT' ? 130 : sig === 'SIGHUP' ? 129 : 143)
      return
    }
    log.info('signal received: leaving gracefully (send it again to exit at once)', { signal: sig })
    void d.shutdown(sig, 0)
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  // A closed terminal (or ssh session) sends SIGHUP: by default it killed the daemon at once, which the others took for a crash.
  process.on('SIGHUP', onSignal)
  process.on('unhandledRejection', (reason) => {
    log.error('unhandled rejection', { err: reason instanceof Error ? reason.stack ?? reason.message : String(reason) })
  })
  try {
    await d.start()
  } catch (err) {
    log.error('start failed', { err: (err as Error).message })
    await d.shutdown('start failed', 1, false)
  }
  return d
}
