/**
 * Small file helpers for the adapter's own state (session caches, markers, the spool). Lean on
 * purpose: the write gate imports this, so it loads nothing but `node:fs` (without its facade).
 *
 * Every file written here is 0600 and every directory 0700: they sit beside the ledger and may
 * name sessions and boundaries (never values).
 */
import { dirname } from 'node:path';
import { fs } from './builtins.js';

const { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } = fs;

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

/** Reads and parses a JSON file; `undefined` when it does not exist or is not valid JSON. */
export function readJsonFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Reads a small text file; `undefined` when it does not exist. */
export function readTextFile(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Creates `path` exclusively (O_EXCL, 0600). Returns true for the one caller that created it,
 * false when it already existed: a race-free "do this once" marker between parallel hooks.
 */
export function createMarker(path: string): boolean {
  ensureDir(dirname(path));
  try {
    closeSync(openSync(path, 'wx', 0o600));
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
}

/** True when `value` is a plain object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
