/**
 * The `treecast` command (bin/treecast.ts runs it): `start` runs the daemon in the
 * foreground; the other subcommands talk to a running daemon's control API. `--help` on
 * any of them lists its options.
 */
import '../polyfill.ts'
import { createReadStream, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Command, CommanderError, Option } from 'commander'
import { generateKey } from '@libp2p/pnet'
import { ApiError, TreecastClient } from './client.ts'
import { ConfigError, readConfigFile, resolveConfig } from './config.ts'
import { runDaemon } from './daemon.ts'
import { formatOwned, formatPeers, formatStatus, formatTrees } from './format.ts'
import { createLogger } from './log.ts'
import { readApiInfo } from './state.ts'

/** Exit codes: 0 ok, 1 failure, 2 bad usage or configuration. */
export const EXIT_USAGE = 2

/** A swarm key as @libp2p/pnet's generateKey writes it: two header lines and 64 hex digits. */
const PSK_FILE_BYTES = '/key/swarm/psk/1.0.0/\n/base16/\n'.length + 64

const collect = (v: string, prev: string[] | undefined): string[] => [...(prev ?? []), ...v.split(',').map((s) => s.trim()).filter((s) => s !== '')]

interface ClientFlags { api?: string, token?: string, dataDir?: string, json?: boolean }

/** The API URL and token: flags > TREECAST_API / TREECAST_TOKEN > the data dir's api.json. */
export function clientFrom (flags: ClientFlags, env: NodeJS.ProcessEnv = process.env): TreecastClient {
  const dataDir = flags.dataDir ?? env.TREECAST_DATA_DIR ?? resolve(homedir(), '.treecast')
  const info = readApiInfo(dataDir.startsWith('~/') ? resolve(homedir(), dataDir.slice(2)) : resolve(dataDir))
  const url = flags.api ?? env.TREECAST_API ?? info?.url
  const token = flags.token ?? env.TREECAST_TOKEN ?? info?.token
  if (url === undefined) throw new ConfigError('api', `no daemon API: pass --api, set TREECAST_API, or start a daemon with data dir ${dataDir}`)
  if (token === undefined) throw new ConfigError('token', `no API token: pass --token, set TREECAST_TOKEN, or read it from ${dataDir}/api.json`)
  checkApiUrl(url)
  return new TreecastClient(url, token)
}

/** An API address that is no http(s) URL is bad usage (exit 2), not a daemon that cannot be reached (exit 1). */
function checkApiUrl (url: unknown): asserts url is string {
  let ok = false
  try {
    const u = new URL(url as string)
    ok = typeof url === 'string' && (u.protocol === 'http:' || u.protocol === 'https:')
  } catch { /* not a URL */ }
  if (!ok) throw new ConfigError('api', `not an http(s) URL: ${JSON.stringify(url)}`)
}

function clientCommand (program: Command, name: string, description: string): Command {
  return program.command(name).description(description)
    .option('--api <url>', 'daemon API URL (default: $TREECAST_API, else api.json in the data dir)')
    .option('--token <token>', 'API bearer token (default: $TREECAST_TOKEN, else api.json)')
    .option('--data-dir <dir>', 'data dir whose api.json to read (default: $TREECAST_DATA_DIR or ~/.treecast)')
}

function print (v: unknown): void { process.stdout.write(JSON.stringify(v, null, 2) + '\n') }

/** Runs a client action, mapping errors to a message and an exit code. */
async function client (flags: ClientFlags, f: (c: TreecastClient) => Promise<void>): Promise<void> {
  try {
    await f(clientFrom(flags))
  } catch (err) {
    console.error(`treecast: ${(err as Error).message}`)
    process.exitCode = err instanceof ConfigError ? EXIT_USAGE : 1
  }
}

