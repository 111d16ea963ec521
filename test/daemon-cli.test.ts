/**
 * The `treecast` command's output and exit codes, run as processes (bin/treecast.ts):
 * `key generate-psk` writes a swarm key ending in a newline that `start --psk` reads and
 * libp2p takes. Exit codes: 0 ok and --help, 2 a usage error found before any request
 * (a bare `treecast`, which shows help, exited 0), 1 a failure after it: the daemon
 * unreachable or an API error answer, 4xx included (node/README.md). Also `npm run demo:sim` (experiments/demo-sim.ts), whose --help ran the
 * demo: it shows help, and an unknown option exits 2 without running it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { preSharedKey } from '@libp2p/pnet'
import { afterAll, describe, expect, it } from 'vitest'
import { readPsk, resolveConfig } from '../node/daemon/config.ts'
import { Daemon } from '../node/daemon/daemon.ts'
import { createLogger } from '../node/daemon/log.ts'
import { readApiInfo } from '../node/daemon/state.ts'
import { runScript, TREECAST_BIN } from './run-script.ts'

const BIN = TREECAST_BIN
const DEMO_SIM = fileURLToPath(new URL('../experiments/demo-sim.ts', import.meta.url))
const tmp = mkdtempSync(join(tmpdir(), 'treecast-cli-test-'))
afterAll(() => { rmSync(tmp, { recursive: true, force: true }) })

const run = runScript

describe('treecast key generate-psk', () => {
  it('prints a swarm key ending in a newline, which readPsk and libp2p take', async () => {
    const r = await run(BIN, ['key', 'generate-psk'])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^\/key\/swarm\/psk\/1\.0\.0\/\n\/base16\/\n[0-9a-f]{64}\n$/)
    const file = join(tmp, 'swarm.key')
    writeFileSync(file, r.stdout)
    const psk = readPsk(file)
    expect(() => { preSharedKey({ psk })() }).not.toThrow()
  }, 40_000)
})

describe('npm run demo:sim', () => {
  it('--help shows help and exits 0 without running the demo', async () => {
    const r = await run(DEMO_SIM, ['--help'])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^Usage: npm run demo:sim/)
    expect(r.stdout).not.toMatch(/treecast demo:/)
  }, 40_000)

  it('an unknown option or an argument exits 2 naming it, without running the demo', async () => {
    const a = await run(DEMO_SIM, ['--seed', '3'])
    expect(a.code).toBe(2)
    expect(a.stderr).toMatch(/unknown option '--seed'/)
    const b = await run(DEMO_SIM, ['small.json'])
    expect(b.code).toBe(2)
    expect(b.stderr).toMatch(/too many arguments/)
    expect(a.stdout + b.stdout).not.toMatch(/treecast demo:/)
  }, 40_000)
})

describe('treecast exit codes', () => {
  it('0 ok, 2 usage errors before any request, 1 failures after: unreachable daemon, API 4xx', async () => {
    const dir = join(tmp, 'daemon')
    const d = new Daemon(resolveConfig({ flags: { dataDir: dir, listen: ['/ip4/127.0.0.1/tcp/0'], apiListen: '127.0.0.1:0', vnodes: '16' }, env: {} }), createLogger('warn', 'text', () => {}))
    try {
      await d.start({ exit: () => {} })
      const api = ['--data-dir', dir]
      const cases: Array<[string[], number, RegExp]> = [
        [['status', ...api], 0, /^$/],
        [['--help'], 0, /^$/],
        [['help', 'status'], 0, /^$/],
        [[], 2, /Usage: treecast/],
        [['key'], 2, /Usage: treecast key/],
        [['status', '--bogus', ...api], 2, /unknown option '--bogus'/],
        [['reduce', '--op', 'sum', '--length', 'x', ...api], 2, /length: must be a non-negative integer/],
        [['reduce', '--op', 'sum', '--length', '1', '--root', 'r', ...api], 2, /--root needs --id/],
        [['send', '--vnode', '1', '--file', join(tmp, 'missing'), ...api], 2, /file: cannot read/],
        [['status', '--data-dir', join(tmp, 'none')], 2, /no daemon API/],
        [['status', '--api', 'http://127.0.0.1:1', '--token', 't'], 1, /cannot reach the daemon/],
        // An --api that is no http URL is bad usage found before any request (it was 1, "cannot reach the daemon at foo").
        [['status', '--api', 'foo', '--token', 't'], 2, /api: not an http\(s\) URL: "foo"/],
        [['status', '--api', 'http://127.0.0.1:99999', '--token', 't'], 2, /api: not an http\(s\) URL/],
        [['status', '--api', 'ftp://127.0.0.1:1', '--token', 't'], 2, /api: not an http\(s\) URL/],
        [['status', '--api', readApiInfo(dir)!.url, '--token', 'wrong'], 1, /GET \/status: 401 /],
        [['trees', '--root', 'nobody', ...api], 1, /GET \/trees\?root=nobody: 404 no tree rooted at nobody/],
        [['send', '--vnode', '99', '--file', BIN, ...api], 1, /POST \/send\?vnode=99: 400 vnode must be in 0\.\.15/]
      ]
      for (const [args, code, stderr] of cases) {
        const r = await run(BIN, args)
        expect([args.join(' '), r.code]).toEqual([args.join(' '), code])
        expect(r.stderr).toMatch(stderr)
      }
    } finally {
      await d.shutdown('test over', 0, false)
    }
  }, 120_000)
})
