/**
 * Rejoining after an eviction (node/rejoin.ts): the contacts are every other member in a
 * seeded random order, and the attempts go through them in order until one join succeeds,
 * at most `attempts` of them, stopping when the node stops.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { rejoin, rejoinContacts, type RejoinHost } from '../node/rejoin.ts'
import { IntervalSet } from '../virtual-nodes/interval-set.ts'
import { Rng } from '../experiments/sim/rng.ts'

const WANT = IntervalSet.range(4, 8)

/** A host whose joins fail for the contacts in `failing`; records every join. */
function host (failing: ReadonlySet<string>, running = (): boolean => true): RejoinHost & { joins: Array<[string, string]> } {
  const joins: Array<[string, string]> = []
  return {
    joins,
    running,
    joinAfresh: async (contact, want) => {
      joins.push([contact, want.toString()])
      if (failing.has(contact)) throw new Error(`no answer from ${contact}`)
    }
  }
}

describe('rejoinContacts', () => {
  it('is every member but this peer, each once, in an order the random source decides', () => {
    fc.assert(fc.property(fc.uniqueArray(fc.string({ minLength: 1, maxLength: 4 }), { maxLength: 20 }), fc.nat(), (members, seed) => {
      const self = members[0] ?? 'self'
      const rng = new Rng(seed)
      const out = rejoinContacts(members, self, () => rng.next())
      expect([...out].sort()).toEqual(members.filter((m) => m !== self).sort())
      const again = new Rng(seed)
      expect(rejoinContacts(members, self, () => again.next())).toEqual(out)
    }))
  })
})

describe('rejoin', () => {
  it('joins through the first contact that answers, asking for the ranges owned before', async () => {
    const h = host(new Set(['a']))
    const r = await rejoin(h, ['a', 'b', 'c'], WANT, 3)
    expect(r).toEqual({ ok: true, contact: 'b', attempts: 2 })
    expect(h.joins).toEqual([['a', WANT.toString()], ['b', WANT.toString()]])
  })

  it('gives up after `attempts` contacts, with every failure', async () => {
    const h = host(new Set(['a', 'b', 'c']))
    const r = await rejoin(h, ['a', 'b', 'c'], WANT, 2)
    expect(r.ok).toBe(false)
    expect(r.attempts).toBe(2)
    expect(r.ok ? [] : r.errors).toEqual(['a: no answer from a', 'b: no answer from b'])
    expect(h.joins.map(([c]) => c)).toEqual(['a', 'b'])
  })

  it('fails at once with no contact, and stops when the node stops', async () => {
    const none = await rejoin(host(new Set()), [], WANT, 3)
    expect(none).toEqual({ ok: false, attempts: 0, errors: ['no member left to join through'] })
    let running = true
    const h = host(new Set(['a', 'b']), () => running)
    const join = h.joinAfresh
    h.joinAfresh = async (c, w) => { running = false; await join(c, w) }
    const r = await rejoin(h, ['a', 'b', 'c'], WANT, 3)
    expect(r.ok).toBe(false)
    expect(h.joins.map(([c]) => c)).toEqual(['a'])
  })
})
