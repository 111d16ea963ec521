// libp2p 3.x (@libp2p/utils, yamux, multistream-select, mortice, it-queue) calls
// Promise.withResolvers(), which V8 11.3 (Node 20) lacks. Import this FIRST.
declare global {
  interface PromiseConstructor {
    withResolvers<T>(): { promise: Promise<T>, resolve: (v: T | PromiseLike<T>) => void, reject: (e?: unknown) => void }
  }
}
if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T> (this: PromiseConstructor) {
      let resolve!: (v: T | PromiseLike<T>) => void
      let reject!: (e?: unknown) => void
      const promise = new this<T>((res, rej) => { resolve = res; reject = rej })
      return { promise, resolve, reject }
    }
  })
}
export {}
