/**
 * The per-session index: a rebuildable cache beside the ledger that makes reading one session's
 * latest boundary cost the same with 1 000 or 100 000 records in the ledger.
 *
 * Layout of `<ledger>.index/` (0700, files 0600):
 * - `s-<h>.idx`: one entry per evidence record of the session(s) whose id hashes to `<h>`
 *   (snapshot, approval, boundary, evidence_missing, classification): `\n<seq> <offset> <length>
 *   <kind> <boundaryId>;`. Entries start with a newline and end with `;`, so an entry torn by a
 *   crash is recognizable and cannot damage the next one.
 * - `a-<h>.idx`: the same for activity records, read from the end (only the latest matters).
 * - `covered`: fixed-width `v1 <bootId> <ledger inode> <seq> <end offset> <hash prefix>`: the last
 *   record whose entries are written. Written in place after the entries.
 *
 * Nothing here is trusted blindly. A writer (under the lock) indexes any records past `covered`
 * before appending (a process killed between its append and its index update), and rebuilds the
 * whole index when `covered` is missing, names another boot (writes not fsynced may have been
 * lost in a power cut, so only the fsynced ledger is trusted across boots), another inode, a
 * longer file, or a record that is not at that offset. A reader that finds the index unusable, or
 * an entry that does not point to a record of its session, falls back to a full scan.
 *
 * Imports only node built-ins and lean local modules.
 */
import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { uptime } from 'node:os';
import { join } from 'node:path';
import { forEachLine } from './scan.js';
import { lastNewlineBefore } from './tail.js';
import { DIR_MODE, FILE_MODE } from './types.js';

/** What an index entry points to. */
export type EntryKind =
  | 'pre'
  | 'post'
  | 'approval'
  | 'boundary'
  | 'missing_pre'
  | 'missing_post'
  | 'classification'
  | 'activity';

/** One index entry: where a record of a session is in the ledger. */
export interface IndexEntry {
  seq: number;
  offset: number;
  /** Bytes of the line including its newline. */
  length: number;
  kind: EntryKind;
  /** The boundary the record belongs to; `-` when none (approvals), the state for activity. */
  tag: string;
}

/** A point in the ledger: a record's seq, the offset after it, and its hash's last 16 hex. */
export interface CoveredPoint {
  seq: number;
  end: number;
  hashPrefix: string;
}

/** The last record whose index entries are written, in which boot, for which file. */
export interface Covered extends CoveredPoint {
  boot: string;
  ino: string;
}

const COVERED_FILE = 'covered';
const ENTRY_RE =
  /^(\d+) (\d+) (\d+) (pre|post|approval|boundary|missing_pre|missing_post|classification|activity) (\S+);$/;

let cachedBoot: string | undefined;
/**
 * An id of the current boot: Linux's boot_id, elsewhere the boot time to the minute (a wrong
 * guess only costs one rebuild).
 */
export function bootId(): string {
  if (cachedBoot) return cachedBoot;
  try {
    cachedBoot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    cachedBoot = `t${Math.round((Date.now() / 1000 - uptime()) / 60)}`;
  }
  return cachedBoot;
}

/** A short, non-cryptographic hash of a session id for file names (FNV-1a and djb2, 32 bits each). */
export function sessionFileKey(sessionId: string): string {
  let fnv = 0x811c9dc5;
  let djb = 5381;
  for (let i = 0; i < sessionId.length; i++) {
    const c = sessionId.charCodeAt(i);
    fnv = Math.imul(fnv ^ c, 0x01000193) >>> 0;
    djb = (Math.imul(djb, 33) + c) >>> 0;
  }
  return fnv.toString(16).padStart(8, '0') + djb.toString(16).padStart(8, '0');
}

/** The index file holding a session's entries of one family. */
export function indexFile(indexDir: string, family: 'evidence' | 'activity', sessionId: string): string {
  return join(indexDir, `${family === 'evidence' ? 's' : 'a'}-${sessionFileKey(sessionId)}.idx`);
}

