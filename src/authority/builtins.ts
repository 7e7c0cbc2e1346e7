/**
 * `node:crypto` and `node:fs`, loaded on first use rather than at import. Initialising
 * `node:crypto` (a dozen internal modules) was the largest single cost `import 'agent-continuity'`
 * added over `@opentelemetry/api` (bench/import.bench.js), and an ES module import of `node:fs`
 * builds its namespace of some hundred exports; the root entry needs neither at start-up, only
 * when a boundary id is drawn, a trace id derived, an approval verified or a pin read.
 * Builtins, so `require` loads them synchronously from either build.
 */
import { createRequire } from 'node:module';

type NodeCrypto = typeof import('node:crypto');
type NodeFs = typeof import('node:fs');

let crypto: NodeCrypto | undefined;
let fs: NodeFs | undefined;

/**
 * A builtin, synchronously, from either build: `process.getBuiltinModule` (Node 20.16 and later)
 * loads nothing else, while a `createRequire` function initialises the ES module loader, which the
 * hooks' CommonJS fast path must not pay for (test/claude-code/fast-path-imports.test.ts). The
 * fallback's base path does not matter for a `node:` id, so it is not `import.meta.url`, which the
 * hook's CommonJS bundle leaves empty.
 */
function requireBuiltin<T>(id: `node:${string}`): T {
  const get = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
  return (get ? get.call(process, id) : createRequire(process.execPath)(id)) as T;
}

/** The `node:crypto` module, required on the first call. */
export function nodeCrypto(): NodeCrypto {
  crypto ??= requireBuiltin<NodeCrypto>('node:crypto');
  return crypto;
}

/** The `node:fs` module, required on the first call. */
export function nodeFs(): NodeFs {
  fs ??= requireBuiltin<NodeFs>('node:fs');
  return fs;
}
