/** Runs a TypeScript script of the repository with the project's loader (bin/ts-loader.mjs) to completion (CLI tests). */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const ROOT_DIR = fileURLToPath(new URL('..', import.meta.url))
/** The `treecast` CLI. */
export const TREECAST_BIN = fileURLToPath(new URL('../bin/treecast.ts', import.meta.url))

/** Runs `script` with `args` from the repository's root; killed after `timeoutMs`. */
export async function runScript (script: string, args: string[], timeoutMs = 30_000): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const child = spawn(process.execPath, ['--import', './bin/ts-loader.mjs', script, ...args], { cwd: ROOT_DIR, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d })
  child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d })
  const timer = setTimeout(() => { child.kill('SIGKILL') }, timeoutMs)
  const code = await new Promise<number | null>((resolve) => { child.on('close', (c) => { resolve(c) }) })
  clearTimeout(timer)
  return { code, stdout, stderr }
}
