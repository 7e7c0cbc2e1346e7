/**
 * The per-session index: a rebuildable cache beside the ledger that makes reading one session's
 * latest boundary, and every session's, cost the same with 1 000 or 1 000 000 records in the
 * ledger.
 *
 * Layout of `<ledger>.index/` (0700, files 0600):
 * - `s-<h>.idx`: one entry per evidence record of the session(s) whose id hashes to `<h>`
 *   (snapshot, approval, boundary, evidence_missing, classification): `\n<seq> <offset> <length>
 *   <kind> <boundaryId>;`. Entries start with a newline and end with `;`, so an entry torn by a
 *   crash is recognizable and cannot damage the next one.
 * - `a-<h>.idx`: the same for activity records, read from the end (only the latest matters).
 * - `b-<h>.idx`: one line per boundary a session opened (the first record with a boundary id new
 *   to the session): `\n<seq> <boundaryId> <sessionId>;`. Its last line for a session names the
 *   session's latest boundary and where it starts, so a reader needs only the entries from there
 *   on, read backwards from the end of `s-<h>.idx`.
 * - `sessions`: `\n<sessionId>;` once per session that has a boundary (for `status` over every
 *   session without reading the ledger).
 * - `covered`: fixed-width `v2 <bootId> <ledger inode> <seq> <end offset> <hash prefix>`: the last
 *   record whose entries are written. Written in place after the entries. An index of an earlier
 *   format (`v1`, without `b-` files) is not trusted and is rebuilt by the next writer.
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
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { uptime } from 'node:os';
import { join } from 'node:path';
import { assertRealDir, fileError, openNoFollow, openRegularNoFollow, readSideFile } from './files.js';
import { recordEndingAt } from './head.js';
import { COVERED_FILE, type Covered, indexFile, parseCovered } from './index-names.js';
import { forEachLine } from './scan.js';
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
  | 'activity'
  | 'approver_key';

/**
 * The index key of the approver key records (which belong to no session): their entries go to
 * the evidence file of this id, so a reader finds every key certificate without a scan. Not an id
 * a session can have: sessions are opaque ids, and the index only ever reads this one for keys.
 */
export const APPROVER_KEYS_INDEX_ID = 'continuity.approver_keys';

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

export type { Covered, IndexFamily } from './index-names.js';
export { indexFile, sessionFileKey } from './index-names.js';

const SESSIONS_FILE = 'sessions';
const COVERED_VERSION = 'v2';
const ENTRY_RE =
  /^(\d+) (\d+) (\d+) (pre|post|approval|boundary|missing_pre|missing_post|classification|activity|approver_key) (\S+);$/;
const BOUNDARY_LINE_RE = /^(\d+) (\S+) (\S+);$/;
const SESSION_LINE_RE = /^(\S+);$/;
// Ids written into index lines: no white space (the separator) and no `;` (the terminator). Ids
// that fit the ledger's schema always pass; a hand-edited record with another id is not indexed
// (and neither the index nor a scan uses it, so both answer the same).
const INDEX_TOKEN = /^[^\s;]{1,256}$/;
// Kinds that open or belong to a boundary.
const BOUNDARY_KINDS: ReadonlySet<EntryKind> = new Set([
  'pre',
  'post',
  'boundary',
  'missing_pre',
  'missing_post',
]);
const INDEX_FILE_RE = /^[sab]-[0-9a-f]{16}\.idx$/;

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

/** True for the kinds of record that open or belong to a boundary (not approvals, receipts or activity). */
export function isBoundaryKind(kind: EntryKind): boolean {
  return BOUNDARY_KINDS.has(kind);
}

