/**
 * The protocol core (virtual-nodes/, trees/, overlay/) is sans-IO: no clock, no timers, no
 * ambient randomness, no process, no Node built-ins, no networking stack. This test reads
 * the sources and fails, with file:line, on anything that would break that.
 */
import { describe, expect, it } from 'vitest'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const CORE_DIRS = ['virtual-nodes', 'trees', 'overlay']

/** Forbidden identifiers in code (outside comments). */
const FORBIDDEN_CODE: ReadonlyArray<{ what: string, re: RegExp }> = [
  { what: 'Date.now', re: /\bDate\s*\.\s*now\b/ },
  { what: 'performance.now', re: /\bperformance\s*\.\s*now\b/ },
  { what: 'setTimeout', re: /(?<![\w$])setTimeout\b/ },
  { what: 'setInterval', re: /(?<![\w$])setInterval\b/ },
  { what: 'setImmediate', re: /(?<![\w$])setImmediate\b/ },
  { what: 'Math.random', re: /\bMath\s*\.\s*random\b/ },
  // The global, not a property called `process` (`x.process.y`).
  { what: 'process.', re: /(?<![\w$.])process\s*\./ },
  { what: 'require(', re: /(?<![\w$.])require\s*\(/ }
]

const BUILTINS = new Set(builtinModules.filter((m) => !m.startsWith('_')))

/** Why importing `spec` is forbidden in the core, or undefined when it is fine. */
function forbiddenModule (spec: string): string | undefined {
  if (spec.startsWith('node:')) return `Node built-in '${spec}'`
  const base = spec.split('/')[0] ?? spec
  if (BUILTINS.has(spec) || BUILTINS.has(base)) return `Node built-in '${spec}'`
  if (spec.startsWith('@libp2p/')) return `libp2p module '${spec}'`
  if (spec === 'libp2p' || spec.startsWith('libp2p/')) return `libp2p module '${spec}'`
  if (spec.startsWith('@chainsafe/')) return `libp2p module '${spec}'`
  if (spec === 'it-pipe' || spec.startsWith('it-pipe/')) return `stream module '${spec}'`
  return undefined
}

/** Module specifiers: static imports/exports, side-effect imports, dynamic imports, require. */
const MODULE_RES: readonly RegExp[] = [
  /\bfrom\s*(['"])([^'"\n]+)\1/g,
  /\bimport\s*(['"])([^'"\n]+)\1/g,
  /\bimport\s*\(\s*(['"`])([^'"`\n]+)\1/g,
  /(?<![\w$.])require\s*\(\s*(['"`])([^'"`\n]+)\1/g
]

/**
 * Replaces every comment (line, block, TSDoc) by spaces, keeping newlines so line numbers
 * stay right. Strings, template literals (with nested `${}`) and regular expression
 * literals are kept verbatim, and comment markers inside them are not comments.
 */
function stripComments (src: string): string {
  const out = src.split('')
  const blank = (from: number, to: number): void => {
    for (let k = from; k < to; k++) if (out[k] !== '\n' && out[k] !== '\r') out[k] = ' '
  }
  // Stack of open template literals: the brace depth of the `${` we are inside.
  const templates: number[] = []
  let braces = 0
  let lastSignificant = ''
  let i = 0
  const n = src.length
  const skipQuoted = (q: string): void => {
    i++
    while (i < n && src[i] !== q && src[i] !== '\n') i += src[i] === '\\' ? 2 : 1
    i++
  }
  /** Scans template text from i (just after ` or }) up to its end or the next `${`. */
  const skipTemplateText = (): void => {
    while (i < n) {
      const c = src[i]
      if (c === '\\') { i += 2; continue }
      if (c === '`') { i++; return }
      if (c === '$' && src[i + 1] === '{') { i += 2; templates.push(braces); braces = 0; return }
      i++
    }
  }
  while (i < n) {
    const c = src[i] as string
    const d = src[i + 1]
    if (c === '/' && d === '/') {
      const end = src.indexOf('\n', i)
      const stop = end < 0 ? n : end
      blank(i, stop)
      i = stop
      continue
    }
    if (c === '/' && d === '*') {
      const end = src.indexOf('*/', i + 2)
      const stop = end < 0 ? n : end + 2
      blank(i, stop)
      i = stop
      continue
    }
    if (c === '\'' || c === '"') { skipQuoted(c); lastSignificant = 'a'; continue }
    if (c === '`') { i++; skipTemplateText(); lastSignificant = 'a'; continue }
    if (c === '/' && (lastSignificant === '' || '(,=:[!&|?{};+-*%<>~^'.includes(lastSignificant))) {
      // A regular expression literal.
      i++
      let inClass = false
      while (i < n && src[i] !== '\n') {
        const r = src[i]
        if (r === '\\') { i += 2; continue }
        if (r === '[') inClass = true
        else if (r === ']') inClass = false
        else if (r === '/' && !inClass) break
        i++
      }
      i++
      lastSignificant = 'a'
      continue
    }
    if (c === '{') braces++
    if (c === '}') {
      if (braces === 0 && templates.length > 0) {
        braces = templates.pop() as number
        i++
        skipTemplateText()
        lastSignificant = 'a'
        continue
      }
      braces--
    }
    if (!/\s/.test(c)) lastSignificant = /[\w$)\]]/.test(c) ? 'a' : c
    i++
  }
  return out.join('')
}

/** One violation: line (1-based) and what was found. */
interface Violation { line: number, what: string }

/** Every sans-IO violation in one source text. */
function scanSource (src: string): Violation[] {
  const code = stripComments(src)
  const lines = code.split('\n')
  const out: Violation[] = []
  lines.forEach((text, i) => {
    for (const f of FORBIDDEN_CODE) if (f.re.test(text)) out.push({ line: i + 1, what: f.what })
  })
  for (const re of MODULE_RES) {
    for (const m of code.matchAll(re)) {
      const spec = m[2] ?? ''
      const why = forbiddenModule(spec)
      if (why === undefined) continue
      const line = code.slice(0, m.index).split('\n').length
      out.push({ line, what: `import of ${why}` })
    }
  }
  return out.sort((a, b) => a.line - b.line)
}

function tsFilesUnder (dir: string): string[] {
  const out: string[] = []
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) out.push(...tsFilesUnder(p))
    else if (name.endsWith('.ts')) out.push(p)
  }
  return out.sort()
}

describe('sans-IO core', () => {
  it('no clock, timer, randomness, process, Node built-in or networking import in virtual-nodes/, trees/, overlay/', () => {
    const files = CORE_DIRS.flatMap((d) => tsFilesUnder(join(ROOT, d)))
    // The scan must have something to scan: each folder holds sources.
    for (const d of CORE_DIRS) expect(files.some((f) => relative(ROOT, f).startsWith(d + '/')), d).toBe(true)
    const report: string[] = []
    for (const f of files) {
      for (const v of scanSource(readFileSync(f, 'utf8'))) report.push(`${relative(ROOT, f)}:${v.line}: ${v.what}`)
    }
    expect(report, `sans-IO violations:\n${report.join('\n')}`).toEqual([])
  })

  it('the core does not even name a clock, timer or randomness API in its comments (a plain text search for them finds nothing)', () => {
    const names = FORBIDDEN_CODE.filter((f) => !['process.', 'require('].includes(f.what))
    const report: string[] = []
    for (const f of CORE_DIRS.flatMap((d) => tsFilesUnder(join(ROOT, d)))) {
      readFileSync(f, 'utf8').split('\n').forEach((text, i) => {
        for (const n of names) if (n.re.test(text)) report.push(`${relative(ROOT, f)}:${i + 1}: ${n.what}`)
      })
    }
    expect(report, `named in the core:\n${report.join('\n')}`).toEqual([])
  })

  it('the scanner flags each forbidden construct at the right line', () => {
    const src = [
      'const a = 1',
      'const t = Date.now()',
      'const p = performance.now()',
      'setTimeout(() => {}, 5)',
      'const h = setInterval(f, 1)',
      'setImmediate(f)',
      'const r = Math.random()',
      'const e = process.env.X',
      "import { readFileSync } from 'node:fs'",
      "import { createLibp2p } from 'libp2p'",
      "import { tcp } from '@libp2p/tcp'",
      "import { noise } from '@chainsafe/libp2p-noise'",
      "import { pipe } from 'it-pipe'",
      "const fs = require('fs')",
      "import crypto from 'crypto'",
      "const m = await import('node:net')",
      "export { x } from 'node:os'"
    ].join('\n')
    const found = scanSource(src)
    expect(found.map((v) => v.line)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 14, 15, 16, 17])
    expect(found.find((v) => v.line === 2)?.what).toBe('Date.now')
    expect(found.filter((v) => v.line === 14).map((v) => v.what).sort()).toEqual(["import of Node built-in 'fs'", 'require('].sort())
  })

  it('the scanner ignores comments, TSDoc and comment markers inside strings', () => {
    const src = [
      '// Date.now() is not used here',
      '/**',
      ' * Never call Math.random or setTimeout: time is injected.',
      " * import x from 'node:fs'",
      ' */',
      'const a = 1 /* process.exit() */ + 2',
      "const url = 'http://example.org' // Date.now()",
      'const re = /^[a-z]\\/\\/$/ // performance.now()',
      'const s = `a ${"b" /* setInterval */} c` // require("x")',
      'const ok = host.setTimer(now + 5) // a method, not a global',
      'const sub = this.process.count // a field named process'
    ].join('\n')
    expect(scanSource(src)).toEqual([])
    // Code after a comment on the same line or after a block comment is still scanned.
    expect(scanSource('/* c */ const t = Date.now()\nconst u = 1 // x\nMath.random()')).toEqual([
      { line: 1, what: 'Date.now' },
      { line: 3, what: 'Math.random' }
    ])
    // A string that looks like a comment does not hide the code after it.
    expect(scanSource("const s = '/*'; Date.now(); const z = '*/'")).toEqual([{ line: 1, what: 'Date.now' }])
  })

  it('stripComments keeps line numbers and code verbatim', () => {
    const src = 'a /* x\ny */ b\n// z\nc'
    const out = stripComments(src)
    expect(out.split('\n').length).toBe(4)
    expect(out.replace(/\s+/g, ' ').trim()).toBe('a b c')
  })
})
