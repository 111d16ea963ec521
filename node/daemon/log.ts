/**
 * Structured logs for the daemon: one line per record on stderr,
 * `2026-01-01T12:00:00.000Z info joined id=/ip4/... members=5`, or JSON lines with
 * `format: 'json'`. Debug namespaces are separate, in libp2p's style (node/log.ts):
 * `DEBUG='treecast*'` for the node's, `DEBUG=libp2p:*` for libp2p's.
 */
import type { LogLevel } from './config.ts'

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 }

export type Fields = Record<string, unknown>

export interface Logger {
  debug (msg: string, fields?: Fields): void
  info (msg: string, fields?: Fields): void
  warn (msg: string, fields?: Fields): void
  error (msg: string, fields?: Fields): void
}

function fmt (v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v)
  if (v instanceof Error) return JSON.stringify(v.message)
  return JSON.stringify(v) ?? 'undefined'
}

export function createLogger (level: LogLevel, format: 'text' | 'json' = 'text', write: (line: string) => void = (l) => { process.stderr.write(l) }): Logger {
  const min = RANK[level]
  const log = (lvl: LogLevel, msg: string, fields: Fields = {}): void => {
    if (RANK[lvl] < min) return
    const time = new Date().toISOString()
    if (format === 'json') {
      write(JSON.stringify({ time, level: lvl, msg, ...fields }, (_k, v: unknown) => v instanceof Error ? v.message : v) + '\n')
      return
    }
    const kv = Object.entries(fields).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${fmt(v)}`).join(' ')
    write(`${time} ${lvl} ${msg}${kv === '' ? '' : ' ' + kv}\n`)
  }
  return {
    debug: (m, f) => { log('debug', m, f) },
    info: (m, f) => { log('info', m, f) },
    warn: (m, f) => { log('warn', m, f) },
    error: (m, f) => { log('error', m, f) }
  }
}
