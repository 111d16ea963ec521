/**
 * Validation of the striping fields of the wire (overlay/codec-validate.ts): a bandwidth
 * tree's cluster entries, with their optional cluster tags (overlay/cluster-tag.ts), and a
 * striped stream's relays, with at most one level of nested relays (overlay/stripes.ts).
 * Every list is bounded; anything else is a WireError.
 */
import type { IntervalSet } from '../virtual-nodes/interval-set.ts'
import type { PeerId } from '../virtual-nodes/peer-id.ts'
import { MAX_TREE_ENTRIES } from '../trees/tree-entries.ts'
import type { StripeRelay, TreeEntry } from './messages.ts'
import { CLUSTER_TAG_SIZE } from './cluster-tag.ts'
import { MAX_STRIPES } from './stripes.ts'
import { WireError } from './wire-errors.ts'

/** The field readers these need (codec-validate's). */
export interface StripeFieldReaders {
  peer (x: unknown, path: string): PeerId
  set (x: unknown, path: string): IntervalSet
  list<T> (x: unknown, path: string, item: (y: unknown, path: string) => T): T[]
}

function bounded (x: unknown, path: string, max: number, what: string): void {
  if (Array.isArray(x) && x.length > max) throw new WireError('limit', `${path}: ${x.length} ${what} > ${max}`)
}

function tuple (x: unknown, path: string, min: number, max: number): readonly unknown[] {
  if (!Array.isArray(x) || x.length < min || x.length > max) throw new WireError('bad-field', `${path}: expected an array of ${min} to ${max}`)
  return x
}

/** Cluster entries (absent: none), at most MAX_TREE_ENTRIES, each `[peer, reach(, tag)]`. */
export function readEntries (f: StripeFieldReaders, raw: unknown, path: string): TreeEntry[] {
  if (raw === undefined) return []
  bounded(raw, path, MAX_TREE_ENTRIES, 'entries')
  return f.list(raw, path, (y, p) => {
    const [peer, reach, near] = tuple(y, p, 2, 3)
    const entry = { peer: f.peer(peer, `${p}.peer`), reach: f.set(reach, `${p}.reach`) }
    if (near === undefined) return entry
    bounded(near, `${p}.near`, CLUSTER_TAG_SIZE, 'ids')
    return { ...entry, near: f.list(near, `${p}.near`, (z, q) => f.peer(z, q)) }
  })
}

/** A stream's relays, at most MAX_STRIPES, each `[to, header(, relays)]`; `nested`: one level more allowed. */
export function readRelays (f: StripeFieldReaders, raw: unknown, path: string, nested = true): StripeRelay[] {
  bounded(raw, path, MAX_STRIPES, 'relays')
  return f.list(raw, path, (y, p) => {
    const [to, header, more] = tuple(y, p, 2, nested ? 3 : 2)
    const relay = { to: f.peer(to, `${p}.to`), header: f.set(header, `${p}.header`) }
    return more === undefined ? relay : { ...relay, relay: readRelays(f, more, `${p}.relay`, false) }
  })
}
