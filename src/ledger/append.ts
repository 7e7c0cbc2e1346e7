/**
 * The write path, under the lock: repair a torn tail, catch the index up, chain and seal the new
 * records, write them with one `write`, fsync, then move the head file and index them. Records
 * arrive validated (see `ledger.ts`); this module only adds `v`, `seq`, `prev` and `hash`.
 *
 * Crash safety, step by step:
 * - The lock is held from reading the tail to the index update, so two writers never chain to
 *   the same record or interleave bytes.
 * - All lines of one call go out in one `write` on an O_APPEND descriptor; a short write (full
 *   disk) is cut back to the old end before the error is raised, so nothing partial stays.
 * - `fsync` returns before the caller hears "done": a record reported appended survives kill -9
 *   and power loss.
 * - The head file (`head.ts`) is written after the fsync, so it is never ahead of the ledger. A
 *   seq is never given twice: the next seq follows both the last record and the head, so records
 *   removed from the end leave a gap that `verify` reports even after new appends.
 * - The index is a cache written after the fsync; a crash before it is repaired by the next writer.
 *
 * Imports only node built-ins and lean local modules (no zod).
 */
import { fstatSync, fsyncSync, ftruncateSync, writeSync } from 'node:fs';
import { type ChainKey, chainSchemeOf, sealRecord } from './chain.js';
import { fileError, onFile } from './files.js';
import { type HeadState, headState, readHead, writeHead } from './head.js';
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
  headPath: string;
  chainKey: ChainKey | undefined;
}

/** What one locked write did. */
export interface WriteResult<T> {
  stored: Array<T & { v: number; seq: number; prev: string | null; hash: string }>;
  quarantined?: Quarantined;
}

/**
 * Repairs the tail, reads the head and brings the index up to date. Call under the lock. Index
 * failures never fail the caller: the index is a cache and readers fall back to a scan.
 */
export function prepareLocked(target: WriteTarget): {
  tail: Tail;
  quarantined?: Quarantined;
  /** How the head file relates to the tail (after writing one for a ledger that had none). */
  head: HeadState;
  /** The seq the next record gets: after the last record and after the head. */
  nextSeq: number;
  /** False when the index could not be brought up to date; it must then not be extended. */
  indexReady: boolean;
} {
  const r = onFile(target.path, 'read', () => readTail(target.fd, target.path, target.quarantinePath));
  const read = readHead(target.headPath);
  let head = headState(read, target.fd, r.tail.size, r.tail);
  if (head === 'absent' && r.tail.hash !== null) {
    // A ledger from before the head file: trust its last record from now on.
    writeHead(target.headPath, { seq: r.tail.seq, end: r.tail.size, hash: r.tail.hash });
    head = 'current';
  }
  const nextSeq = Math.max(r.tail.seq, read.kind === 'head' ? read.head.seq : 0) + 1;
  let indexReady = false;
  try {
    new SessionIndexWriter(target.indexDir).prepare(target.fd, r.tail);
    indexReady = true;
  } catch {
    // Unwritable index: appends still work; readers scan.
  }
  return { ...r, head, nextSeq, indexReady };
}

/** Chains, writes and fsyncs `bodies` (validated records without chain fields). Call under the lock. */
export function writeLocked<T extends object>(target: WriteTarget, bodies: readonly T[]): WriteResult<T> {
  const { tail, quarantined, indexReady, head, nextSeq } = prepareLocked(target);
  const scheme = chainSchemeOf(target.chainKey);
  if (tail.scheme !== undefined && tail.scheme !== scheme) {
    throw new ChainSchemeError(target.path, tail.scheme, scheme);
  }
  const stored: WriteResult<T>['stored'] = [];
  const lines: string[] = [];
  const spans: Array<[number, number]> = [];
  let seq = nextSeq - 1;
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
    throw fileError(target.path, 'append', e);
  }
  // A head that no longer matches the ledger stays where it is: it is the evidence.
  if (head !== 'mismatch') {
    try {
      writeHead(target.headPath, { seq, end: offset, hash: prev as string });
    } catch {
      // The records are stored; the head stays behind, which the next writer repairs.
    }
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
