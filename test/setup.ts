import '../node/polyfill.ts'
/**
 * Property tests are deterministic by default (the same fast-check seed every run), so CI
 * never flakes; explore with `FC_SEED=<n>` or `FC_SEED=random`. A failure prints its seed.
 */
import fc from 'fast-check'

const env = process.env.FC_SEED
if (env !== 'random') fc.configureGlobal({ seed: env === undefined ? 20261122 : Number(env) })
