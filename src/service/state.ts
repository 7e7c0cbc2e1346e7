/**
 * Durable pending state for `continuity serve`: boundaries waiting for their post observation
 * survive a restart, `kill -9` included.
 *
 * Design: the correlator is pure and deterministic, so its state is a function of its inputs. The
 * store keeps those inputs — every compaction event observed and every expiry tick — in an
 * append-only journal (one checksummed JSON line per record, on disk before the request that
 * carried them is answered), plus now and then a snapshot. Recovery loads the snapshot and replays
 * the journal records after it through a fresh correlator.
 *
 * Journal files are named by their first sequence number (`journal-<seq>.jsonl`). Compaction
 * switches to a new journal file at the last durable sequence number S (a quick step on the write
 * path), then hands S to the snapshot writer, which rebuilds the state at S from the files alone
 * (off the request path: see `compact-worker.ts`) and writes it as a stream of checksummed lines,
 * temp file, fsync, rename; then the journals the snapshot covers are deleted. A crash at any step
 * leaves a readable state. A record that cannot be read back (torn last line, bad checksum) is
 * skipped and counted: its boundary is then unknown, and a post for it resolves `unverified`
 * (`pre_snapshot_missing`) — never `preserved`.
 *
 * A write that fails (a full disk) is never reported durable: the journal is truncated back to its
 * last durable length, the records stay buffered in order, {@link PendingStore.failure} is set
 * (the service answers 503) and the write is retried until it succeeds, so the service recovers by
 * itself once space returns. Short writes are written to their end.
 *
 * Files are 0600 in a 0700 directory; they hold digests and opaque ids only (what the spans carry).
 */
import * as crypto from 'node:crypto';
import {
  closeSync,
  constants,
  createReadStream,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  statSync,
} from 'node:fs';
import { type FileHandle, open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { JournalLines, lineChecksum } from './journal-line.js';
import { releaseLock, takeLock } from './state-lock.js';

/**
 * One record: an input of the correlator, in the order it was applied, or the keys of resolved
 * verdicts whose spans were delivered (or dropped for good): see `rebuild.ts`.
 */
export type StateRecord =
  | { op: 'observe'; at: number; event: unknown }
  | { op: 'expire'; at: number }
  | { op: 'settled'; at: number; keys: string[] };

/** A record with its sequence number. */
export type SequencedRecord = StateRecord & { seq: number };

/**
 * One line of a snapshot: `k` names the list it belongs to (e.g. `boundaries`), `v` is one item.
 * Read back, the items are grouped into arrays by `k`, beside the header's `meta` fields.
 */
export interface SnapshotEntry {
  k: string;
  v: unknown;
}

/** What a snapshot holds: its header fields and its entries. */
export interface SnapshotSource {
  meta: Readonly<Record<string, unknown>>;
  entries: Iterable<SnapshotEntry>;
}

/** What {@link PendingStore.open} found on disk. */
export interface Recovered {
  /**
   * The snapshot as one object (header `meta` fields, and one array per entry kind), or undefined
   * when there was none (or it was unreadable).
   */
  snapshot: Record<string, unknown> | undefined;
  /** Journal records after the snapshot, in order. */
  records: SequencedRecord[];
  /** Records or files that could not be read back (each one counted, none fatal). */
  problems: string[];
}

/** Options of {@link PendingStore.open}. */
export interface PendingStoreOptions {
  /** The state directory (created 0700 when missing). */
  dir: string;
  /** Start a new journal and write a snapshot once the journal is this large (bytes). */
  compactAfterBytes: number;
  /**
   * Writes the snapshot at sequence number `seq` from the durable files alone (with
   * {@link readState} and {@link writeSnapshot}), off the request path. Without it the journal
   * is only compacted at {@link PendingStore.close}.
   */
  snapshotAt?: (dir: string, seq: number) => Promise<void>;
  /** How often a failed journal write is retried, ms. Default 1000. */
  retryIntervalMs?: number;
}

const SNAPSHOT_FILE = 'pending.snapshot.json';
const JOURNAL_PATTERN = /^journal-(\d+)\.jsonl$/;
/** Format 1: the whole snapshot on one line (read only). Format 2: one line per entry. */
const FORMAT_V1 = 'agent-continuity/serve-pending@1';
const FORMAT = 'agent-continuity/serve-pending@2';
/** Bytes of snapshot lines serialized before the writer yields to the event loop and writes them. */
const SNAPSHOT_CHUNK_BYTES = 1024 * 1024;
/**
 * A snapshot written while the journal takes requests is flushed to disk every this many bytes,
 * not only at its end. Why: on ext4 (`data=ordered`) the journal's `O_DSYNC` write commits the
 * file system's journal, and that commit first writes out the data blocks other files have
 * waiting. A background snapshot of a million boundaries left hundreds of MiB waiting, and one
 * journal write took 188 ms behind its final flush (bench section 3, traced): the one request of
 * 500 over the 100 ms bound. Flushed every 2 MiB, the longest journal write during the same run
 * was 47 ms (8 MiB: 78 ms), and the snapshot took about as long.
 */
export const SNAPSHOT_SYNC_BYTES = 2 * 1024 * 1024;

/** JSON with bigints (span times in ns) kept exact: `{"$n":"123"}`. */
function stringify(value: unknown): string {
  // A replacer costs a call per value, most of the journal's CPU; the bigints of a record are its
  // own fields or its event's (`timeNs`), so those two levels are converted first and the rest
  // written without one. A bigint deeper down makes JSON.stringify throw: then the replacer.
  try {
    return JSON.stringify(exactBigints(value, 2));
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
  }
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? { $n: v.toString() } : v));
}