/** The index kind of a parsed record, or undefined for a record without a session. */
export function entryOf(
  rec: Record<string, unknown>,
  offset: number,
  length: number,
): { sessionId: string; entry: IndexEntry } | undefined {
  const sessionId = rec.type === 'approver_key' ? APPROVER_KEYS_INDEX_ID : rec.sessionId;
  const seq = rec.seq;
  if (typeof sessionId !== 'string' || typeof seq !== 'number' || !INDEX_TOKEN.test(sessionId)) {
    return undefined;
  }
  let kind: EntryKind;
  let tag = typeof rec.boundaryId === 'string' ? rec.boundaryId : '-';
  if (!INDEX_TOKEN.test(tag)) return undefined;
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
    case 'approver_key':
      kind = 'approver_key';
      break;
    default:
      return undefined;
  }
  return { sessionId, entry: { seq, offset, length, kind, tag } };
}

function formatEntry(e: IndexEntry): string {
  return `\n${e.seq} ${e.offset} ${e.length} ${e.kind} ${e.tag};`;
}

function parseEntry(line: string): IndexEntry | undefined {
  const m = ENTRY_RE.exec(line);
  if (!m) return undefined;
  return {
    seq: Number(m[1]),
    offset: Number(m[2]),
    length: Number(m[3]),
    kind: m[4] as EntryKind,
    tag: m[5]!,
  };
}

/** Parses index file text; torn or foreign lines are skipped. */
export function parseEntries(text: string): IndexEntry[] {
  const out: IndexEntry[] = [];
  for (const line of text.split('\n')) {
    const e = parseEntry(line);
    if (e) out.push(e);
  }
  return out;
}

// About 40 entries: an index file this small is read whole; a larger one from its end backwards,
// in chunks that start this size and double (so a reader that needs only the last few entries
// splits a few hundred bytes, not the file).
const SMALL_INDEX_FILE = 1024;
const MAX_BACK_CHUNK = 64 * 1024;

/** Calls `onLine` for every line of the open file `fd` of `size` bytes, last first; `false` stops. */
function backwardLines(fd: number, size: number, onLine: (line: string) => unknown): void {
  let pos = size;
  let carry = '';
  let chunk = SMALL_INDEX_FILE;
  let buf = Buffer.allocUnsafe(Math.min(chunk, size));
  while (pos > 0) {
    const start = Math.max(0, pos - chunk);
    if (buf.length < pos - start) buf = Buffer.allocUnsafe(pos - start);
    const n = readSync(fd, buf, 0, pos - start, start);
    chunk = Math.min(chunk * 2, MAX_BACK_CHUNK);
    pos = start;
    const lines = (buf.toString('latin1', 0, n) + carry).split('\n');
    // The first piece may be the end of a line that starts in the previous chunk.
    carry = pos > 0 ? lines.shift()! : '';
    for (let i = lines.length - 1; i >= 0; i--) if (onLine(lines[i]!) === false) return;
  }
  if (carry !== '') onLine(carry);
}

/** Opens an index file for reading without following a link; undefined when it does not exist. */
function openIndexFile(file: string): number | undefined {
  try {
    return openRegularNoFollow(file, constants.O_RDONLY);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw fileError(file, 'open', e);
  }
}

/**
 * Calls `onLine` for every line of the index file `file`, last first, reading backwards in
 * chunks. Return `false` to stop. A missing file has no lines.
 */
export function forEachLineBackward(file: string, onLine: (line: string) => unknown): void {
  const fd = openIndexFile(file);
  if (fd === undefined) return;
  try {
    backwardLines(fd, fstatSync(fd).size, onLine);
  } finally {
    closeSync(fd);
  }
}

/**
 * The entries with a seq of at least `minSeq` among `fd`'s lines, in seq order, read from the end.
 * Entries are appended in seq order (a writer catching up after a crash may repeat some, which
 * are merged here), so the read stops at the first entry below `minSeq`.
 */
