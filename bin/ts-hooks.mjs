/**
 * Module hooks that run treecast's TypeScript sources on Node 20 (registered by
 * bin/ts-loader.mjs). Each `.ts` file is transformed on its own by esbuild, with the
 * compiler options of tsconfig.json and an inline source map for stack traces.
 *
 * Why not tsx, which does the same: tsx always transforms with esbuild's `keepNames`,
 * which follows every class and named function with `Object.defineProperty(f, 'name')`.
 * That puts each of them (classes, and the closures every core builds for its host
 * objects) into V8's dictionary mode. The simulator's 2,000-peer broadcasts ran about a
 * fifth slower under it (BENCHMARKS.md, thirty-fourth round). Nothing here needs the
 * names kept: JavaScript names classes and functions itself.
 */
import { readFile } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import process from 'node:process'
import { URL, fileURLToPath } from 'node:url'
import { transform } from 'esbuild'

const tsconfig = JSON.parse(readFileSync(new URL('../tsconfig.json', import.meta.url), 'utf8'))
/** Only the options that change the emitted JavaScript (class fields, imports kept as written). */
const tsconfigRaw = {
  compilerOptions: {
    target: tsconfig.compilerOptions.target,
    verbatimModuleSyntax: tsconfig.compilerOptions.verbatimModuleSyntax,
    useDefineForClassFields: tsconfig.compilerOptions.useDefineForClassFields
  }
}

/** Node's `load` hook: `.ts` files (and `.mts`) as ES modules, everything else as Node would. */
export async function load (url, context, nextLoad) {
  if (!url.startsWith('file:') || !/\.m?ts$/.test(url)) return nextLoad(url, context)
  const path = fileURLToPath(url)
  const { code } = await transform(await readFile(path, 'utf8'), {
    loader: 'ts',
    format: 'esm',
    target: `node${process.versions.node}`,
    sourcemap: 'inline',
    sourcefile: path,
    tsconfigRaw
  })
  return { format: 'module', source: code, shortCircuit: true }
}
