/**
 * Node built-ins for the gate's fast path, taken without their ES module facades.
 *
 * Why: importing `node:fs` from an ES module builds a facade that reads every export, and the
 * `promises` and stream getters then load about twenty internal modules (streams, fs/promises)
 * the gate never uses; that alone costs a noticeable share of a bare `node -e 0`.
 * `process.getBuiltinModule` (Node >= 20.16) returns the plain module object instead; older Node
 * versions fall back to the import.
 */
import type * as FsModule from 'node:fs';

/** `node:fs`. */
export const fs: typeof FsModule = process.getBuiltinModule?.('node:fs') ?? (await import('node:fs'));