/** The index kind of a parsed record, or undefined for a record without a session. */
export function entryOf(
  rec: Record<string, unknown>,
  offset: number,
  length: number,
): { sessionId: string; entry: IndexEntry } | undefined {
  const sessionId = rec.sessionId;
  const seq = rec.seq;
  if (typeof sessionId !== 'string' || typeof seq !== 'number') return undefined;
  let kind: EntryKind;
  let tag = typeof rec.boundaryId === 'string' ? rec.boundaryId : '-';
  switch (rec.type) {
    case 'snapshot':
      kind = rec.phase === 'post' ? 'post' : 'pre';
      break;
    case 'evidence_missing':
      kind = rec.phase === 'post' ? 'missing_post' : 'missing_pre';
      break;
    case 'approval':
      kind = 'approval';
      break;
    case 'boundary':
      kind = 'boundary';
      break;
    case 'classification':
      kind = 'classification';
      break;
    case 'activity':
      kind = 'activity';
      tag = typeof rec.state === 'string' ? rec.state : '-';
      break;
    default:
      return undefined;
  }
  return { sessionId, entry: { seq, offset, length, kind, tag } };
}

function formatEntry(e: IndexEntry): string {
  return `\n${e.seq} ${e.offset} ${e.length} ${e.kind} ${e.tag};`;
}

/** Parses index file text; torn or foreign lines are skipped. */
export function parseEntries(text: string): IndexEntry[] {
  const out: IndexEntry[] = [];
  for (const line of text.split('\n')) {
    const m = ENTRY_RE.exec(line);
    if (!m) continue;
    out.push({
      seq: Number(m[1]),
      offset: Number(m[2]),
      length: Number(m[3]),
      kind: m[4] as EntryKind,
      tag: m[5]!,
    });
  }
  return out;
}

/** Reads `covered`, or undefined when it is missing or malformed. */
export function readCovered(indexDir: string): Covered | undefined {
  let text: string;
  try {
    text = readFileSync(join(indexDir, COVERED_FILE), 'latin1');
  } catch {
    return undefined;
  }
  const m = /^v1 +(\S+) +(\d+) +(\d+) +(\d+) +([0-9a-f]{16})\n/.exec(text);
  if (!m) return undefined;
  return { boot: m[1]!, ino: m[2]!, seq: Number(m[3]), end: Number(m[4]), hashPrefix: m[5]! };
}

/** The part of a hash kept in `covered`: its last 16 hex digits. */
export function hashPrefixOf(hash: string): string {
  return hash.slice(-16);
}

/** The inode of an open file, as a decimal string (inodes can exceed 2^53). */
export function inodeOf(fd: number): string {
  return fstatSync(fd, { bigint: true }).ino.toString();
}

/**
 * True when `covered` describes the ledger open at `fd` (of `size` bytes) in this boot: same
 * inode, not past the end, and the record ending at `covered.end` has that seq and hash.
 */
export function coveredMatches(c: Covered | undefined, fd: number, ino: string, size: number): c is Covered {
  if (!c || c.boot !== bootId() || c.ino !== ino || c.end > size) return false;
  if (c.end === 0) return c.seq === 0;
  const one = Buffer.alloc(1);
  readSync(fd, one, 0, 1, c.end - 1);
  if (one[0] !== 0x0a) return false;
  const start = lastNewlineBefore(fd, c.end - 1) + 1;
  const buf = Buffer.allocUnsafe(c.end - 1 - start);
  readSync(fd, buf, 0, buf.length, start);
  try {
    const rec = JSON.parse(buf.toString('utf8')) as { seq?: unknown; hash?: unknown };
    return rec.seq === c.seq && typeof rec.hash === 'string' && hashPrefixOf(rec.hash) === c.hashPrefix;
  } catch {
    return false;
  }
}

/**
 * Maintains the index from the write path. Every method is called under the ledger lock.
 */
