/**
 * Debug logs of the node, in libp2p's style: namespaces under `treecast:` (`treecast`,
 * `treecast:links`, `treecast:bulk`), enabled like libp2p's own with the DEBUG environment
 * variable (`DEBUG=treecast:*`, `DEBUG=treecast:links,libp2p:*`), through the libp2p
 * node's component logger. Without one (a bare service in a test) nothing is logged.
 */
import type { ComponentLogger, Logger } from '@libp2p/interface'

const silent: Logger = Object.assign(() => {}, { error: () => {}, trace: () => {}, newScope: () => silent, enabled: false }) as unknown as Logger

export function componentLog (components: { logger?: ComponentLogger }, name: string): Logger {
  return components.logger?.forComponent(name) ?? silent
}