/** The payload: a file or stdin, streamed to the daemon (the CLI never holds it whole). */
function payloadFrom (file: string | undefined): Uint8Array | AsyncIterable<Uint8Array> {
  if (file !== undefined && file !== '-') {
    // Checked here so that a missing file is a usage error, not a failed upload.
    try { statSync(file) } catch (err) { throw new ConfigError('file', `cannot read ${file}: ${(err as Error).message}`) }
    return createReadStream(file) as AsyncIterable<Uint8Array>
  }
  if (process.stdin.isTTY) throw new ConfigError('file', 'no --file and stdin is a terminal: pipe the payload in or pass --file')
  return process.stdin as AsyncIterable<Uint8Array>
}

function intArg (name: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v)) throw new ConfigError(name, `must be a non-negative integer, got ${JSON.stringify(v)}`)
    return Number(v)
  }
}

/** A subcommand that hands its arguments to one of the repo's scripts (`treecast <name> -- --help` shows the script's help). */
function passThrough (program: Command, name: string, what: string, args: string, script: string): void {
  const file = fileURLToPath(new URL(script, import.meta.url))
  program.command(name)
    .description(`${what} (the arguments of ${script.replace('../../', '')}; try \`treecast ${name} -- --help\`)`)
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]', `${args}, passed on`)
    .action(async (rest: string[]) => {
      process.argv = [process.argv[0] as string, file, ...rest]
      await import(file)
    })
}

