/**
 * The write path, under the lock: repair a torn tail, catch the index up, chain and seal the new
 * records, write them with one `write`, fsync, then index them. Records arrive validated (see
 * `ledger.ts`); this module only adds `v`, `seq`, `prev` and `hash`.
 *
 * Crash safety, step by step:
 * - The lock is held from reading the tail to the index update, so two writers never chain to
 *   the same record or interleave bytes.
 * - All lines of one call go out in one `write` on an O_APPEND descriptor; a short write (full
 *   disk) is cut back to the old end before the error is raised, so nothing partial stays.
 * - `fsync` returns before the caller hears "done": a record reported appended survives kill -9
 *   and power loss.
 * - The index is a cache written after the fsync; a crash before it is repaired by the next writer.
 *
 * Imports only node built-ins and lean local modules (no zod).
 */
import { fstatSync, fsyncSync, ftruncateSync, writeSync } from 'node:fs';
import { type ChainKey, chainSchemeOf, sealRecord } from './chain.js';
import { hashPrefixOf, inodeOf, SessionIndexWriter } from './session-index.js';
import { type Quarantined, readTail, type Tail } from './tail.js';
import { LEDGER_FORMAT_VERSION, MAX_RECORD_BYTES } from './types.js';

/** The ledger is chained with another scheme than the configured key gives. */
export class ChainSchemeError extends Error {
  constructor(ledgerPath: string, found: string, configured: string) {
    const fix =
      found === 'sha256'
        ? 'this ledger was started without a chain key: unset CONTINUITY_CHAIN_KEY_FILE, or start a new ledger with --ledger to use the key'
        : configured === 'sha256'
          ? `set CONTINUITY_CHAIN_KEY_FILE (or --chain-key-file) to the key with id ${found.split(':')[1]}`
          : `the configured key has another id; use the key with id ${found.split(':')[1]}`;
    super(`ledger ${ledgerPath}: chained with ${found}, but the configured chain is ${configured}; ${fix}`);
    this.name = 'ChainSchemeError';
  }
}

/** A record is larger than {@link MAX_RECORD_BYTES}. */
export class RecordTooLargeError extends Error {
  constructor(bytes: number) {
    super(
      `ledger record is ${bytes} bytes, more than the ${MAX_RECORD_BYTES} allowed; record fewer decisions`,
    );
    this.name = 'RecordTooLargeError';
  }
}

/** An open ledger file and what writing to it needs. */
export interface WriteTarget {
  path: string;
  fd: number;
  quarantinePath: string;
  indexDir: string;
  chainKey: ChainKey | undefined;
}

/** What one locked write did. */
export interface WriteResult<T> {
  stored: Array<T & { v: number; seq: number; prev: string | null; hash: string }>;
  quarantined?: Quarantined;
}

/**
 * Repairs the tail and brings the index up to date. Call under the lock. Index failures never
 * fail the caller: the index is a cache and readers fall back to a scan.
 */
export function prepareLocked(target: WriteTarget): {
  tail: Tail;
  quarantined?: Quarantined;
  /** False when the index could not be brought up to date; it must then not be extended. */
  indexReady: boolean;
} {
  const r = readTail(target.fd, target.path, target.quarantinePath);
  let indexReady = false;
  try {
    new SessionIndexWriter(target.indexDir).prepare(target.fd, r.tail);
    indexReady = true;
  } catch {
    // Unwritable index: appends still work; readers scan.
  }
  return { ...r, indexReady };
}

/** Chains, writes and fsyncs `bodies` (validated records without chain fields). Call under the lock. */
export function writeLocked<T extends object>(target: WriteTarget, bodies: readonly T[]): WriteResult<T> {
  const { tail, quarantined, indexReady } = prepareLocked(target);
  const scheme = chainSchemeOf(target.chainKey);
  if (tail.scheme !== undefined && tail.scheme !== scheme) {
    throw new ChainSchemeError(target.path, tail.scheme, scheme);
  }
  const stored: WriteResult<T>['stored'] = [];
  const lines: string[] = [];
  const spans: Array<[number, number]> = [];
  let seq = tail.seq;
  let prev = tail.hash;
  let offset = tail.size;
  for (const body of bodies) {
    seq++;
    const full = { v: LEDGER_FORMAT_VERSION, ...body, seq, prev };
    const { line, hash } = sealRecord(full, target.chainKey);
    const bytes = Buffer.byteLength(line);
    if (bytes > MAX_RECORD_BYTES) throw new RecordTooLargeError(bytes);
    const rec = { ...full, hash };
    stored.push(rec);
    lines.push(line);
    spans.push([offset, bytes]);
    offset += bytes;
    prev = hash;
  }
  if (stored.length === 0) return { stored, ...(quarantined && { quarantined }) };
  const buf = Buffer.from(lines.join(''), 'utf8');
  try {
    let done = 0;
    // One write in practice; the loop only matters for a short write on a nearly full disk.
    while (done < buf.length) done += writeSync(target.fd, buf, done, buf.length - done);
    fsyncSync(target.fd);
  } catch (e) {
    // Leave no partial record behind: cut back to where this call started.
    try {
      if (fstatSync(target.fd).size > tail.size) ftruncateSync(target.fd, tail.size);
    } catch {
      // The next open quarantines whatever is left.
    }
    throw e;
  }
  if (!indexReady) return { stored, ...(quarantined && { quarantined }) };
  try {
    const index = new SessionIndexWriter(target.indexDir);
    for (const [i, rec] of stored.entries()) index.add(rec, spans[i]![0], spans[i]![1]);
    index.commit(inodeOf(target.fd), { seq, end: offset, hashPrefix: hashPrefixOf(prev as string) });
  } catch {
    // The next writer catches the index up.
  }
  return { stored, ...(quarantined && { quarantined }) };
}
