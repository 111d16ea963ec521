/**
 * DESIGN.md's layering: virtual-nodes/ imports nothing of ours, trees/ only
 * virtual-nodes/, overlay/ only trees/ and virtual-nodes/ (and node/ and experiments/ sit
 * above). A relative import that climbs to a folder not allowed fails this test.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = new URL('..', import.meta.url).pathname
const ALLOWED: Record<string, readonly string[]> = {
  'virtual-nodes': [],
  trees: ['virtual-nodes'],
  overlay: ['trees', 'virtual-nodes']
}

function tsFiles (dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [])
}

/** The top-level folders a file's relative imports reach outside its own folder. */
export function foreignFolders (source: string): string[] {
  const out: string[] = []
  for (const m of source.matchAll(/from\s+'(\.\.\/[^']+)'/g)) {
    const parts = (m[1] as string).split('/')
    const folder = parts[1]
    if (folder !== undefined) out.push(folder)
  }
  return out
}

describe('layering', () => {
  for (const [folder, allowed] of Object.entries(ALLOWED)) {
    it(`${folder}/ imports only ${allowed.length === 0 ? 'itself' : allowed.join(' and ')}`, () => {
      const bad: string[] = []
      for (const file of tsFiles(folder)) {
        for (const f of foreignFolders(readFileSync(join(ROOT, file), 'utf8'))) {
          if (!allowed.includes(f)) bad.push(`${file} imports ../${f}`)
        }
      }
      expect(bad).toEqual([])
    })
  }

  it('sees a forbidden import when there is one', () => {
    expect(foreignFolders("import type { X } from '../overlay/messages.ts'")).toEqual(['overlay'])
  })
})
