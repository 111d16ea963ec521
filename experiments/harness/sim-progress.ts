/**
 * Progress of one long simulator run (`Simulation.run`'s `progress`) on a progress bar:
 * virtual seconds done out of the scenario's `until`. The sim CLI and the bench show it on
 * stderr on a terminal, or on a pipe with `--progress`; fig9 and the scale experiment on
 * their own bars. Nothing goes to stdout, so `--json` output stays clean.
 */
import { progressSink } from './progress.ts'
import type { ProgressBar } from './types.ts'

export interface SimProgress {
  /** Pass to `Simulation.run`. */
  readonly onProgress: (simulatedMs: number, untilMs: number) => void
  /** Ends the bar (call once after the run, also when it threw). */
  done (): void
}

/** Drives a bar made by `makeBar` (on the first report, with the run's length in seconds as its total). */
export function simProgress (label: string, makeBar: (total: number, label: string) => ProgressBar): SimProgress {
  let bar: ProgressBar | undefined
  let shown = 0
  return {
    onProgress (simulatedMs, untilMs) {
      const total = Math.max(1, Math.ceil(untilMs / 1000))
      bar ??= makeBar(total, label)
      const s = Math.min(total, Math.floor(simulatedMs / 1000))
      if (s > shown) { bar.tick(s - shown); shown = s }
    },
    done () { bar?.done() }
  }
}

/** For the command line: a bar on stderr if `show` (cli-progress on a TTY, else plain lines), else nothing. */
export function stderrSimProgress (label: string, show: boolean): SimProgress {
  const sink = progressSink({ silent: !show })
  const p = simProgress(label, (total, l) => sink.bar(total, l))
  return { onProgress: p.onProgress, done: () => { p.done(); sink.close() } }
}
