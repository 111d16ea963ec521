/**
 * Progress for long experiments: a cli-progress bar on a TTY, otherwise (CI, pipes, the
 * test suite) plain lines on stderr, at most one per `PLAIN_EVERY_MS` per bar plus the
 * last one. Narrative lines (`log`) go above the bar, or to stderr.
 */
import cliProgress from 'cli-progress'
import type { ProgressBar } from './types.ts'

/** Plain progress lines: at most one per this many ms (plus the final one). */
export const PLAIN_EVERY_MS = 5000

/** Where progress goes; `silent` swallows everything (tests). */
export interface ProgressSink {
  bar(total: number, label: string): ProgressBar
  log(line: string): void
  /** Stops any bar still drawn (call once at the end). */
  close(): void
}

/** A sink for the terminal (cli-progress) or for a non-TTY stderr (plain lines). */
export function progressSink (opts: { tty?: boolean, silent?: boolean } = {}): ProgressSink {
  if (opts.silent === true) return silentSink()
  const tty = opts.tty ?? process.stderr.isTTY === true
  return tty ? ttySink() : plainSink()
}

function silentSink (): ProgressSink {
  const bar: ProgressBar = { tick: () => {}, done: () => {} }
  return { bar: () => bar, log: () => {}, close: () => {} }
}

function ttySink (): ProgressSink {
  const multi = new cliProgress.MultiBar({
    stream: process.stderr,
    format: '{bar} {percentage}% | {value}/{total} | {label} | {duration_formatted}',
    hideCursor: true,
    clearOnComplete: false,
    stopOnComplete: false
  }, cliProgress.Presets.shades_classic)
  return {
    bar (total, label) {
      const bar = multi.create(Math.max(1, total), 0, { label })
      return {
        tick: (steps = 1, next) => bar.increment(steps, next !== undefined ? { label: next } : {}),
        done: () => { bar.update(Math.max(1, total)); bar.stop() }
      }
    },
    log: (line) => multi.log(`${line}\n`),
    close: () => multi.stop()
  }
}

function plainSink (): ProgressSink {
  const write = (line: string): void => { process.stderr.write(`${line}\n`) }
  return {
    bar (total, label) {
      let value = 0
      let current = label
      let lastMs = -Infinity
      let printed = -1
      const t0 = performance.now()
      const line = (): string => `[${label}] ${value}/${total} ${current === label ? '' : current} (${((performance.now() - t0) / 1000).toFixed(1)} s)`
      return {
        tick (steps = 1, next) {
          value += steps
          if (next !== undefined) current = next
          const now = performance.now()
          if (now - lastMs >= PLAIN_EVERY_MS) { lastMs = now; printed = value; write(line()) }
        },
        done () {
          value = total
          if (printed !== value) write(line())
        }
      }
    },
    log: write,
    close: () => {}
  }
}
