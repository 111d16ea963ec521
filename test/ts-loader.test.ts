/**
 * bin/ts-loader.mjs: how everything here runs its TypeScript (README, Architecture), and
 * what the README tells library users to import (`node --import treecast/ts-loader`). The
 * package exports it, so an application resolves it by the package's name, and with it
 * registered `import('treecast')` loads the sources.
 */
import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { ROOT_DIR } from './run-script.ts'

const node = (...args: string[]): ReturnType<typeof spawnSync> =>
  spawnSync(process.execPath, args, { cwd: ROOT_DIR, encoding: 'utf8', timeout: 60_000 })

describe('the TypeScript loader', () => {
  it('is exported as treecast/ts-loader, and with it the package\'s entry point loads', () => {
    const r = node('--import', 'treecast/ts-loader', '--input-type=module', '-e', "const m = await import('treecast'); console.log(typeof m.createTreecast, typeof m.InvalidArgumentError)")
    expect(r.status, String(r.stderr)).toBe(0)
    expect(String(r.stdout).trim()).toBe('function function')
  })

  it('keeps no function names by hand: classes stay out of dictionary mode, and stack traces point into the .ts sources', () => {
    const script = [
      "const { IntervalSet } = await import('./virtual-nodes/interval-set.ts')",
      "const { parseScenario } = await import('./experiments/sim/scenario.ts')",
      'const fast = new Function("f", "return %HasFastProperties(f)")',
      'let where = ""',
      'try { parseScenario({}) } catch (err) { where = String(err.stack).split("\\n")[1] }',
      'console.log(fast(IntervalSet), IntervalSet.name, where)'
    ].join('\n')
    const r = node('--allow-natives-syntax', '--import', './bin/ts-loader.mjs', '--input-type=module', '-e', script)
    expect(r.status, String(r.stderr)).toBe(0)
    const [fast, name, ...where] = String(r.stdout).trim().split(' ')
    expect(fast).toBe('true')
    expect(name).toBe('IntervalSet')
    expect(where.join(' ')).toMatch(/experiments\/sim\/scenario\.ts:\d+:\d+/)
  })
})
