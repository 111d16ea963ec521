#!/usr/bin/env -S node --import tsx
/**
 * `treecast`: the peer daemon (`treecast start`) and its control client. Run from the repo
 * with `npm run treecast -- <command>` or `npx tsx bin/treecast.ts <command>`; installed
 * globally, bin/treecast.mjs registers tsx and loads this file. See README "Daemon".
 */
import '../node/polyfill.ts'
import { main } from '../node/daemon/cli.ts'

await main()
