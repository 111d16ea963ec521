/**
 * `treecast`: the peer daemon (`treecast start`) and its control client. Run from the repo
 * with `npm run treecast -- <command>` or `node bin/treecast.mjs <command>`; installed
 * globally, bin/treecast.mjs registers the project's TypeScript loader (bin/ts-loader.mjs)
 * and loads this file. See README "Daemon".
 */
import '../node/polyfill.ts'
import { main } from '../node/daemon/cli.ts'

await main()