/** `value` with the bigints of its first `depth` levels of plain objects written as `{"$n": "…"}`. */
function exactBigints(value: unknown, depth: number): unknown {
  if (typeof value === 'bigint') return { $n: value.toString() };
  if (depth === 0 || value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  if (Object.getPrototypeOf(value) !== Object.prototype) return value;
  let out: Record<string, unknown> | undefined;
  // for…in, not Object.entries: no array of pairs per object (a record's event has a dozen fields).
  const record = value as Record<string, unknown>;
  for (const k in record) {
    if (!Object.hasOwn(record, k)) continue;
    const v = record[k];
    const w = exactBigints(v, depth - 1);
    if (w === v) continue;
    out ??= { ...record };
    out[k] = w;
  }
  return out ?? value;
}

/**
 * A line's JSON with its bigints back (`{"$n": "<digits>"}` objects, see {@link stringify}).
 * Parsed plainly and then walked once, children before their parent, as a reviver would visit
 * them: a reviver is called for every value of every record and made reading the state back five
 * times slower (a background snapshot reads tens of thousands of records).
 */
function parse(text: string): unknown {
  return restoreBigints(JSON.parse(text));
}

const DIGITS = /^-?\d+$/;

function restoreBigints(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const item = v[i];
      if (item !== null && typeof item === 'object') v[i] = restoreBigints(item);
    }
    return v;
  }
  const o = v as Record<string, unknown>;
  let keys = 0;
  for (const k of Object.keys(o)) {
    keys++;
    const child = o[k];
    if (child === null || typeof child !== 'object') continue;
    const restored = restoreBigints(child);
    // An own data property, as a reviver's result is set (never through a `__proto__` setter).
    if (restored !== child)
      Object.defineProperty(o, k, { value: restored, writable: true, enumerable: true, configurable: true });
  }
  if (keys === 1 && typeof o.$n === 'string' && Object.hasOwn(o, '$n') && DIGITS.test(o.$n))
    return BigInt(o.$n);
  return o;
}

/** One-shot hashing (`crypto.hash`, Node 20.12 and later) costs half a Hash object per line. */
const hashOnce = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** The checksum lines carried before CRC-32: the first 16 hex digits of a SHA-256 (read only). */
function legacyChecksum(text: string): string {
  const hex = hashOnce
    ? hashOnce('sha256', text, 'hex')
    : crypto.createHash('sha256').update(text).digest('hex');
  return hex.slice(0, 16);
}

