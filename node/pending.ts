/**
 * Promises waiting for core outputs (a join, a leave, a broadcast's completion, a
 * reduction's result), keyed by name. Bounded: past `MAX_PENDING` the oldest is rejected.
 */

/** Most promises pending at once. */
export const MAX_PENDING = 4096

interface Waiter { resolve: (v: unknown) => void, reject: (e: Error) => void, timer: ReturnType<typeof setTimeout> | undefined }

export class Pending {
  private readonly waiters = new Map<string, Waiter>()

  /** A promise for `key`; rejected with `onTimeout()` after `timeoutMs` when given. */
  async wait<T> (key: string, timeoutMs?: number, onTimeout?: () => Error): Promise<T> {
    return await new Promise<T>((resolve, reject) => {
      this.reject(key, new Error(`superseded: ${key}`))
      const timer = timeoutMs === undefined
        ? undefined
        : setTimeout(() => { this.reject(key, onTimeout?.() ?? new Error(`timed out: ${key}`)) }, timeoutMs)
      this.waiters.set(key, { resolve: resolve as (v: unknown) => void, reject, timer })
      if (this.waiters.size > MAX_PENDING) {
        const oldest = this.waiters.keys().next().value as string
        this.reject(oldest, new Error(`too many pending operations; dropped ${oldest}`))
      }
    })
  }

  resolve (key: string, value: unknown): void {
    const w = this.take(key)
    w?.resolve(value)
  }

  reject (key: string, err: Error): void {
    const w = this.take(key)
    w?.reject(err)
  }

  failAll (err: Error): void {
    for (const key of [...this.waiters.keys()]) this.reject(key, err)
  }

  private take (key: string): Waiter | undefined {
    const w = this.waiters.get(key)
    if (w === undefined) return undefined
    this.waiters.delete(key)
    if (w.timer !== undefined) clearTimeout(w.timer)
    return w
  }
}