function entriesFrom(fd: number, size: number, minSeq: number): IndexEntry[] {
  const bySeq = new Map<number, IndexEntry>();
  backwardLines(fd, size, (line) => {
    const e = parseEntry(line);
    if (!e) return;
    if (e.seq < minSeq) return false;
    if (!bySeq.has(e.seq)) bySeq.set(e.seq, e);
  });
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

/** What the index holds for a reader of one session's evidence. */
export interface SessionEvidenceRead {
  /** The session's latest boundary per its `b-` file, when the entries were cut to it. */
  opened: OpenedBoundary | undefined;
  /** Its `s-` entries: from `opened` on, or all of them without `opened`. */
  entries: IndexEntry[];
}

/**
 * A session's `s-` entries for finding its latest boundary. A small file (1 KiB) is taken
 * whole; a larger one only from the session's latest boundary on (from its `b-` file), read
 * backwards, so the cost does not grow with the session's earlier boundaries. A latest boundary
 * past `coveredSeq` was indexed after `covered` was read: then everything is read.
 */
export function readSessionEvidence(
  indexDir: string,
  sessionId: string,
  coveredSeq: number,
): SessionEvidenceRead {
  const file = indexFile(indexDir, 'evidence', sessionId);
  const fd = openIndexFile(file);
  if (fd === undefined) return { opened: undefined, entries: [] };
  try {
    const size = fstatSync(fd).size;
    const opened = size > SMALL_INDEX_FILE ? readLastBoundary(indexDir, sessionId) : undefined;
    if (opened && opened.seq <= coveredSeq) return { opened, entries: entriesFrom(fd, size, opened.seq) };
    return { opened: undefined, entries: entriesFrom(fd, size, 0) };
  } finally {
    closeSync(fd);
  }
}

/** The last entry of an index file (the highest seq), or undefined when it has none. */
export function readLastEntry(file: string): IndexEntry | undefined {
  let last: IndexEntry | undefined;
  forEachLineBackward(file, (line) => {
    last = parseEntry(line);
    return last === undefined;
  });
  return last;
}

/** A boundary a session opened: the seq of its first record and its id. */
export interface OpenedBoundary {
  seq: number;
  boundaryId: string;
}

/** The latest boundary `sessionId` opened, from its `b-` file, or undefined when none is indexed. */
export function readLastBoundary(indexDir: string, sessionId: string): OpenedBoundary | undefined {
  let found: OpenedBoundary | undefined;
  forEachLineBackward(indexFile(indexDir, 'boundaries', sessionId), (line) => {
    const m = BOUNDARY_LINE_RE.exec(line);
    if (m && m[3] === sessionId) {
      found = { seq: Number(m[1]), boundaryId: m[2]! };
      return false;
    }
  });
  return found;
}

/** Every boundary id `sessionId` opened, from its `b-` file. */
export function readBoundaryIds(indexDir: string, sessionId: string): Set<string> {
  const out = new Set<string>();
  forEachLineBackward(indexFile(indexDir, 'boundaries', sessionId), (line) => {
    const m = BOUNDARY_LINE_RE.exec(line);
    if (m && m[3] === sessionId) out.add(m[2]!);
  });
  return out;
}

/** The sessions that have a boundary, in the order they first had one. */
export function readSessions(indexDir: string): string[] {
  const text = readSideFile(join(indexDir, SESSIONS_FILE)) ?? '';
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const m = SESSION_LINE_RE.exec(line);
    if (m) out.add(m[1]!);
  }
  return [...out];
}

/** Reads `covered`, or undefined when it is missing, malformed or of an earlier format. */
export function readCovered(indexDir: string): Covered | undefined {
  let text: string | undefined;
  try {
    // An index directory that is a link is not ours to trust: readers scan, writers refuse it.
    if (lstatSync(indexDir).isSymbolicLink()) return undefined;
    text = readSideFile(join(indexDir, COVERED_FILE));
  } catch {
    return undefined;
  }
  if (text === undefined) return undefined;
  return parseCovered(text);
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
  const rec = recordEndingAt(fd, c.end, size);
  return (
    !!rec && rec.seq === c.seq && typeof rec.hash === 'string' && hashPrefixOf(rec.hash) === c.hashPrefix
  );
}

