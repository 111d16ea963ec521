/**
 * `node --import ./bin/ts-loader.mjs script.ts` here, or `node --import treecast/ts-loader
 * app.js` in an application that uses the package: runs treecast's TypeScript with the hooks
 * of bin/ts-hooks.mjs (esbuild, without tsx's keepNames; see there why). Stack traces
 * point into the TypeScript sources (each module carries an inline source map).
 */
import { register } from 'node:module'
import process from 'node:process'

process.setSourceMapsEnabled(true)
register('./ts-hooks.mjs', import.meta.url)
