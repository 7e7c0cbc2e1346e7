/**
 * `node:crypto`, loaded on first use rather than at import. Initialising it is one of the largest
 * costs of `import 'agent-continuity'` (bench/import.bench.js), while the root entry needs it only
 * when a boundary id is drawn, a trace id derived or an approval verified: never at start-up.
 * A builtin, so `require` loads it synchronously from either build.
 */
import { createRequire } from 'node:module';

type NodeCrypto = typeof import('node:crypto');

let loaded: NodeCrypto | undefined;

/** The `node:crypto` module, required on the first call. */
export function nodeCrypto(): NodeCrypto {
  loaded ??= createRequire(import.meta.url)('node:crypto') as NodeCrypto;
  return loaded;
}
