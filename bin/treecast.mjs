#!/usr/bin/env node
// The installed `treecast` command: treecast is TypeScript, so register the project's
// loader (bin/ts-loader.mjs: esbuild, a dependency of this package) and load bin/treecast.ts.
import './ts-loader.mjs'

await import('./treecast.ts')