/**
 * Maintains the index from the write path. Every method is called under the ledger lock.
 */
export class SessionIndexWriter {
  readonly indexDir: string;
  private readonly _pending = new Map<string, string>();
  private readonly _pendingBoundaries = new Map<string, string>();
  private _sessionsText = '';
  // Per session: its latest boundary and, once needed, every boundary it opened.
  private readonly _boundaries = new Map<string, { last: string | undefined; seen?: Set<string> }>();

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
    assertRealDir(this.indexDir);
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
      if (INDEX_FILE_RE.test(name) || name === SESSIONS_FILE) unlinkSync(join(this.indexDir, name));
    }
    this._boundaries.clear();
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

  private _queue(file: string, text: string, into = this._pending): void {
    into.set(file, (into.get(file) ?? '') + text);
  }

  /**
   * Notes the boundary a record belongs to; a boundary id new to the session gets a `b-` line
   * (and a session new to the index a `sessions` line). Usually one backwards read of the last
   * line of the session's `b-` file; the whole file only for a record whose boundary is not the
   * session's latest (a late record for an older one, or a new boundary).
   */
  private _noteBoundary(sessionId: string, entry: IndexEntry): void {
    let st = this._boundaries.get(sessionId);
    if (!st) {
      st = { last: readLastBoundary(this.indexDir, sessionId)?.boundaryId };
      this._boundaries.set(sessionId, st);
    }
    if (st.last === entry.tag) return;
    st.seen ??= st.last === undefined ? new Set() : readBoundaryIds(this.indexDir, sessionId);
    if (st.seen.has(entry.tag)) return;
    if (st.seen.size === 0) this._sessionsText += `\n${sessionId};`;
    st.seen.add(entry.tag);
    st.last = entry.tag;
    this._queue(
      indexFile(this.indexDir, 'boundaries', sessionId),
      `\n${entry.seq} ${entry.tag} ${sessionId};`,
      this._pendingBoundaries,
    );
  }

  /** Queues the entries of one record written at `offset`. */
  add(rec: Record<string, unknown>, offset: number, length: number): void {
    const e = entryOf(rec, offset, length);
    if (!e) return;
    if (isBoundaryKind(e.entry.kind)) this._noteBoundary(e.sessionId, e.entry);
    this._queue(
      indexFile(this.indexDir, e.entry.kind === 'activity' ? 'activity' : 'evidence', e.sessionId),
      formatEntry(e.entry),
    );
  }

  /**
   * Writes queued lines (boundaries and sessions first, then entries), then `covered` (after them,
   * so `covered` never claims a line that is not written). No fsync: across a reboot the index is
   * rebuilt from the fsynced ledger.
   */
  commit(ino: string, last: CoveredPoint): void {
    assertRealDir(this.indexDir);
    const files = [...this._pendingBoundaries, ...this._pending];
    if (this._sessionsText) files.unshift([join(this.indexDir, SESSIONS_FILE), this._sessionsText]);
    for (const [file, text] of files) {
      const fd = openNoFollow(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, FILE_MODE);
      try {
        writeSync(fd, text);
      } finally {
        closeSync(fd);
      }
    }
    this._pending.clear();
    this._pendingBoundaries.clear();
    this._sessionsText = '';
    // Fixed width, written in place without truncating: a reader never sees an empty file.
    const text = `${COVERED_VERSION} ${bootId().padEnd(40)} ${ino.padStart(20)} ${String(last.seq).padStart(16)} ${String(last.end).padStart(16)} ${last.hashPrefix}\n`;
    const fd = openNoFollow(
      join(this.indexDir, COVERED_FILE),
      constants.O_WRONLY | constants.O_CREAT,
      FILE_MODE,
    );
    try {
      writeSync(fd, text, 0);
    } finally {
      closeSync(fd);
    }
  }
}
