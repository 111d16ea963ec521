/**
 * Runs one probe at a time (003 §IV-A): a 1-byte ping-pong for the RTT, then a download
 * of `probeBytes` that carries the candidate's state for every tree (and its nearest
 * peers). Times come from the driver's `now`, so the measurement is whatever the network
 * (real or modelled) did. A light probe (the host still knows the bandwidth to the target
 * from a recent download) asks for the tree state only and judges it with that bandwidth.
 *
 * With `probeDownloadOnDemand` (and a host that can tell), a probe without a known bandwidth
 * asks for the tree state first, as a light probe does (the query), and downloads only if
 * that state shows the bandwidth could change a tree (trees/download-wanted.ts); otherwise
 * it is judged for the latency trees alone. One more small round trip when the download
 * is wanted, `probeBytes` saved on the links when it is not.
 */
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import type { Message, NearHint, ProbeReplyMessage, ProbeTreeEntry } from './messages.ts'

/** What the runner needs from the peer around it. */
export interface ProbeHost {
  /** The next peer to probe; undefined when there is no other member. */
  candidate (): PeerId | undefined
  /** The smallest RTT measured to `peer` by earlier probes (Infinity if none). */
  baseRttMs (peer: PeerId): number
  /** The bandwidth to `peer` measured recently enough to reuse (a light probe), if any. */
  knownBwBytesPerSec (peer: PeerId, now: number): number | undefined
  /** A download to `peer` measured `bwBytesPerSec`. */
  measuredBw (peer: PeerId, bwBytesPerSec: number, now: number): void
  send (to: PeerId, msg: Message): void
  setTimer (at: number): void
  /** `bwBytesPerSec` undefined: no download was made (it could not matter), so bandwidth trees are not judged. */
  judged (now: number, cand: PeerId, rttMs: number, bwBytesPerSec: number | undefined, entries: readonly ProbeTreeEntry[], near: readonly NearHint[]): void
  finished (now: number): void
  /** Whether the download from `peer` could change a tree, from the state its query reply carried; absent: always. */
  wantsDownload? (peer: PeerId, rttMs: number, entries: readonly ProbeTreeEntry[]): boolean
}

/** How a reply ended the probe it answered (for the peer's counters). */
export type ProbeOutcome = 'light' | 'download'

/** The runner's settings (overlay/config.ts). */
export interface ProbeRunnerConfig {
  probeTimeoutMs: number
  probeBytes: number
  probePingCount: number
  /** Query the tree state first, download only when it could matter. Absent here: every probe downloads (the core's option defaults to true, overlay/config.ts). */
  probeDownloadOnDemand?: boolean
}

interface InFlight {
  target: PeerId
  nonce: number
  /** ping-pongs, then the tree-state query (on demand only), then the data (light or download). */
  phase: 'ping' | 'query' | 'data'
  sentAt: number
  rttMs: number
  pings: number
  /** Set when the data phase is a light one: the bandwidth reused. */
  knownBw?: number
}

/** The probe in flight, if any. */
export class ProbeRunner {
  private current: InFlight | null = null
  private nonce: number
  /** Added to every nonce: the incarnation's block (overlay/incarnation-numbers.ts), 0 for incarnation 0. */
  private nonceBase = 0
  started = 0
  /** Probes that ended without a download (a reused bandwidth, or none wanted). */
  light = 0
  /**
   * When the probe timer this runner last set fires. One at a time: a probe that starts
   * while one is pending (it fires no later than the new probe's deadline) leaves it, and
   * onTimer sets the next. One per probe left a stale timer behind almost every probe
   * (answered in milliseconds, timed out after seconds): a wake-up of the peer for nothing
   * (a 500-peer cold start, 8 s simulated: 186 k timeout inputs, 98 k without them).
   */
  private armedAt = -Infinity

  /**
   * `lane` (0 or 1) keeps the nonces of two runners of one peer apart: lane 0 uses even
   * nonces, lane 1 odd ones.
   */
  constructor (private readonly host: ProbeHost, private readonly cfg: ProbeRunnerConfig, lane: 0 | 1 = 0) {
    this.nonce = lane - 1
  }

  /**
   * Nonces from `first` - 1 on (the core's incarnation's block, overlay/incarnation-numbers.ts,
   * set when it joins), so that a pong or probe reply still on the wire to an earlier
   * incarnation of this peer never matches a probe of this one.
   */
  numberFrom (first: number): void { this.nonceBase = first - 1 }

  /** The peer probed now, if any. */
  get target (): PeerId | undefined { return this.current?.target }

  private nextNonce (): number {
    this.nonce = (this.nonce + 2) % 0x7ffffffe
    return this.nonceBase + this.nonce + 1
  }

