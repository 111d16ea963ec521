/** bench-net: child processes speaking JSON lines, and runs of this script in a fresh process. */
import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { REPO, SELF_SCRIPT, log, sleep, withTimeout, type Options } from './common.ts'

// ---- child processes ------------------------------------------------------------------------

export type Json = Record<string, unknown>

/** A child process speaking JSON lines (bench-net-peer.ts, or this script's memory parts). */
export class Child {
  readonly proc: ChildProcess
  readonly ready: Promise<Json>
  private readonly waiters = new Map<number, { resolve: (v: Json) => void, reject: (e: Error) => void }>()
  private nextReq = 1
  private readonly exited: Promise<number | null>

  constructor (args: string[], nodeFlags: string[] = []) {
    this.proc = spawn(process.execPath, [...nodeFlags, '--import', './bin/ts-loader.mjs', ...args], { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] })
    let onReady: (v: Json) => void = () => {}
    let onFail: (e: Error) => void = () => {}
    this.ready = new Promise<Json>((resolve, reject) => { onReady = resolve; onFail = reject })
    this.ready.catch(() => {})
    this.exited = new Promise((resolve) => { this.proc.on('exit', (code) => { resolve(code) }) })
    void this.exited.then((code) => {
      const err = new Error(`child ${args.join(' ')} exited with ${String(code)}`)
      onFail(err)
      for (const w of this.waiters.values()) w.reject(err)
      this.waiters.clear()
    })
    createInterface({ input: this.proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      let ev: Json
      try { ev = JSON.parse(line) as Json } catch { log(`child said: ${line}`); return }
      if (ev.ev === 'ready' || ev.ev === 'result') { onReady(ev); return }
      const w = typeof ev.req === 'number' ? this.waiters.get(ev.req) : undefined
      if (w === undefined) return
      this.waiters.delete(ev.req as number)
      if (ev.ev === 'error') w.reject(new Error(String(ev.message)))
      else w.resolve(ev)
    })
  }

  async request (cmd: Json, timeoutMs = 60_000): Promise<Json> {
    const req = this.nextReq++
    const p = new Promise<Json>((resolve, reject) => { this.waiters.set(req, { resolve, reject }) })
    this.proc.stdin?.write(JSON.stringify({ ...cmd, req }) + '\n')
    return await withTimeout(p, timeoutMs, `child ${String(cmd.cmd)}`)
  }

  /** Asks the child to exit; kills it (by its pid) if it does not within `ms`. */
  async close (ms = 8000): Promise<void> {
    if (this.proc.exitCode !== null) return
    this.proc.stdin?.write(JSON.stringify({ cmd: 'exit' }) + '\n')
    this.proc.stdin?.end()
    const code = await Promise.race([this.exited, sleep(ms).then(() => 'late' as const)])
    if (code === 'late' && this.proc.pid !== undefined) process.kill(this.proc.pid, 'SIGKILL')
  }
}

export async function cpuOf (children: readonly Child[]): Promise<Json[]> {
  return await Promise.all(children.map(async (c) => await c.request({ cmd: 'cpu' })))
}

export function cpuShares (before: readonly Json[], after: readonly Json[]): number[] {
  return after.map((a, i) => {
    const b = before[i] as Json
    return (Number(a.cpuMs) - Number(b.cpuMs)) / (Number(a.wallMs) - Number(b.wallMs))
  })
}

/** Common options passed on to the child processes. */
export function childArgs (o: Options): string[] {
  return ['--stable-timeout', String(o.stableTimeoutMs), '--mem-settle', String(o.memSettleMs), '--broadcasts', String(o.broadcasts),
    '--vnodes-per-peer', String(o.vnodesPerPeer), '--wan-delay-ms', String(o.wanDelayMs), '--heartbeat-ms', String(o.heartbeatMs),
    '--ping-edges', String(o.pingEdges), '--pings', String(o.pings), '--seed', String(o.seed),
    '--steady-probe-ms', Number.isNaN(o.steadyProbeMs) ? 'node' : String(o.steadyProbeMs)]
}

/** Runs this script's `mode` in a fresh `node --expose-gc` process; its result. */
export async function inChild (mode: string, extra: string[], o: Options, timeoutMs: number): Promise<Json> {
  const args = [mode, ...extra, ...childArgs(o)]
  log(`fresh process: node --expose-gc --import ./bin/ts-loader.mjs ${SELF_SCRIPT.slice(REPO.length)} ${args.join(' ')}`)
  const child = new Child([SELF_SCRIPT, ...args], ['--expose-gc'])
  try {
    const r = await withTimeout(child.ready, timeoutMs, `${mode} ${extra.join(' ')}`)
    return r.result as Json
  } finally {
    await child.close()
  }
}