function fsyncDir(dir: string): void {
  // A rename or a new file is durable only once its directory entry is.
  const fd = openSync(dir, constants.O_RDONLY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * How the journal is opened: appending, and where the platform has it with `O_DSYNC`, so that a
 * write returns once its bytes are on disk, as a write and an `fdatasync` would (POSIX's
 * synchronized I/O data integrity). Why: each file operation's completion waits for the event loop
 * to finish what it is doing; under load (a compaction request takes about 4 ms of it) a write and
 * then an `fdatasync` waited twice, 8.6 ms against 4.3 ms measured, though the disk took under
 * 1 ms. Without `O_DSYNC` (Windows) each write is followed by an `fdatasync`.
 */
const JOURNAL_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (constants.O_DSYNC ?? 0);
const JOURNAL_DSYNC = constants.O_DSYNC !== undefined;

/** Writes all of `buf`: a write may take fewer bytes than asked (a disk filling up). */
async function writeFully(fh: FileHandle, buf: Buffer): Promise<void> {
  let off = 0;
  while (off < buf.length) {
    const { bytesWritten } = await fh.write(buf, off, buf.length - off);
    if (bytesWritten <= 0) {
      throw Object.assign(new Error('the write made no progress'), { code: 'ENOSPC' });
    }
    off += bytesWritten;
  }
}

function errorCode(e: unknown): string {
  return (e as NodeJS.ErrnoException).code ?? (e as Error).message;
}

/**
 * The journal and snapshot of one service instance. Records are assigned sequence numbers
 * synchronously ({@link record}), written and fsynced in groups in the background, and
 * {@link durable} tells when a given record is on disk.
 */
export class PendingStore {
  private readonly _dir: string;
  private readonly _compactAfter: number;
  private readonly _snapshotAt: PendingStoreOptions['snapshotAt'];
  private readonly _retryMs: number;
  private _seq: number;
  private _durableSeq: number;
  private _journal: FileHandle | undefined;
  /** Bytes of the journal file known durable (a failed write is truncated back to this). */
  private _journalBytes = 0;
  /** Lines recorded and not yet written (see `journal-line.ts`). */
  private readonly _lines = new JournalLines();
  private _bufferLastSeq = 0;
  private _writing: Promise<void> | undefined;
  private _kickQueued = false;
  private _waiters: Array<{ seq: number; resolve: () => void; reject: (e: Error) => void }> = [];
  private _failed: Error | undefined;
  private _retry: NodeJS.Timeout | undefined;
  private _compaction: Promise<void> | undefined;
  private _closed = false;

  private constructor(options: PendingStoreOptions, seq: number) {
    this._dir = options.dir;
    this._compactAfter = options.compactAfterBytes;
    this._snapshotAt = options.snapshotAt;
    this._retryMs = options.retryIntervalMs ?? 1000;
    this._seq = seq;
    this._durableSeq = seq;
  }

  /**
   * Opens (creating) the state directory, takes its lock, and reads back what is there.
   * Throws `StateDirLockedError` (`state-lock.ts`) when another live process holds the directory.
   */
  static async open(options: PendingStoreOptions): Promise<{ store: PendingStore; recovered: Recovered }> {
    mkdirSync(options.dir, { recursive: true, mode: 0o700 });
    takeLock(options.dir);
    const recovered = await readState(options.dir);
    const lastSeq = recovered.records.at(-1)?.seq ?? recovered.snapshotSeq;
    const store = new PendingStore(options, lastSeq);
    await store._openJournal(lastSeq + 1);
    return {
      store,
      recovered: { snapshot: recovered.snapshot, records: recovered.records, problems: recovered.problems },
    };
  }

  /** The last sequence number assigned. */
  get seq(): number {
    return this._seq;
  }

  /** The journal cannot be written now (e.g. the disk is full); cleared once a retry succeeds. */
  get failure(): Error | undefined {
    return this._failed;
  }

  /** Appends a record (already applied to the correlator, in this order) and returns its sequence number. */
  record(record: StateRecord): number {
    if (this._closed) throw new Error('pending state store is closed');
    const seq = ++this._seq;
    this._lines.append(record, seq, stringify);
    this._bufferLastSeq = seq;
    // The write starts once the caller's synchronous run of records is over (a request records
    // all its events in one go), so they share one synchronous write.
    if (!this._kickQueued) {
      this._kickQueued = true;
      queueMicrotask(() => {
        this._kickQueued = false;
        this._kick();
      });
    }
    return seq;
  }

  /** Resolves once every record up to `seq` is fsynced; rejects while the disk write fails. */
  durable(seq: number): Promise<void> {
    if (seq <= this._durableSeq) return Promise.resolve();
    if (this._failed) return Promise.reject(this._failed);
    return new Promise((resolve, reject) => this._waiters.push({ seq, resolve, reject }));
  }

  /**
   * Writes everything buffered, then a final snapshot of `final` (the live state: nothing changes
   * it any more), and releases the lock. Safe to call twice.
   */
  async close(final?: SnapshotSource): Promise<void> {
    if (this._closed) return;
    this._closed = true;
    clearTimeout(this._retry);
    await this._compaction;
    await this._flush();
    if (final) {
      // Written even when the journal could not be: the snapshot alone then holds the state.
      await writeSnapshot(this._dir, this._seq, final);
      await this._journal?.close();
      this._journal = undefined;
      removeJournalsBefore(this._dir, this._seq + 1);
      await this._openJournal(this._seq + 1);
    }
    await this._journal?.close();
    this._journal = undefined;
    releaseLock(this._dir);
  }

  private _kick(): void {
    if (this._writing || this._lines.length === 0 || this._failed) return;
    this._writing = this._writeLoop().finally(() => {
      this._writing = undefined;
      if (this._lines.length > 0 && !this._failed) this._kick();
    });
  }

  /** Waits for the writer; one more attempt when the journal had failed. */
  private async _flush(): Promise<void> {
    // Records whose write is still queued for the microtask go now.
    this._kick();
    while (this._writing) await this._writing;
    if (this._failed && this._lines.length > 0) {
      this._failed = undefined;
      this._kick();
      while (this._writing) await this._writing;
    }
  }

  /** Group commit: everything buffered goes in one write (`O_DSYNC`, else a write and an fdatasync). */
  private async _writeLoop(): Promise<void> {
    while (this._lines.length > 0 && !this._failed) {
      const lastSeq = this._bufferLastSeq;
      const buf = this._lines.take();
      try {
        await writeFully(this._journal!, buf);
        if (!JOURNAL_DSYNC) await this._journal!.datasync();
      } catch (e) {
        this._fail(buf, e);
        return;
      }
      this._lines.release();
      this._journalBytes += buf.length;
      this._durableSeq = lastSeq;
      const ready = this._waiters.filter((w) => w.seq <= lastSeq);
      this._waiters = this._waiters.filter((w) => w.seq > lastSeq);
      for (const w of ready) w.resolve();
      if (
        this._journalBytes >= this._compactAfter &&
        !this._compaction &&
        this._snapshotAt &&
        !this._closed
      ) {
        await this._startCompaction();
      }
    }
  }

  /**
   * A write failed: nothing of it counts. Its lines go back in front of those recorded since (in order),
   * the file is cut back to its durable length (a torn tail would corrupt the next record), the
   * waiters are refused, and the write is retried later.
   */
  private _fail(unwritten: Buffer, e: unknown): void {
    this._lines.restore(unwritten);
    this._failed = new Error(`cannot write the pending-state journal in ${this._dir}: ${errorCode(e)}`);
    for (const w of this._waiters) w.reject(this._failed);
    this._waiters = [];
    this._scheduleRetry();
  }

  private _scheduleRetry(): void {
    if (this._closed) return;
    clearTimeout(this._retry);
    this._retry = setTimeout(() => void this._retryWrite(), this._retryMs);
    this._retry.unref();
  }

  private async _retryWrite(): Promise<void> {
    if (this._closed || this._writing) return;
    try {
      await this._journal!.truncate(this._journalBytes);
    } catch {
      this._scheduleRetry();
      return;
    }
    this._failed = undefined;
    this._kick();
  }

  /**
   * Switches to a new journal at the last durable sequence number S, then lets the snapshot
   * writer build the snapshot at S in the background; the journals it covers go once it is in
   * place. Records after S (buffered now) go to the new journal.
   */
  private async _startCompaction(): Promise<void> {
    const seq = this._durableSeq;
    const old = this._journal!;
    await this._openJournal(seq + 1);
    await old.close();
    const started = seq + 1;
    this._compaction = this._snapshotAt!(this._dir, seq)
      .then(() => removeJournalsBefore(this._dir, started))
      .catch(() => {
        // The journals stay: recovery replays them from the previous snapshot. Tried again at
        // the next threshold.
      })
      .finally(() => {
        this._compaction = undefined;
      });
  }

  private async _openJournal(startSeq: number): Promise<void> {
    const path = join(this._dir, `journal-${String(startSeq).padStart(12, '0')}.jsonl`);
    this._journal = await open(path, JOURNAL_FLAGS, 0o600);
    this._journalBytes = (await this._journal.stat()).size;
    fsyncDir(this._dir);
  }
}

/** Deletes the journal files that start before `startSeq` (a snapshot covers them). */
function removeJournalsBefore(dir: string, startSeq: number): void {
  for (const f of readdirSync(dir)) {
    const m = JOURNAL_PATTERN.exec(f);
    if (m && Number(m[1]) < startSeq) rmSync(join(dir, f), { force: true });
  }
}

/**
 * Writes the snapshot at `seq`: a header line, one checksummed line per entry, and a trailer with
 * the entry count, to a temp file (fsynced, renamed, directory fsynced). Entries are serialized
 * in chunks with the event loop free between them, so memory stays at a chunk and the process
 * keeps serving while a large snapshot is written.
 */
export async function writeSnapshot(
  dir: string,
  seq: number,
  source: SnapshotSource,
  /** Flush to disk every this many bytes ({@link SNAPSHOT_SYNC_BYTES} while requests go on). Default: only at the end. */
  syncEveryBytes = Number.POSITIVE_INFINITY,
): Promise<number> {
  const tmp = join(dir, `${SNAPSHOT_FILE}.tmp`);
  const fh = await open(tmp, 'w', 0o600);
  let written = 0;
  try {
    const lines = new JournalLines(SNAPSHOT_CHUNK_BYTES + 64 * 1024);
    let unsynced = 0;
    const flush = async () => {
      const chunk = lines.take();
      await writeFully(fh, chunk);
      lines.release();
      unsynced += chunk.length;
      if (unsynced >= syncEveryBytes) {
        await fh.datasync();
        unsynced = 0;
      }
    };
    lines.appendJson(stringify({ format: FORMAT, seq, meta: source.meta }));
    let count = 0;
    for (const entry of source.entries) {
      lines.appendJson(stringify({ k: entry.k, v: entry.v }));
      count++;
      // Written a chunk at a time, with the event loop free between chunks.
      if (lines.length >= SNAPSHOT_CHUNK_BYTES) await flush();
    }
    lines.appendJson(stringify({ end: count }));
    await flush();
    await fh.sync();
    written = count;
  } finally {
    await fh.close();
  }
  await rename(tmp, join(dir, SNAPSHOT_FILE));
  fsyncDir(dir);
  return written;
}

function readChecked(line: string): unknown | undefined {
  // `<8 hex CRC-32> <json>`, or `<16 hex SHA-256 prefix> <json>` as lines were written before.
  const space = line.indexOf(' ');
  if (space !== 8 && space !== 16) return undefined;
  const json = line.slice(space + 1);
  const sum = space === 8 ? lineChecksum(json) : legacyChecksum(json);
  if (sum !== line.slice(0, space)) return undefined;
  try {
    return parse(json);
  } catch {
    return undefined;
  }
}

function isRecord(v: unknown): v is SequencedRecord {
  if (v === null || typeof v !== 'object') return false;
  const r = v as Record<string, unknown>;
  if (!Number.isSafeInteger(r.seq) || typeof r.at !== 'number') return false;
  if (r.op === 'settled') return Array.isArray(r.keys) && r.keys.every((k) => typeof k === 'string');
  return r.op === 'expire' || (r.op === 'observe' && 'event' in r);
}

/** Reads a file line by line without holding it as one string (a snapshot can be gigabytes). */
async function* lines(path: string): AsyncGenerator<string> {
  const rl = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  for await (const line of rl) yield line;
}

/** Whether a file ends with a newline (else its last line is torn). */
function endsWithNewline(path: string, size: number): boolean {
  const fd = openSync(path, 'r');
  try {
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, size - 1);
    return b[0] === 0x0a;
  } finally {
    closeSync(fd);
  }
}

async function readSnapshot(
  dir: string,
  problems: string[],
): Promise<{ snapshot: Record<string, unknown> | undefined; seq: number }> {
  const path = join(dir, SNAPSHOT_FILE);
  try {
    statSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
      problems.push(`snapshot unreadable (${errorCode(e)})`);
    return { snapshot: undefined, seq: 0 };
  }
  const bad = () => {
    problems.push('snapshot failed its checksum or format check; its boundaries are unknown');
    return { snapshot: undefined, seq: 0 };
  };
  let header: { format?: unknown; seq?: unknown; meta?: unknown; pending?: unknown } | undefined;
  let snapshot: Record<string, unknown> | undefined;
  let expected = -1;
  let count = 0;
  let ended = false;
  for await (const line of lines(path)) {
    if (line === '') continue;
    const doc = readChecked(line) as Record<string, unknown> | undefined;
    if (doc === undefined || ended) return bad();
    if (header === undefined) {
      header = doc;
      if (header.format === FORMAT_V1 && Number.isSafeInteger(header.seq)) {
        return { snapshot: header.pending as Record<string, unknown>, seq: header.seq as number };
      }
      if (header.format !== FORMAT || !Number.isSafeInteger(header.seq)) return bad();
      snapshot = { ...(header.meta as Record<string, unknown>) };
      continue;
    }
    if (typeof doc.end === 'number') {
      expected = doc.end;
      ended = true;
      continue;
    }
    if (typeof doc.k !== 'string' || !('v' in doc)) return bad();
    const list = snapshot![doc.k] ?? [];
    if (!Array.isArray(list)) return bad();
    list.push(doc.v);
    snapshot![doc.k] = list;
    count++;
  }
  if (header === undefined || !ended || expected !== count) return bad();
  return { snapshot, seq: header.seq as number };
}

/** Options of {@link readState}. */
export interface ReadStateOptions {
  /** Read only records up to this sequence number (the journal after it may be growing). */
  uptoSeq?: number;
}

/**
 * Reads the snapshot and the journal records after it. Never throws for damaged content: what
 * cannot be read is named in `problems`.
 */
export async function readState(
  dir: string,
  options: ReadStateOptions = {},
): Promise<Recovered & { snapshotSeq: number }> {
  const upto = options.uptoSeq ?? Number.POSITIVE_INFINITY;
  const problems: string[] = [];
  const { snapshot, seq: snapshotSeq } = await readSnapshot(dir, problems);
  const journals = readdirSync(dir)
    .map((f) => ({ f, m: JOURNAL_PATTERN.exec(f) }))
    .filter((x) => x.m !== null && Number(x.m[1]) <= upto)
    .sort((a, b) => Number(a.m![1]) - Number(b.m![1]));
  const records: SequencedRecord[] = [];
  let lastSeq = snapshotSeq;
  for (const { f } of journals) {
    const path = join(dir, f);
    const size = statSync(path).size;
    if (size === 0) continue;
    // The last line is torn when the process died mid-write (no final newline).
    const torn = !endsWithNewline(path, size);
    // Each line is read once the next one is there (the last one may be torn): the journal is
    // never held as lines, only as the records read from it.
    let line: string | undefined;
    let n = 0;
    const take = (text: string) => {
      n++;
      const rec = readChecked(text);
      if (!isRecord(rec)) {
        problems.push(`${f}: record ${n} failed its checksum or format check`);
        return;
      }
      if (rec.seq <= lastSeq || rec.seq > upto) return;
      records.push(rec);
      lastSeq = rec.seq;
    };
    for await (const next of lines(path)) {
      if (line !== undefined) take(line);
      line = next;
    }
    if (line !== undefined) {
      if (torn) problems.push(`${f}: last record incomplete (the process stopped mid-write)`);
      else take(line);
    }
  }
  return { snapshot, records, problems, snapshotSeq };
}
