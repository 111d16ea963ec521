/**
 * The libp2p components the treecast service uses (a subset of libp2p's `Components`).
 */
import type { ComponentLogger, PeerId } from '@libp2p/interface'
import type { AddressManager, ConnectionManager, Registrar, TransportManager } from '@libp2p/interface-internal'

export interface TreecastComponents {
  peerId: PeerId
  registrar: Registrar
  connectionManager: ConnectionManager
  addressManager: AddressManager
  transportManager: TransportManager
  logger?: ComponentLogger
}