export function buildProgram (): Command {
  const program = new Command()
    .name('treecast')
    .description('A treecast peer daemon and its control client')
    .showHelpAfterError()
    .exitOverride()

  program.command('start')
    .description('Run a peer daemon in the foreground (found an overlay, or --join one)')
    .option('-c, --config <file>', 'config file, JSON or TOML by extension (default: $TREECAST_CONFIG)')
    .option('--listen <multiaddr>', 'listen address, repeatable or comma separated (default /ip4/0.0.0.0/tcp/4001)', collect)
    .option('--announce <multiaddr>', 'address to announce instead (NAT, wildcard listen); repeatable', collect)
    .option('--join <multiaddr>', 'a member to join through (…/p2p/<id>); repeatable, tried in order', collect)
    .option('--vnodes <n>', 'virtual nodes of a new overlay (default 1024)')
    .option('--want <ranges>', 'virtual nodes to ask for on join, e.g. 0-99,200-299 (default: those owned last time)')
    .option('--fresh', 'do not ask for the virtual nodes owned last time')
    .option('--data-dir <dir>', 'identity, state and api.json (default ~/.treecast)')
    .option('--api-listen <host:port>', 'control API address (default 127.0.0.1:0)')
    .option('--psk <file>', 'private network: a libp2p swarm key file (treecast key generate-psk)')
    .option('--contribute <kind>', 'contribution to reductions per virtual node: ones, vnode, zeros (default ones)')
    .option('--delivery-log <file>', 'append one JSON line per delivery to this file')
    .option('--log-level <level>', 'debug, info, warn, error (default info)')
    .option('--log-format <format>', 'log lines as text or json (default text)')
    .option('--probe-timeout-ms <ms>', 'core: abandon a probe after this long')
    .option('--steady-probe-interval-ms <ms>', 'core: probe one peer this often once trees are built (0: off)')
    .option('--leave-timeout-ms <ms>', 'core: longest wait for a leave\'s hand-off to drain')
    .option('--reduce-max-duration-ms <ms>', 'core: a reduction still incomplete after this fails')
    .option('--max-payload-bytes <n>', 'core: largest broadcast payload (the API answers 413 past it)')
    .option('--failure-detection-timeout-ms <ms>', 'net: a silent peer is reported down after this long')
    .option('--heartbeat-interval-ms <ms>', 'net: heartbeat period')
    .option('--dial-timeout-ms <ms>', 'net: dial and negotiation timeout')
    .option('--max-peers <n>', 'net: peers kept connected at most')
    .option('--join-timeout-ms <ms>', 'how long one join attempt waits')
    .option('--shutdown-timeout-ms <ms>', 'longest graceful shutdown (default 15000)')
    .addHelpText('after', `
Precedence: flags > TREECAST_* environment variables > config file > defaults.
Environment: TREECAST_CONFIG, TREECAST_LISTEN, TREECAST_ANNOUNCE, TREECAST_JOIN, TREECAST_VNODES,
TREECAST_WANT, TREECAST_FRESH, TREECAST_DATA_DIR, TREECAST_API_LISTEN, TREECAST_PSK_FILE,
TREECAST_CONTRIBUTE, TREECAST_DELIVERY_LOG, TREECAST_LOG_LEVEL, TREECAST_LOG_FORMAT, and
TREECAST_<FIELD_IN_CAPS> for the other fields (e.g. TREECAST_PROBE_TIMEOUT_MS, TREECAST_MAX_PEERS,
TREECAST_DIAL_ATTEMPTS); any other TREECAST_* variable but TREECAST_API and TREECAST_TOKEN is an error.
Config file: JSON, or TOML when the name ends in .toml, with the same camelCase fields (listen,
join, dataDir, apiListen, pskFile, ...) plus "core" and "net" objects (TOML: [core] and [net]
tables) for every option of overlay/config.ts and node/config.ts.
A bad value exits with code 2 and names the field. Debug namespaces: DEBUG='treecast*' (treecast, treecast:links, treecast:bulk), DEBUG=libp2p:* for libp2p's.`)
    .action(async (opts: Record<string, unknown>) => {
      const { config, psk, ...rest } = opts
      let cfg
      try {
        const path = (config as string | undefined) ?? process.env.TREECAST_CONFIG
        const file = path !== undefined ? readConfigFile(path) : undefined
        cfg = resolveConfig({ ...(file !== undefined ? { file } : {}), env: process.env, flags: { ...rest, ...(psk !== undefined ? { pskFile: psk } : {}) } })
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err
        console.error(`treecast: bad configuration: ${err.message}`)
        process.exit(EXIT_USAGE)
      }
      const log = createLogger(cfg.logLevel, cfg.logFormat)
      await runDaemon(cfg, log)
    })

  const view = <T>(o: ClientFlags, get: (c: TreecastClient) => Promise<T>, text: (v: T) => string): Promise<void> =>
    client(o, async (c) => { const v = await get(c); if (o.json === true) print(v); else process.stdout.write(text(v)) })
  clientCommand(program, 'status', 'This peer: id, state, owned virtual nodes, members, connections')
    .option('--json', 'the API\'s JSON instead of text')
    .action(async (o: ClientFlags) => { await view(o, async (c) => await c.status(), formatStatus) })
  clientCommand(program, 'peers', 'Members with measured RTT and bandwidth, and whether connected')
    .option('--json', 'the API\'s JSON instead of a table')
    .action(async (o: ClientFlags) => { await view(o, async (c) => await c.peers(), formatPeers) })
  clientCommand(program, 'trees', 'This peer\'s parent and children in every tree (or one root\'s)')
    .option('--root <id>', 'only the trees rooted at this overlay id')
    .option('--json', 'the API\'s JSON instead of a table')
    .action(async (o: ClientFlags & { root?: string }) => { await view(o, async (c) => await c.trees(o.root), formatTrees) })
  clientCommand(program, 'owned', 'The virtual nodes this peer owns')
    .option('--json', 'the API\'s JSON instead of text')
    .action(async (o: ClientFlags) => { await view(o, async (c) => await c.owned(), formatOwned) })
  clientCommand(program, 'broadcast', 'Broadcast a payload (a file, or stdin) to every virtual node')
    .option('-f, --file <file>', 'the payload (default: stdin)')
    .addOption(new Option('--tree <kind>', 'lat, bw, or auto (by size)').choices(['lat', 'bw', 'auto']))
    .option('--root <vnode>', 'root the broadcast at the owner of this virtual node', intArg('root'))
    .option('--wait', 'answer only once every virtual node has it')
    .action(async (o: ClientFlags & { file?: string, tree?: 'lat' | 'bw' | 'auto', root?: number, wait?: boolean }) => {
      await client(o, async (c) => {
        print(await c.broadcast(payloadFrom(o.file), {
          ...(o.tree !== undefined ? { tree: o.tree } : {}), ...(o.root !== undefined ? { root: o.root } : {}), ...(o.wait === true ? { wait: true } : {})
        }))
      })
    })
  clientCommand(program, 'send', 'Send a payload (a file, or stdin) to the owner of one virtual node')
    .requiredOption('--vnode <v>', 'the virtual node', intArg('vnode'))
    .option('-f, --file <file>', 'the payload (default: stdin)')
    .action(async (o: ClientFlags & { vnode: number, file?: string }) => { await client(o, async (c) => { print(await c.send(o.vnode, payloadFrom(o.file))) }) })
  clientCommand(program, 'reduce', 'Reduce one contribution per virtual node; prints the result')
    .requiredOption('--op <op>', 'sum, prod, min, max, band, bor, bxor')
    .requiredOption('--length <n>', 'elements of the reduced array', intArg('length'))
    .option('--id <name>', 'this daemon\'s call of collective reduction <name> (call it on every daemon; the root prints the result)')
    .option('--root <peer>', 'with --id: the root\'s peer id or overlay id, as its status shows them (default: this daemon)')
    .action(async (o: ClientFlags & { op: string, length: number, id?: string, root?: string }) => {
      await client(o, async (c) => {
        if (o.root !== undefined && o.id === undefined) throw new ConfigError('root', '--root needs --id')
        print(o.id === undefined ? await c.reduce(o.op, o.length) : await c.reduceCollective(o.id, o.op, o.length, o.root))
      })
    })
  clientCommand(program, 'leave', 'Leave the overlay gracefully (hand the virtual nodes over); the daemon then exits')
    .action(async (o: ClientFlags) => { await client(o, async (c) => { print(await c.leave()) }) })
  clientCommand(program, 'events', 'Print the daemon\'s events as JSON lines until interrupted')
    .action(async (o: ClientFlags) => {
      await client(o, async (c) => { for await (const e of c.events()) process.stdout.write(JSON.stringify(e) + '\n') })
    })
  clientCommand(program, 'metrics', 'Print the Prometheus metrics')
    .action(async (o: ClientFlags) => { await client(o, async (c) => { process.stdout.write(await c.metrics()) }) })

  program.command('key').description('Key utilities')
    .command('generate-psk').description('Print a new private-network swarm key (use with --psk): treecast key generate-psk > swarm.key')
    .action(() => {
      // libp2p's format, three lines; ended with a newline, as a CLI's output is (readPsk and libp2p's pnet both take it).
      const key = new Uint8Array(PSK_FILE_BYTES)
      generateKey(key)
      process.stdout.write(Buffer.concat([key, Buffer.from('\n')]))
    })

  passThrough(program, 'experiment', 'Run an experiment', 'experiment name and options', '../../experiments/experiment.ts')
  passThrough(program, 'sim', 'Run a scenario in the simulator', 'scenario file and options', '../../experiments/sim/cli.ts')
  return program
}

/**
 * The entry point: parses argv and runs. Exit codes (node/README.md, "The daemon's CLI"):
 * 0 ok (and --help); 2 a usage error found before any request (commander's, a bad
 * number, a missing --file, no API address or token: ConfigError), or a bad daemon
 * configuration; 1 a failure after that: the daemon unreachable, or any error answer of
 * the API, 4xx included (`treecast: METHOD PATH: STATUS message`).
 */
export async function main (argv: string[] = process.argv): Promise<void> {
  const program = buildProgram()
  try {
    await program.parseAsync(argv)
  } catch (err) {
    if (err instanceof CommanderError) {
      // exitCode 0: --help, `help`; otherwise a usage error, including a missing
      // subcommand (`treecast`, `treecast key`: help on stderr), which exited 0.
      process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE)
    }
    if (err instanceof ConfigError) {
      console.error(`treecast: ${err.message}`)
      process.exit(EXIT_USAGE)
    }
    if (err instanceof ApiError) {
      console.error(`treecast: ${err.message}`)
      process.exit(1)
    }
    throw err
  }
}
