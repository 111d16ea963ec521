/**
 * The daemon's configuration in-process: JSON and TOML files hold the same fields,
 * precedence is defaults < file < environment < flags, and every bad value is a
 * ConfigError naming its field (the CLI turns it into exit code 2; test/daemon.test.ts
 * checks that end to end).
 *
 * Limits the daemon met only after it had started: `vnodes` past 2^31 (virtual node ids are
 * below 2^31) passed and the start failed with exit 1 (`range [0, 4294967296) outside
 * [0, 2^31)`); a time past 2^31 - 1 ms (Node's longest timer) passed and Node set it to
 * 1 ms: `shutdownTimeoutMs` 99999999999 exited 1 at once ("shutdown took too long"), and
 * `joinTimeoutMs` as much failed every join at once ("no answer"). Both are config errors now.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { preSharedKey } from '@libp2p/pnet'
import { ConfigError, DEFAULTS, readConfigFile, readPsk, resolveConfig } from '../node/daemon/config.ts'

const tmp = mkdtempSync(join(tmpdir(), 'treecast-config-'))
function file (name: string, text: string): string {
  const p = join(tmp, name)
  writeFileSync(p, text)
  return p
}
function fieldOf (fn: () => unknown): string {
  try { fn() } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return (err as ConfigError).field
  }
  throw new Error('expected a ConfigError')
}

const TOML = `
listen = ["/ip4/127.0.0.1/tcp/4100"]
join = ["/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWRBy97UB99e3J6hiPesre1MZeuNQvfan4gBziswrRJsNK"]
vnodes = 4096
want = "0-99,200-299"
dataDir = "/var/lib/treecast"
logLevel = "debug"
fresh = true

[core]
probeTimeoutMs = 2000
switchPointBytes = 262144

[net]
maxPeers = 32
`

describe('daemon config files', () => {
  it('reads TOML with the same fields and tables as JSON', () => {
    const fromToml = resolveConfig({ file: readConfigFile(file('a.toml', TOML)), env: {} })
    const json = {
      listen: ['/ip4/127.0.0.1/tcp/4100'],
      join: ['/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWRBy97UB99e3J6hiPesre1MZeuNQvfan4gBziswrRJsNK'],
      vnodes: 4096,
      want: '0-99,200-299',
      dataDir: '/var/lib/treecast',
      logLevel: 'debug',
      fresh: true,
      core: { probeTimeoutMs: 2000, switchPointBytes: 262144 },
      net: { maxPeers: 32 }
    }
    const fromJson = resolveConfig({ file: readConfigFile(file('a.json', JSON.stringify(json))), env: {} })
    expect(fromToml).toEqual(fromJson)
    expect(fromToml.vnodes).toBe(4096)
    expect(fromToml.core).toEqual({ probeTimeoutMs: 2000, switchPointBytes: 262144 })
    expect(fromToml.net).toEqual({ maxPeers: 32 })
    expect(fromToml.apiListen).toBe(DEFAULTS.apiListen)
  })

  it('environment beats the file and flags beat the environment', () => {
    const raw = readConfigFile(file('b.toml', 'vnodes = 10\nlogLevel = "warn"\nprobeTimeoutMs = 100\n'))
    const env = { TREECAST_VNODES: '20', TREECAST_LOG_LEVEL: 'error', TREECAST_PROBE_TIMEOUT_MS: '200' }
    const a = resolveConfig({ file: raw, env })
    expect([a.vnodes, a.logLevel, a.core.probeTimeoutMs]).toEqual([20, 'error', 200])
    const b = resolveConfig({ file: raw, env, flags: { vnodes: '30', probeTimeoutMs: '300' } })
    expect([b.vnodes, b.logLevel, b.core.probeTimeoutMs]).toEqual([30, 'error', 300])
    // a node option by its own variable: dialAttempts
    expect(resolveConfig({ file: {}, env: { TREECAST_DIAL_ATTEMPTS: '3' } }).net).toEqual({ dialAttempts: 3 })
  })

  it('names the bad field for bad values, whichever the format', () => {
    expect(fieldOf(() => resolveConfig({ file: readConfigFile(file('c.toml', 'vnodes = "many"\n')) }))).toBe('vnodes')
    expect(fieldOf(() => resolveConfig({ file: readConfigFile(file('d.toml', 'vnodes = 1.5\n')) }))).toBe('vnodes')
    // Past 2^53 the TOML parser gives a bigint: rejected, not rounded, and the message still prints it.
    const big = (): unknown => resolveConfig({ file: readConfigFile(file('e.toml', 'shutdownTimeoutMs = 123456789012345678901\n')) })
    expect(fieldOf(big)).toBe('shutdownTimeoutMs')
    expect(() => big()).toThrow(/123456789012345678901/)
    expect(fieldOf(() => resolveConfig({ file: readConfigFile(file('f.toml', 'colour = "blue"\n')) }))).toBe('colour')
    expect(fieldOf(() => resolveConfig({ file: readConfigFile(file('g.toml', '[core]\nprobeTimeoutMs = -5\n')) }))).toBe('core.probeTimeoutMs')
    expect(fieldOf(() => resolveConfig({ file: readConfigFile(file('h.toml', 'listen = ["nonsense"]\n')) }))).toBe('listen')
    expect(fieldOf(() => resolveConfig({ file: {}, env: { TREECAST_FRESH: 'maybe' } }))).toBe('fresh')
    // A misspelt option in [core] or [net] is an error, not a silent default.
    expect(fieldOf(() => resolveConfig({ file: readConfigFile(file('o.toml', '[core]\nprobeTimeoutMz = 500\n')) }))).toBe('core.probeTimeoutMz')
    expect(fieldOf(() => resolveConfig({ file: readConfigFile(file('p.toml', '[net]\nmaxPeerz = 32\n')) }))).toBe('net.maxPeerz')
    expect(fieldOf(() => resolveConfig({ file: readConfigFile(file('q.toml', '[core]\nprobe-timeout-ms = 500\n')) }))).toBe('core.probe-timeout-ms')
  })

  it('a file that does not parse or is missing is a config error with the path', () => {
    expect(fieldOf(() => readConfigFile(file('i.toml', 'vnodes = = 3\n')))).toBe('config')
    expect(() => readConfigFile(file('j.toml', 'vnodes = = 3\n'))).toThrow(/not valid TOML/)
    expect(() => readConfigFile(file('k.json', '{ "vnodes": '))).toThrow(/not valid JSON/)
    expect(() => readConfigFile(file('l.json', '[1, 2]'))).toThrow(/must hold a JSON object/)
    expect(() => readConfigFile(join(tmp, 'missing.toml'))).toThrow(/cannot read/)
    expect(fieldOf(() => readConfigFile(file('m.toml', '[a]\n__proto__ = 1\n')))).toBe('config')
  })

  it('TOML dates are not numbers or strings a field accepts as such', () => {
    expect(fieldOf(() => resolveConfig({ file: readConfigFile(file('n.toml', 'vnodes = 2026-11-23\n')) }))).toBe('vnodes')
  })

  it('a swarm key file with a trailing newline, CRLF or spaces is read, and libp2p takes what readPsk returns', () => {
    const hex = '0123456789abcdef'.repeat(4)
    const libp2pTakes = (psk: Uint8Array): void => { preSharedKey({ psk })() }
    for (const [name, text] of [
      ['k1', `/key/swarm/psk/1.0.0/\n/base16/\n${hex}`],
      ['k2', `/key/swarm/psk/1.0.0/\n/base16/\n${hex}\n`],
      ['k3', `/key/swarm/psk/1.0.0/\r\n/base16/\r\n${hex}\r\n`],
      // libp2p alone rejects this one (the space after the key): the daemon failed to start with its "invalid" error.
      ['k4', `/key/swarm/psk/1.0.0/ \n/base16/\n${hex} \n\n`],
      ['k5', `/key/swarm/psk/1.0.0/\n/base16/\n${hex.toUpperCase()}\n`]
    ] as const) {
      const psk = readPsk(file(name, text))
      expect(() => { libp2pTakes(psk) }, name).not.toThrow()
      expect(new TextDecoder().decode(psk)).toBe(`/key/swarm/psk/1.0.0/\n/base16/\n${hex}`)
    }
    expect(fieldOf(() => readPsk(file('k6', `/key/swarm/psk/1.0.0/\n/base16/\n${hex.slice(2)}\n`)))).toBe('pskFile')
    expect(fieldOf(() => readPsk(file('k7', `${hex}\n`)))).toBe('pskFile')
  })
})

describe('limits the daemon met only after it had started', () => {
  it('vnodes past 2^31 is a config error naming vnodes; 2^31 is the largest accepted', () => {
    for (const v of [String(2 ** 31 + 1), String(2 ** 32)]) {
      expect(fieldOf(() => resolveConfig({ file: {}, env: {}, flags: { vnodes: v } }))).toBe('vnodes')
    }
    expect(resolveConfig({ file: {}, env: {}, flags: { vnodes: String(2 ** 31) } }).vnodes).toBe(2 ** 31)
  })

  it('a time past 2^31 - 1 ms (Node runs longer timers after 1 ms) is a config error naming the field', () => {
    const tooLong = String(2 ** 31)
    expect(fieldOf(() => resolveConfig({ file: {}, env: {}, flags: { shutdownTimeoutMs: tooLong } }))).toBe('shutdownTimeoutMs')
    expect(fieldOf(() => resolveConfig({ file: {}, env: { TREECAST_JOIN_TIMEOUT_MS: tooLong } }))).toBe('joinTimeoutMs')
    expect(fieldOf(() => resolveConfig({ file: {}, env: {}, flags: { leaveTimeoutMs: tooLong } }))).toBe('core.leaveTimeoutMs')
    expect(fieldOf(() => resolveConfig({ file: { core: { transferIdleMs: 2 ** 31 } }, env: {} }))).toBe('core.transferIdleMs')
    expect(fieldOf(() => resolveConfig({ file: { net: { dialTimeoutMs: 2 ** 31 } }, env: {} }))).toBe('net.dialTimeoutMs')
    expect(() => resolveConfig({ file: {}, env: {}, flags: { shutdownTimeoutMs: tooLong } })).toThrow(/2147483647/)
    const longest = String(2 ** 31 - 1)
    const ok = resolveConfig({ file: {}, env: {}, flags: { shutdownTimeoutMs: longest, joinTimeoutMs: longest, leaveTimeoutMs: longest } })
    expect([ok.shutdownTimeoutMs, ok.joinTimeoutMs, ok.core.leaveTimeoutMs]).toEqual([2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1])
  })
})

describe('log format', () => {
  it('is a field like the others: file, TREECAST_LOG_FORMAT and flag, a bad value a config error', () => {
    // TREECAST_LOG_FORMAT=xml (or JSON) started the daemon with text logs, and a config
    // file's logFormat was an unknown field, though the help lists it with the others.
    expect(resolveConfig({ file: {}, env: {} }).logFormat).toBe('text')
    expect(resolveConfig({ file: { logFormat: 'json' }, env: {} }).logFormat).toBe('json')
    expect(resolveConfig({ file: { logFormat: 'json' }, env: { TREECAST_LOG_FORMAT: 'text' } }).logFormat).toBe('text')
    expect(resolveConfig({ file: {}, env: { TREECAST_LOG_FORMAT: 'text' }, flags: { logFormat: 'json' } }).logFormat).toBe('json')
    for (const bad of ['xml', 'JSON']) expect(fieldOf(() => resolveConfig({ file: {}, env: { TREECAST_LOG_FORMAT: bad } }))).toBe('logFormat')
    expect(fieldOf(() => resolveConfig({ file: { logFormat: 1 }, env: {} }))).toBe('logFormat')
    expect(fieldOf(() => resolveConfig({ file: {}, env: {}, flags: { logFormat: 'xml' } }))).toBe('logFormat')
  })
})

describe('environment variables', () => {
  it('a TREECAST_* variable the daemon does not know is a config error naming it, as an unknown field of a file is', () => {
    // TREECAST_VNODE=64 (for TREECAST_VNODES) or TREECAST_PROBE_TIMEOUT=3000 were ignored in silence.
    expect(fieldOf(() => resolveConfig({ file: {}, env: { TREECAST_VNODE: '64' } }))).toBe('TREECAST_VNODE')
    expect(() => resolveConfig({ file: {}, env: { TREECAST_PROBE_TIMEOUT: '3000' } })).toThrow(/unknown environment variable/)
    // The client's and the CLI's own variables, and other programs' variables, are not the daemon's business.
    const cfg = resolveConfig({ file: {}, env: { TREECAST_API: 'http://127.0.0.1:1', TREECAST_TOKEN: 't', TREECAST_CONFIG: '/x.json', TREECAST_VNODES: '8', PATH: '/bin', TREECASTLESS: '1' } })
    expect(cfg.vnodes).toBe(8)
  })
})
