/**
 * The head file `<ledger>.head`: the seq, end offset and hash of the last record appended, so
 * removing records from the end of the ledger is caught (a hash chain alone cannot show that its
 * last links are gone), whatever tool removed them (`sed -i '$d'` writes a new file; a truncate
 * keeps the inode).
 *
 * - Written under the ledger lock, after the ledger's fsync, in place (fixed width, 0600). It is
 *   never ahead of the ledger: a crash between the two leaves it behind, which is consistent.
 * - Never moved back. When the ledger no longer holds the record the head names (records removed
 *   or rewritten), appends go on, with seqs after the head's, and the head stays where it was:
 *   the gap, and the head, keep the removal visible to `verify` and `status`.
 * - Trust on first use: a ledger without a head (one written before the head existed) gets one
 *   from its last record when it is next opened for writing.
 *
 * What it cannot catch: removing the tail and deleting (or rewriting) the head too. Keep a copy
 * of the head elsewhere, or ship the ledger, if that matters (docs/ledger.md, Security).
 *
 * Imports only node built-ins and lean local modules.
 */
import { closeSync, constants, readSync, writeSync } from 'node:fs';
import { onFile, openNoFollow, readSideFile } from './files.js';
import { hashScheme } from './hash-scheme.js';
import { lastNewlineBefore } from './tail.js';
import { FILE_MODE } from './types.js';

/** What the head file records: the last record appended. */
export interface Head {
  seq: number;
  /** Offset just after the record's newline. */
  end: number;
  hash: string;
}

/** The head file's state: absent, unreadable (not a head record), or a head. */
export type HeadRead = { kind: 'absent' } | { kind: 'malformed' } | { kind: 'head'; head: Head };

const HEAD_RE = /^v1 +(\d+) +(\d+) +(\S+) *\n/;

/** Reads the head file at `file`. Throws `LedgerFileError` when it cannot be read (or is a link). */
export function readHead(file: string): HeadRead {
  const text = readSideFile(file);
  if (text === undefined) return { kind: 'absent' };
  const m = HEAD_RE.exec(text);
  if (!m || !hashScheme(m[3])) return { kind: 'malformed' };
  const head = { seq: Number(m[1]), end: Number(m[2]), hash: m[3]! };
  if (!Number.isSafeInteger(head.seq) || head.seq < 1 || !Number.isSafeInteger(head.end)) {
    return { kind: 'malformed' };
  }
  return { kind: 'head', head };
}

/** Writes the head file in place (fixed width, so a reader never sees it empty). Call under the lock. */
export function writeHead(file: string, head: Head): void {
  const text = `v1 ${String(head.seq).padStart(16)} ${String(head.end).padStart(16)} ${head.hash.padEnd(100)}\n`;
  const fd = openNoFollow(file, constants.O_WRONLY | constants.O_CREAT, FILE_MODE);
  try {
    onFile(file, 'write', () => writeSync(fd, text, 0));
  } finally {
    closeSync(fd);
  }
}

/** The seq and hash of the whole record ending at `end` in the open ledger `fd`, or undefined. */
export function recordEndingAt(
  fd: number,
  end: number,
  size: number,
): { seq: unknown; hash: unknown } | undefined {
  if (end < 1 || end > size) return undefined;
  const one = Buffer.alloc(1);
  if (readSync(fd, one, 0, 1, end - 1) !== 1 || one[0] !== 0x0a) return undefined;
  const start = lastNewlineBefore(fd, end - 1) + 1;
  const buf = Buffer.allocUnsafe(end - 1 - start);
  readSync(fd, buf, 0, buf.length, start);
  try {
    const rec = JSON.parse(buf.toString('utf8')) as { seq?: unknown; hash?: unknown };
    return rec !== null && typeof rec === 'object' ? { seq: rec.seq, hash: rec.hash } : undefined;
  } catch {
    return undefined;
  }
}

/** How the head relates to the ledger's last record. */
export type HeadState =
  /** No head file: nothing to compare (an older ledger, or an empty one). */
  | 'absent'
  /** The head names the last record. */
  | 'current'
  /** The head names an earlier record, still in place (a crash between the fsync and the head write). */
  | 'behind'
  /** The ledger no longer holds the record the head names, or the head is not a head record. */
  | 'mismatch';

/**
 * Compares the head with the ledger open at `fd` (of `size` bytes) whose last record has `seq`
 * and `hash`.
 */
export function headState(
  read: HeadRead,
  fd: number,
  size: number,
  last: { seq: number; hash: string | null },
): HeadState {
  if (read.kind === 'absent') return 'absent';
  if (read.kind === 'malformed') return 'mismatch';
  const { head } = read;
  if (head.seq === last.seq) return head.hash === last.hash && head.end === size ? 'current' : 'mismatch';
  if (head.seq > last.seq) return 'mismatch';
  const rec = recordEndingAt(fd, head.end, size);
  return rec && rec.seq === head.seq && rec.hash === head.hash ? 'behind' : 'mismatch';
}

/** One sentence on a head that does not match the ledger, naming the head file. */
export function describeMismatch(file: string, read: HeadRead, last: { seq: number }): string {
  if (read.kind !== 'head')
    return `${file} is not a head record (edited or damaged), so the tail cannot be checked`;
  if (read.head.seq > last.seq) {
    return `the ledger ends at seq ${last.seq} but ${file} recorded seq ${read.head.seq}: the last records were removed`;
  }
  return `the ledger no longer holds seq ${read.head.seq} as ${file} recorded it: records were rewritten`;
}
