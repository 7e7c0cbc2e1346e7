/**
 * The end of the ledger: where the next record goes, what it chains to, and the repair of a torn
 * tail. Called under the lock before every append and when a ledger is opened.
 *
 * A record is written with one `write` and ends with a newline, so every whole record ends in
 * `\n`. Bytes after the last newline are a record torn by a crash (kill -9 inside a multi-page
 * write, a full disk, power loss leaving zeros): they are appended to `<ledger>.quarantine`
 * (fsync), then cut from the ledger (fsync). A crash between the two steps only quarantines the
 * same bytes twice. Whole records are never moved.
 *
 * Imports only node built-ins and local lean modules.
 */
import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, readSync, writeSync } from 'node:fs';
import { onFile, openNoFollow } from './files.js';
import { hashScheme } from './hash-scheme.js';
import { FILE_MODE } from './types.js';

/** The last whole record, which the next record chains to. */
export interface Tail {
  /** File size after any repair: the offset where the next record is written. */
  size: number;
  /** The last record's seq, 0 for an empty ledger. */
  seq: number;
  /** The last record's hash, `null` for an empty ledger. */
  hash: string | null;
  /** The chain scheme of the last record (`sha256` or `hmac-sha256:<keyId>`), undefined when empty. */
  scheme: string | undefined;
}

/** What a tail repair moved aside. */
export interface Quarantined {
  /** Offset in the ledger where the torn bytes started. */
  offset: number;
  /** How many bytes were moved. */
  length: number;
  /** The seq of the last whole record before them (0 when none). */
  afterSeq: number;
}

/** The ledger cannot be appended to until a person looks at it. */
export class LedgerCorruptError extends Error {
  readonly ledgerPath: string;
  constructor(ledgerPath: string, message: string) {
    super(`ledger ${ledgerPath}: ${message}; run \`continuity ledger verify --ledger ${ledgerPath}\``);
    this.name = 'LedgerCorruptError';
    this.ledgerPath = ledgerPath;
  }
}

const NL = 0x0a;
const CHUNK = 8192;

/** Offset of the last `\n` strictly before `end`, or -1. Reads backwards in chunks. */
export function lastNewlineBefore(fd: number, end: number): number {
  const buf = Buffer.allocUnsafe(CHUNK);
  let pos = end;
  while (pos > 0) {
    const start = Math.max(0, pos - CHUNK);
    const n = readSync(fd, buf, 0, pos - start, start);
    const i = buf.subarray(0, n).lastIndexOf(NL);
    if (i !== -1) return start + i;
    pos = start;
  }
  return -1;
}

function readRange(fd: number, start: number, end: number): Buffer {
  const buf = Buffer.allocUnsafe(end - start);
  let off = 0;
  while (off < buf.length) {
    const n = readSync(fd, buf, off, buf.length - off, start + off);
    if (n === 0) break;
    off += n;
  }
  return buf.subarray(0, off);
}

/** Parses the whole line ending at `nl` (exclusive) and returns its seq and hash. */
function lastRecord(
  fd: number,
  nl: number,
  ledgerPath: string,
): { seq: number; hash: string; scheme: string } {
  const start = lastNewlineBefore(fd, nl) + 1;
  return parseLast(readRange(fd, start, nl).toString('utf8'), start, ledgerPath);
}

/** Parses the text of the last whole record (found at byte `start`) into its seq and hash. */
function parseLast(
  text: string,
  start: number,
  ledgerPath: string,
): { seq: number; hash: string; scheme: string } {
  let rec: { seq?: unknown; hash?: unknown };
  try {
    rec = JSON.parse(text) as typeof rec;
  } catch {
    throw new LedgerCorruptError(ledgerPath, `the last record (at byte ${start}) is not valid JSON`);
  }
  const scheme = hashScheme(rec.hash);
  if (typeof rec.seq !== 'number' || !Number.isSafeInteger(rec.seq) || rec.seq < 1 || !scheme) {
    throw new LedgerCorruptError(ledgerPath, `the last record (at byte ${start}) has no valid seq and hash`);
  }
  return { seq: rec.seq, hash: rec.hash as string, scheme };
}

/**
 * Reads the tail of the open ledger `fd`; when the file does not end with a whole record, moves
 * the torn bytes to `quarantinePath` first. Call under the lock.
 */
export function readTail(
  fd: number,
  ledgerPath: string,
  quarantinePath: string,
  now: () => number = Date.now,
): { tail: Tail; quarantined?: Quarantined } {
  const size = fstatSync(fd).size;
  if (size === 0) return { tail: { size: 0, seq: 0, hash: null, scheme: undefined } };
  // The common case in one read: the last chunk holds the whole last record.
  const start = Math.max(0, size - CHUNK);
  const chunk = readRange(fd, start, size);
  if (chunk[chunk.length - 1] === NL) {
    const prev = chunk.lastIndexOf(NL, chunk.length - 2);
    if (prev !== -1 || start === 0) {
      const r = parseLast(chunk.toString('utf8', prev + 1, chunk.length - 1), start + prev + 1, ledgerPath);
      return { tail: { size, seq: r.seq, hash: r.hash, scheme: r.scheme } };
    }
    const r = lastRecord(fd, size - 1, ledgerPath);
    return { tail: { size, seq: r.seq, hash: r.hash, scheme: r.scheme } };
  }
  const nl = lastNewlineBefore(fd, size);
  const cut = nl + 1;
  const afterSeq = nl === -1 ? 0 : lastRecord(fd, nl, ledgerPath).seq;
  const torn = readRange(fd, cut, size);
  const entry = {
    quarantinedAt: new Date(now()).toISOString(),
    ledgerOffset: cut,
    length: torn.length,
    afterSeq,
    bytesBase64: torn.toString('base64'),
  };
  const q = openNoFollow(
    quarantinePath,
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT,
    FILE_MODE,
  );
  try {
    onFile(quarantinePath, 'write', () => {
      writeSync(q, `${JSON.stringify(entry)}\n`);
      fsyncSync(q);
    });
  } finally {
    closeSync(q);
  }
  ftruncateSync(fd, cut);
  fsyncSync(fd);
  const quarantined: Quarantined = { offset: cut, length: torn.length, afterSeq };
  if (nl === -1) return { tail: { size: 0, seq: 0, hash: null, scheme: undefined }, quarantined };
  const r = lastRecord(fd, nl, ledgerPath);
  return { tail: { size: cut, seq: r.seq, hash: r.hash, scheme: r.scheme }, quarantined };
}
