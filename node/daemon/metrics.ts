/**
 * Prometheus metrics of one daemon (`GET /metrics`), on a registry of its own. Counters the
 * node already keeps (probes, bytes sent, rejected frames, messages sent) are read at
 * scrape time; the others count the node's events.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { TreecastNode } from '../create-treecast.ts'

interface Counters {
  core?: { probes?: number, messagesOut?: number, rejected?: Record<string, number> }
  rejected?: Record<string, number>
  sent?: Record<string, number>
  fallbackSends?: Record<string, number>
  bytesByMode?: Record<string, number>
  links?: { bytesSent?: number, dials?: number, dialFailures?: number, pruned?: number, heartbeatsMissed?: number, queueOverflows?: number, stalls?: number }
  bulk?: { opened?: number, pauses?: number, retries?: number }
}

/** Sets a counter to an absolute value read from the node (counters there only grow). */
function setCounter (c: Counter, v: number | undefined, labels?: Record<string, string>): void {
  if (v === undefined || !Number.isFinite(v)) return
  if (labels === undefined) { c.reset(); c.inc(v) } else c.inc(labels, v)
}

export class DaemonMetrics {
  readonly registry = new Registry()
  readonly broadcasts: Counter<'role'>
  readonly broadcastSeconds: Histogram
  readonly reductions: Counter<'result'>
  readonly reductionSeconds: Histogram
  readonly deliveries: Counter<'mode'>
  readonly deliveredBytes: Counter
  readonly parentChanges: Counter<'kind'>
  readonly apiRequests: Counter<'route' | 'code'>

  constructor (node: () => TreecastNode | undefined) {
    const registers = [this.registry]
    collectDefaultMetrics({ register: this.registry, prefix: 'treecast_process_' })
    const read = (): Counters | undefined => {
      const n = node()
      if (n === undefined) return undefined
      try { return n.overlay.counters() as Counters } catch { return undefined }
    }
    new Counter({
      name: 'treecast_probes_total', help: 'Probes answered (probe downloads received)', registers,
      collect () { setCounter(this, read()?.core?.probes) }
    })
    new Counter({
      name: 'treecast_bytes_sent_total', help: 'Bytes written to peers (control and bulk streams)', registers,
      collect () { setCounter(this, read()?.links?.bytesSent) }
    })
    new Counter({
      name: 'treecast_core_messages_sent_total', help: 'Protocol messages sent, by type', labelNames: ['type'], registers,
      collect () {
        const c = read()
        this.reset()
        for (const [type, n] of Object.entries(c?.sent ?? {})) setCounter(this, n, { type })
      }
    })
    const byLabel = (name: string, help: string, label: string, f: (c: Counters | undefined) => Record<string, number> | undefined): void => {
      new Counter({
        name, help, labelNames: [label], registers,
        collect () {
          this.reset()
          for (const [k, n] of Object.entries(f(read()) ?? {})) setCounter(this, n, { [label]: k })
        }
      })
    }
    byLabel('treecast_fallback_sends_total', 'Streams this peer opened point-to-point outside the trees (003 rule III), by mode', 'mode', (c) => c?.fallbackSends)
    byLabel('treecast_payload_bytes_sent_total', 'Payload bytes sent in chunks, by tree (lat, bw) or mode (direct, ...)', 'tree', (c) => c?.bytesByMode)
    new Counter({
      name: 'treecast_rejected_frames_total', help: 'Remote input rejected, by reason (core and transport)', labelNames: ['reason'], registers,
      collect () {
        const c = read()
        this.reset()
        const all: Record<string, number> = {}
        for (const src of [c?.core?.rejected ?? {}, c?.rejected ?? {}]) for (const [r, n] of Object.entries(src)) all[r] = (all[r] ?? 0) + n
        for (const [reason, n] of Object.entries(all)) setCounter(this, n, { reason })
      }
    })
    new Counter({
      name: 'treecast_link_events_total', help: 'Transport events: dials, dial failures, prunes, missed heartbeats, queue overflows, stalls, bulk streams opened/paused/retried', labelNames: ['event'], registers,
      collect () {
        const c = read()
        this.reset()
        const l = c?.links ?? {}
        const b = c?.bulk ?? {}
        const ev: Record<string, number | undefined> = {
          dial: l.dials, dial_failure: l.dialFailures, pruned: l.pruned, heartbeat_missed: l.heartbeatsMissed,
          queue_overflow: l.queueOverflows, stall: l.stalls, bulk_opened: b.opened, bulk_pause: b.pauses, bulk_retry: b.retries
        }
        for (const [event, n] of Object.entries(ev)) setCounter(this, n, { event })
      }
    })
    const gauge = (name: string, help: string, f: (n: TreecastNode) => number): void => {
      new Gauge({
        name, help, registers,
        collect () {
          const n = node()
          if (n === undefined) return
          try { this.set(f(n)) } catch { /* not started */ }
        }
      })
    }
    gauge('treecast_connections', 'Open libp2p connections', (n) => n.libp2p.getConnections().length)
    gauge('treecast_connected_peers', 'Peers with an open treecast control stream', (n) => n.overlay.connectedPeers().length)
    gauge('treecast_members', 'Alive members in this peer\'s view', (n) => n.members().length)
    gauge('treecast_owned_vnodes', 'Virtual nodes owned here', (n) => n.owned().size)
    gauge('treecast_vnodes', 'Virtual nodes of the overlay', (n) => n.vnodeCount())
    gauge('treecast_trees', 'Trees this peer is in', (n) => n.trees().length)

    this.broadcasts = new Counter({ name: 'treecast_broadcasts_total', help: 'Broadcasts started here (role=root) and completed (role=done)', labelNames: ['role'], registers })
    this.broadcastSeconds = new Histogram({ name: 'treecast_broadcast_duration_seconds', help: 'Broadcasts rooted here: start to every virtual node acknowledged', buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120], registers })
    this.reductions = new Counter({ name: 'treecast_reductions_total', help: 'Reductions rooted here, by result', labelNames: ['result'], registers })
    this.reductionSeconds = new Histogram({ name: 'treecast_reduction_duration_seconds', help: 'Reductions rooted here: start to result', buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers })
    this.deliveries = new Counter({ name: 'treecast_deliveries_total', help: 'Payloads delivered here, by mode (lat, bw, direct)', labelNames: ['mode'], registers })
    this.deliveredBytes = new Counter({ name: 'treecast_delivered_bytes_total', help: 'Payload bytes delivered here', registers })
    this.parentChanges = new Counter({ name: 'treecast_parent_changes_total', help: 'Parent changes of this peer, by tree kind', labelNames: ['kind'], registers })
    this.apiRequests = new Counter({ name: 'treecast_api_requests_total', help: 'Control API requests, by route and status code', labelNames: ['route', 'code'], registers })
  }

  /** Counts the node's events. */
  attach (n: TreecastNode): void {
    n.addEventListener('deliver', (e) => {
      this.deliveries.inc({ mode: e.detail.mode })
      this.deliveredBytes.inc(e.detail.payload.length)
    })
    n.addEventListener('tree', (e) => { this.parentChanges.inc({ kind: e.detail.kind }) })
    n.addEventListener('reduced', (e) => {
      this.reductions.inc({ result: 'ok' })
      this.reductionSeconds.observe(e.detail.durationMs / 1000)
    })
    n.addEventListener('reduce-failed', () => { this.reductions.inc({ result: 'failed' }) })
  }

  async text (): Promise<string> { return await this.registry.metrics() }
  get contentType (): string { return this.registry.contentType }
}
