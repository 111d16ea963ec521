/**
 * `node --import ./bin/ts-loader.mjs script.ts`: runs treecast's TypeScript with the hooks
 * of bin/ts-hooks.mjs (esbuild, without tsx's keepNames; see there why). Stack traces
 * point into the TypeScript sources (each module carries an inline source map).
 */
import { register } from 'node:module'
import process from 'node:process'

process.setSourceMapsEnabled(true)
register('./ts-hooks.mjs', import.meta.url)