export class SessionIndexWriter {
  readonly indexDir: string;
  private _pending = new Map<string, string>();

  constructor(indexDir: string) {
    this.indexDir = indexDir;
  }

  /**
   * Makes the index describe the ledger up to `tail` (read under the same lock): catches up records appended after
   * `covered`, or rebuilds everything when `covered` cannot be trusted. Returns what it did.
   */
  prepare(
    fd: number,
    tail: { size: number; seq: number; hash: string | null },
  ): 'current' | 'caught_up' | 'rebuilt' {
    const size = tail.size;
    const ino = inodeOf(fd);
    const c = readCovered(this.indexDir);
    // The common case, without reading the ledger again: `covered` is the tail just read.
    if (
      c &&
      c.boot === bootId() &&
      c.ino === ino &&
      c.end === size &&
      c.seq === tail.seq &&
      tail.hash !== null &&
      c.hashPrefix === hashPrefixOf(tail.hash)
    ) {
      return 'current';
    }
    mkdirSync(this.indexDir, { recursive: true, mode: DIR_MODE });
    if (coveredMatches(c, fd, ino, size)) {
      if (c.end === size) return 'current';
      this._indexRange(fd, c.end, size, ino, c);
      return 'caught_up';
    }
    // Invalidate first, so a concurrent reader falls back to a scan while files are rewritten.
    try {
      unlinkSync(join(this.indexDir, COVERED_FILE));
    } catch {
      // Absent already.
    }
    for (const name of readdirSync(this.indexDir)) {
      if (/^[sa]-[0-9a-f]{16}\.idx$/.test(name)) unlinkSync(join(this.indexDir, name));
    }
    this._indexRange(fd, 0, size, ino);
    return 'rebuilt';
  }

  private _indexRange(fd: number, from: number, to: number, ino: string, start?: CoveredPoint): void {
    let last: CoveredPoint = start ?? { seq: 0, end: 0, hashPrefix: '0'.repeat(16) };
    forEachLine(
      fd,
      (line) => {
        if (!line.complete) return;
        let rec: Record<string, unknown>;
        try {
          rec = JSON.parse(line.text) as Record<string, unknown>;
        } catch {
          return; // `verify` reports it; the index only skips it.
        }
        this.add(rec, line.offset, line.length);
        if (typeof rec.seq === 'number' && typeof rec.hash === 'string') {
          last = { seq: rec.seq, end: line.offset + line.length, hashPrefix: hashPrefixOf(rec.hash) };
        }
      },
      from,
      to,
    );
    this.commit(ino, last);
  }

  /** Queues the entry of one record written at `offset`. */
  add(rec: Record<string, unknown>, offset: number, length: number): void {
    const e = entryOf(rec, offset, length);
    if (!e) return;
    const file = indexFile(this.indexDir, e.entry.kind === 'activity' ? 'activity' : 'evidence', e.sessionId);
    this._pending.set(file, (this._pending.get(file) ?? '') + formatEntry(e.entry));
  }

  /**
   * Writes queued entries, then `covered` (after them, so `covered` never claims an entry that is
   * not written). No fsync: across a reboot the index is rebuilt from the fsynced ledger.
   */
  commit(ino: string, last: CoveredPoint): void {
    for (const [file, text] of this._pending) {
      const fd = openSync(file, 'a', FILE_MODE);
      try {
        writeSync(fd, text);
      } finally {
        closeSync(fd);
      }
    }
    this._pending.clear();
    // Fixed width, written in place without truncating: a reader never sees an empty file.
    const text = `v1 ${bootId().padEnd(40)} ${ino.padStart(20)} ${String(last.seq).padStart(16)} ${String(last.end).padStart(16)} ${last.hashPrefix}\n`;
    const fd = openSync(join(this.indexDir, COVERED_FILE), constants.O_WRONLY | constants.O_CREAT, FILE_MODE);
    try {
      writeSync(fd, text, 0);
    } finally {
      closeSync(fd);
    }
  }
}
