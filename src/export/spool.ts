/**
 * The spool: encoded OTLP requests that could not be delivered yet, one 0600 file each in a 0700
 * directory, named so that name order is arrival order. A later run sends them, oldest first.
 *
 * Bounded: at most {@link MAX_SPOOL_FILES} requests and {@link MAX_SPOOL_BYTES} bytes; when full,
 * the oldest requests are dropped and counted in `<spool>/dropped`, never silently. A request the
 * receiver refuses as malformed is moved to `<spool>/rejected/` for inspection. Parallel runs
 * claim a request by renaming it before sending it, so none is sent twice by two runs; a claim
 * left by a run that died is put back after a minute.
 *
 * The files hold what the spans hold: digests and opaque identifiers, never a raw value.
 */
import { readdirSync, readFileSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDir, writeFileAtomic } from '../ledger/atomic-file.js';

/** Most requests kept in the spool. */
export const MAX_SPOOL_FILES = 1000;
/** Most bytes kept in the spool. */
export const MAX_SPOOL_BYTES = 16 * 1024 * 1024;
/** A claim older than this is taken to belong to a run that died. */
const STALE_CLAIM_MS = 60_000;

/** The file extension of a spooled request: its encoding. */
export type SpoolExt = 'json' | 'pb';

/** One spooled request. */
export interface SpoolEntry {
  name: string;
  size: number;
}

/** Removes `path`, ignoring a file that is already gone. */
export function unlinkQuiet(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone (delivered or dropped by a parallel run).
  }
}

/** Puts back requests claimed by a run that died before it finished. */
function reclaimStale(dir: string, names: readonly string[]): void {
  const now = Date.now();
  for (const n of names) {
    const m = /^(.+\.(?:json|pb))\.\d+\.sending$/.exec(n);
    if (!m) continue;
    try {
      if (now - statSync(join(dir, n)).mtimeMs > STALE_CLAIM_MS) renameSync(join(dir, n), join(dir, m[1]!));
    } catch {
      // Taken care of by another run.
    }
  }
}

/** The spooled requests of `dir`, oldest first (empty when the directory does not exist). */
export function spoolEntries(dir: string): SpoolEntry[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  reclaimStale(dir, names);
  const out: SpoolEntry[] = [];
  for (const name of names.filter((n) => /\.(?:json|pb)$/.test(n)).sort()) {
    try {
      out.push({ name, size: statSync(join(dir, name)).size });
    } catch {
      // Taken by a parallel run.
    }
  }
  return out;
}

/** The content type of a spooled request, from its extension. */
export function contentTypeOf(name: string): string {
  return name.endsWith('.pb') ? 'application/x-protobuf' : 'application/json';
}

function addDropped(dir: string, n: number): void {
  let before = 0;
  try {
    before = Number(readFileSync(join(dir, 'dropped'), 'utf8').trim()) || 0;
  } catch {
    // No count yet.
  }
  writeFileAtomic(join(dir, 'dropped'), `${before + n}\n`);
}

/**
 * Writes one undelivered request to the spool in `dir`, dropping the oldest when it is full.
 * Returns how many were dropped. Throws when the spool cannot be written.
 */
export function spoolRequest(dir: string, body: Uint8Array, ext: SpoolExt): number {
  ensureDir(dir);
  const entries = spoolEntries(dir);
  let files = entries.length;
  let bytes = entries.reduce((n, e) => n + e.size, 0);
  let dropped = 0;
  for (const e of entries) {
    if (files + 1 <= MAX_SPOOL_FILES && bytes + body.length <= MAX_SPOOL_BYTES) break;
    try {
      unlinkSync(join(dir, e.name));
      dropped++;
    } catch {
      // Already delivered or dropped by a parallel run.
    }
    files--;
    bytes -= e.size;
  }
  if (dropped > 0) addDropped(dir, dropped);
  const name = `${String(Date.now()).padStart(15, '0')}-${process.pid}-${Math.random().toString(36).slice(2, 8)}.${ext}`;
  writeFileAtomic(join(dir, name), body);
  return dropped;
}

/** Keeps a request the receiver refused as malformed in `<dir>/rejected/`. Throws when it cannot. */
export function keepRejected(dir: string, name: string, body: Uint8Array): void {
  writeFileAtomic(join(dir, 'rejected', name), body);
}
