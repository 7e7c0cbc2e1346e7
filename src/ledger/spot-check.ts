/**
 * The spot check `status` runs on what it shows: a few reads, never a scan, so it costs the same
 * with 1 000 or 1 000 000 records. It catches, without reading the whole ledger:
 *
 * - a removed or rewritten tail: the head file against the ledger's last record (`head.ts`);
 * - an edit of a record shown (pre, post, boundary report, approvals, missing evidence, receipt):
 *   its line must be the canonical JSON of the record and carry its hash (recomputed when the
 *   configured chain key is the ledger's), and the next record must chain to it (its `prev` is
 *   this record's hash, its seq the next one);
 * - a torn tail (bytes after the last newline).
 *
 * What it does not catch: an edit of a record it does not show, or one whose hash and the next
 * record's `prev` were recomputed together (the link after that is not read). `continuity ledger
 * verify` checks every record and every link.
 */
import { closeSync, constants, fstatSync, readSync } from 'node:fs';
import { type ChainKey, canonicalBodyOf, chainSchemeOf, hashCanonical } from './chain.js';
import type { RecordLocation } from './evidence.js';
import { onFile, openNoFollow } from './files.js';
import { hashScheme } from './hash-scheme.js';
import { describeMismatch, headState, readHead, recordEndingAt } from './head.js';
import { sidecarPaths } from './paths.js';
import { parseRecordLine } from './scan.js';
import { lastNewlineBefore } from './tail.js';
import { MAX_RECORD_BYTES } from './types.js';
import type { VerifyWhy } from './verify.js';

/** The first problem a spot check found. */
export interface SpotProblem {
  /** The seq at fault (the first missing one for a removed tail). */
  seq: number;
  why: VerifyWhy;
  message: string;
}

/** Options of {@link spotCheck}. */
export interface SpotCheckOptions {
  /** The chain key, to recompute keyed hashes. Without it (or with another) only links are checked. */
  chainKey?: ChainKey | undefined;
}

type Rec = Record<string, unknown>;

function readLine(fd: number, offset: number, length: number): string | undefined {
  if (length < 2 || length > MAX_RECORD_BYTES + 1) return undefined;
  const buf = Buffer.allocUnsafe(length);
  const n = readSync(fd, buf, 0, length, offset);
  if (n !== length || buf[n - 1] !== 0x0a) return undefined;
  return buf.toString('utf8', 0, n - 1);
}

/** The line starting at `offset` (up to the record size limit), or undefined. */
function readLineAt(fd: number, offset: number, size: number): string | undefined {
  const buf = Buffer.allocUnsafe(Math.min(MAX_RECORD_BYTES + 1, size - offset));
  const n = readSync(fd, buf, 0, buf.length, offset);
  const nl = buf.subarray(0, n).indexOf(0x0a);
  return nl === -1 ? undefined : buf.toString('utf8', 0, nl);
}

function parse(text: string | undefined): Rec | undefined {
  return text === undefined ? undefined : parseRecordLine(text);
}

function checkRecord(
  fd: number,
  size: number,
  at: RecordLocation,
  configured: string,
  key: ChainKey | undefined,
): SpotProblem | undefined {
  const text = readLine(fd, at.offset, at.length);
  const rec = parse(text);
  if (!rec || rec.seq !== at.seq) {
    return { seq: at.seq, why: 'edited', message: `the record read for seq ${at.seq} is no longer there` };
  }
  const body = canonicalBodyOf(rec, text!);
  if (body === undefined) {
    return {
      seq: at.seq,
      why: 'edited',
      message: 'the line is not the canonical JSON of its record (changed by hand)',
    };
  }
  if (hashScheme(rec.hash) === configured && hashCanonical(body, key) !== rec.hash) {
    return { seq: at.seq, why: 'edited', message: 'the hash does not match the record (content changed)' };
  }
  const nextOffset = at.offset + at.length;
  if (nextOffset >= size) return undefined; // the last record: the head check covers it
  const next = parse(readLineAt(fd, nextOffset, size));
  if (!next || next.seq !== at.seq + 1 || next.prev !== rec.hash) {
    return {
      seq: at.seq,
      why: 'edited',
      message: `the record after seq ${at.seq} does not chain to it: seq ${at.seq} was changed and its hash recomputed, or records were removed or moved`,
    };
  }
  return undefined;
}

/**
 * Spot-checks the ledger at `ledgerPath` around the records at `locations`, and its tail against
 * the head file. Returns the first problem, or undefined. Throws `LedgerFileError` when a file
 * cannot be read.
 */
export function spotCheck(
  ledgerPath: string,
  locations: readonly RecordLocation[],
  options: SpotCheckOptions = {},
): SpotProblem | undefined {
  const headFile = sidecarPaths(ledgerPath).head;
  // The head first: it is written after the ledger, so it never names a record not yet there.
  const head = readHead(headFile);
  const fd = openNoFollow(ledgerPath, constants.O_RDONLY, undefined, true);
  if (fd === undefined) {
    return head.kind === 'head'
      ? {
          seq: 1,
          why: 'removed',
          message: `the ledger is gone but ${headFile} recorded seq ${head.head.seq}`,
        }
      : undefined;
  }
  try {
    return onFile(ledgerPath, 'read', () => {
      const size = fstatSync(fd).size;
      let last = { seq: 0, hash: null as string | null };
      if (size > 0) {
        const rec = recordEndingAt(fd, size, size);
        if (!rec) {
          const nl = lastNewlineBefore(fd, size);
          const before = nl === -1 ? undefined : recordEndingAt(fd, nl + 1, size);
          return {
            seq: (typeof before?.seq === 'number' ? before.seq : 0) + 1,
            why: 'torn' as const,
            message: 'the ledger does not end with a whole record (a write torn by a crash, or an edit)',
          };
        }
        if (typeof rec.seq !== 'number' || typeof rec.hash !== 'string') {
          return { seq: 0, why: 'edited' as const, message: 'the last record has no valid seq and hash' };
        }
        last = { seq: rec.seq, hash: rec.hash };
      }
      const configured = chainSchemeOf(options.chainKey);
      const seen = new Set<number>();
      for (const at of [...locations].sort((a, b) => a.seq - b.seq)) {
        if (seen.has(at.seq)) continue;
        seen.add(at.seq);
        const p = checkRecord(fd, size, at, configured, options.chainKey);
        if (p) return p;
      }
      const state = headState(head, fd, size, last);
      if (state === 'mismatch') {
        const removed = head.kind === 'head' && head.head.seq > last.seq;
        return {
          seq: removed ? last.seq + 1 : head.kind === 'head' ? head.head.seq : last.seq,
          why: removed
            ? ('removed' as const)
            : head.kind === 'head'
              ? ('edited' as const)
              : ('head' as const),
          message: describeMismatch(headFile, head, last),
        };
      }
      return undefined;
    });
  } finally {
    closeSync(fd);
  }
}