  get inFlight (): boolean { return this.current !== null }

  /** Probes the host's next candidate; finishes at once when there is none. */
  start (now: number): void {
    const target = this.host.candidate()
    if (target === undefined) { this.host.finished(now); return }
    this.current = { target, nonce: this.nextNonce(), phase: 'ping', sentAt: now, rttMs: Infinity, pings: 1 }
    this.started++
    this.host.send(target, { t: 'ping', nonce: this.current.nonce })
    if (this.armedAt <= now) this.arm(now + this.cfg.probeTimeoutMs)
  }

  private arm (at: number): void {
    this.armedAt = at
    this.host.setTimer(at)
  }

  onPong (now: number, from: PeerId, nonce: number): void {
    const c = this.current
    if (c === null || c.phase !== 'ping' || c.target !== from || c.nonce !== nonce) return
    c.rttMs = Math.min(c.rttMs, now - c.sentAt)
    c.sentAt = now
    if (c.pings < this.cfg.probePingCount) {
      // Another ping: the first one may have paid for setting up the connection.
      c.pings++
      c.nonce = this.nextNonce()
      this.host.send(from, { t: 'ping', nonce: c.nonce })
      return
    }
    const known = this.host.knownBwBytesPerSec(from, now)
    if (known !== undefined) {
      c.phase = 'data'
      c.knownBw = known
      this.host.send(from, { t: 'probe-req', nonce: c.nonce, light: true })
    } else if (this.cfg.probeDownloadOnDemand === true && this.host.wantsDownload !== undefined) {
      c.phase = 'query'
      this.host.send(from, { t: 'probe-req', nonce: c.nonce, light: true })
    } else {
      c.phase = 'data'
      this.host.send(from, { t: 'probe-req', nonce: c.nonce })
    }
  }

  /** A probe reply: ends the probe it answers (returns how), or moves a query on to its download. */
  onReply (now: number, from: PeerId, msg: ProbeReplyMessage): ProbeOutcome | undefined {
    const c = this.current
    if (c === null || c.phase === 'ping' || c.target !== from || c.nonce !== msg.nonce) return undefined
    // The download took one RTT (request out, first byte back) plus the transfer itself. The
    // RTT is the smallest ever measured to this peer: a ping that waited behind queued data
    // would otherwise shrink the transfer time and inflate the rate (a wide-area link
    // measured at 60 MB/s because its ping took 55 ms and the download 57 ms).
    const rttMs = Math.max(Math.min(c.rttMs, this.host.baseRttMs(from)), 1e-6)
    if (c.phase === 'query') {
      if (this.host.wantsDownload?.(from, rttMs, msg.trees) === true) {
        c.phase = 'data'
        c.nonce = this.nextNonce()
        c.sentAt = now
        this.host.send(from, { t: 'probe-req', nonce: c.nonce })
        return undefined
      }
      return this.end(now, from, rttMs, undefined, msg)
    }
    let bw = c.knownBw
    if (bw === undefined) {
      const elapsedMs = now - c.sentAt
      const transferMs = Math.max(elapsedMs - rttMs, elapsedMs * 0.05, 1e-6)
      bw = this.cfg.probeBytes / (transferMs / 1000)
      this.host.measuredBw(from, bw, now)
      return this.end(now, from, rttMs, bw, msg, 'download')
    }
    return this.end(now, from, rttMs, bw, msg)
  }

  private end (now: number, from: PeerId, rttMs: number, bw: number | undefined, msg: ProbeReplyMessage, outcome: ProbeOutcome = 'light'): ProbeOutcome {
    if (outcome === 'light') this.light++
    this.current = null
    this.host.judged(now, from, rttMs, bw, msg.trees, msg.near ?? [])
    this.host.finished(now)
    return outcome
  }

  /** Gives up the probe in flight if it waits for `peer` (gone); the host picks the next. */
  abandon (now: number, peer: PeerId): void {
    if (this.current?.target !== peer) return
    this.current = null
    this.host.finished(now)
  }

  /** A probe timer fired (this runner's or another of the peer's): abandon a probe that has not answered. */
  onTimer (now: number): void {
    const c = this.current
    if (c === null) return
    // Compared with the very sum the timer was set at: `now - sentAt` can fall short of the
    // timeout by more than the tolerance at the deadline itself once the clock passes 2^24 ms
    // (rounding), and the same timer was set again for ever.
    const deadline = c.sentAt + this.cfg.probeTimeoutMs
    if (now >= deadline - 1e-9) {
      this.current = null
      this.host.finished(now)
    } else if (this.armedAt <= now) {
      this.arm(deadline)
    }
  }
}
