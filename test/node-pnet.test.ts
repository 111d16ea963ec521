/**
 * Private networks: peers sharing a pre-shared key form an overlay; a stranger with
 * another key (or none) cannot even connect.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { generateKey } from '@libp2p/pnet'
import { createTreecast, type TreecastNode } from '../node/create-treecast.ts'
import { JoinFailedError } from '../node/errors.ts'

function psk (): Uint8Array {
  const key = new Uint8Array(95)
  generateKey(key)
  return key
}

describe('private network (pnet)', () => {
  const nodes: TreecastNode[] = []
  afterAll(async () => { await Promise.allSettled(nodes.map(async (n) => await n.stop())) }, 30_000)

  it('members with the key join; strangers with another key or none are refused', async () => {
    const key = psk()
    const start = async (k: Uint8Array | undefined): Promise<TreecastNode> => {
      const n = await createTreecast({ ...(k !== undefined ? { psk: k } : {}), joinTimeoutMs: 8000 })
      await n.start()
      nodes.push(n)
      return n
    }
    const a = await start(key)
    a.bootstrap(16)
    const b = await start(key)
    await b.join(a.id)
    expect(b.members()).toContain(a.id)
    const stranger = await start(psk())
    await expect(stranger.join(a.id)).rejects.toThrow(JoinFailedError)
    const open = await start(undefined)
    await expect(open.join(a.id)).rejects.toThrow(JoinFailedError)
    expect(a.members()).toHaveLength(2)
  }, 60_000)
})
