/**
 * Files written whole or not at all, 0600 in 0700 directories: shared by the hooks' state
 * (../adapters/core/state.ts) and the exporter's spool (../export/spool.ts), both under the state
 * directory (./state-home.ts). Node built-ins only: the write gate's fast path loads it.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** Creates `dir` (and its parents) with mode 0700 when missing. */
export function ensureDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/**
 * Writes `data` (UTF-8 text or bytes) to `path` atomically: a 0600 temporary file in the same directory, fsync, rename.
 * A reader sees the old content or the new one, never a torn file.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  ensureDir(dirname(path));
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2, 10)}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    if (typeof data === 'string') writeSync(fd, data, null, 'utf8');
    else writeSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(tmp, path);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      // The temporary file is already gone; the rename error is what matters.
    }
    throw e;
  }
}
