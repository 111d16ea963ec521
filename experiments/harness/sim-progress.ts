/**
 * A progress bar for one long simulator run (`Simulation.run`'s `progress`): virtual
 * seconds done out of the scenario's `until`. The sim CLI and the bench show it on a
 * terminal, or on a pipe with `--progress` (plain lines on stderr, one per 5 s); it never
 * touches stdout, so `--json` output stays clean.
 */
import { progressSink, type ProgressSink } from './progress.ts'
import type { ProgressBar } from './types.ts'

export interface SimProgress {
  /** Pass to `Simulation.run`. */
  readonly onProgress: (simulatedMs: number, untilMs: number) => void
  /** Ends the bar (call once after the run, also when it threw). */
  done (): void
}

/** A bar labelled `label` on `sink` (default: stderr, a cli-progress bar on a TTY); none at all unless `show`. */
export function simProgress (label: string, show: boolean, sink: ProgressSink = progressSink({ silent: !show })): SimProgress {
  let bar: ProgressBar | undefined
  let shown = 0
  return {
    onProgress (simulatedMs, untilMs) {
      const total = Math.max(1, Math.ceil(untilMs / 1000))
      bar ??= sink.bar(total, label)
      const s = Math.min(total, Math.floor(simulatedMs / 1000))
      if (s > shown) { bar.tick(s - shown); shown = s }
    },
    done () {
      bar?.done()
      sink.close()
    }
  }
}
