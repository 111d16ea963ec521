#!/usr/bin/env node
// The installed `treecast` command: treecast is TypeScript run by tsx, so register tsx's
// loader (a dependency of this package) and load bin/treecast.ts.
import { register } from 'tsx/esm/api'

register()
await import('./treecast.ts')
