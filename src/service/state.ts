/**
 * Durable pending state for `continuity serve`: boundaries waiting for their post observation
 * survive a restart, `kill -9` included.
 *
 * Design: the correlator is pure and deterministic, so its state is a function of its inputs. The
 * store keeps those inputs — every compaction event observed and every expiry tick — in an
 * append-only journal (one checksummed JSON line per record, `fdatasync` before the request that
 * carried them is answered), plus now and then a snapshot of `exportPending()` written to a temp
 * file, fsynced and renamed into place. Recovery loads the snapshot and replays the journal
 * records after it through a fresh correlator.
 *
 * Journal files are named by their first sequence number (`journal-<seq>.jsonl`); compaction
 * switches to a new file first, then writes the snapshot, then deletes the files the snapshot
 * covers, so a crash at any step leaves a readable state. A record that cannot be read back
 * (torn last line, bad checksum) is skipped and counted: its boundary is then unknown, and a post
 * for it resolves `unverified` (`pre_snapshot_missing`) — never `preserved`.
 *
 * Files are 0600 in a 0700 directory; they hold digests and opaque ids only (what the spans carry).
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';

/** One record: an input of the correlator, in the order it was applied. */
export type StateRecord = { op: 'observe'; at: number; event: unknown } | { op: 'expire'; at: number };

/** A record with its sequence number. */
export type SequencedRecord = StateRecord & { seq: number };

/** What {@link PendingStore.open} found on disk. */
export interface Recovered {
  /** The snapshot's `exportPending()` payload, or undefined when there was none (or it was unreadable). */
  snapshot: unknown;
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
}

const SNAPSHOT_FILE = 'pending.snapshot.json';
const LOCK_FILE = 'lock';
const JOURNAL_PATTERN = /^journal-(\d+)\.jsonl$/;
const FORMAT = 'agent-continuity/serve-pending@1';

/** JSON with bigints (span times in ns) kept exact: `{"$n":"123"}`. */
function stringify(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? { $n: v.toString() } : v));
}

function parse(text: string): unknown {
  return JSON.parse(text, (_k, v) => {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const keys = Object.keys(v);
      if (keys.length === 1 && keys[0] === '$n' && typeof v.$n === 'string' && /^-?\d+$/.test(v.$n)) {
        return BigInt(v.$n);
      }
    }
    return v;
  });
}

function checksum(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** A journal line: `<16 hex checksum> <json>\n`. */
function encodeLine(record: SequencedRecord): string {
  const json = stringify(record);
  return `${checksum(json)} ${json}\n`;
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

/** A state directory used by a live process. */
export class StateDirLockedError extends Error {
  override readonly name = 'StateDirLockedError';
}

/**
 * The journal and snapshot of one service instance. Records are assigned sequence numbers
 * synchronously ({@link record}), written and fsynced in groups in the background, and
 * {@link durable} tells when a given record is on disk.
 */
export class PendingStore {
  private readonly _dir: string;
  private readonly _compactAfter: number;
  private _seq: number;
  private _durableSeq: number;
  private _journal: FileHandle | undefined;
  private _journalBytes = 0;
  private _buffer: string[] = [];
  private _bufferLastSeq = 0;
  private _writing: Promise<void> | undefined;
  private _waiters: Array<{ seq: number; resolve: () => void; reject: (e: Error) => void }> = [];
  private _failed: Error | undefined;
  private _compacting = false;
  private _closed = false;
  /** Supplies the correlator's `exportPending()` when the journal is compacted. */
  private _exportPending: (() => unknown) | undefined;

  private constructor(options: PendingStoreOptions, seq: number) {
    this._dir = options.dir;
    this._compactAfter = options.compactAfterBytes;
    this._seq = seq;
    this._durableSeq = seq;
  }

  /**
   * Opens (creating) the state directory, takes its lock, and reads back what is there.
   * Throws {@link StateDirLockedError} when another live process holds the directory.
   */
  static async open(options: PendingStoreOptions): Promise<{ store: PendingStore; recovered: Recovered }> {
    mkdirSync(options.dir, { recursive: true, mode: 0o700 });
    takeLock(options.dir);
    const recovered = readState(options.dir);
    const lastSeq = recovered.records.at(-1)?.seq ?? recovered.snapshotSeq;
    const store = new PendingStore(options, lastSeq);
    await store._openJournal(lastSeq + 1);
    return {
      store,
      recovered: { snapshot: recovered.snapshot, records: recovered.records, problems: recovered.problems },
    };
  }

  /** Sets where compaction gets the state to snapshot (the correlator's `exportPending`). */
  setExporter(exportPending: () => unknown): void {
    this._exportPending = exportPending;
  }

  /** The last sequence number assigned. */
  get seq(): number {
    return this._seq;
  }

  /** Appends a record (already applied to the correlator, in this order) and returns its sequence number. */
  record(record: StateRecord): number {
    if (this._closed) throw new Error('pending state store is closed');
    const seq = ++this._seq;
    this._buffer.push(encodeLine({ ...record, seq }));
    this._bufferLastSeq = seq;
    this._kick();
    return seq;
  }

  /** Resolves once every record up to `seq` is fsynced; rejects when the disk write failed. */
  durable(seq: number): Promise<void> {
    if (this._failed) return Promise.reject(this._failed);
    if (seq <= this._durableSeq) return Promise.resolve();
    return new Promise((resolve, reject) => this._waiters.push({ seq, resolve, reject }));
  }

  /** Writes everything buffered, then a final snapshot, and releases the lock. Safe to call twice. */
  async close(): Promise<void> {
    if (this._closed) return;
    this._closed = true;
    await this._flush();
    if (!this._failed && this._exportPending) await this._compact();
    await this._journal?.close();
    this._journal = undefined;
    rmSync(join(this._dir, LOCK_FILE), { force: true });
  }

  private _kick(): void {
    if (this._writing || this._buffer.length === 0) return;
    this._writing = this._writeLoop().finally(() => {
      this._writing = undefined;
      if (this._buffer.length > 0 && !this._failed) this._kick();
    });
  }

  private async _flush(): Promise<void> {
    while (this._writing) await this._writing;
    if (this._buffer.length > 0 && !this._failed) {
      this._kick();
      await this._flush();
    }
  }

  /** Group commit: everything buffered goes in one write and one fdatasync. */
  private async _writeLoop(): Promise<void> {
    while (this._buffer.length > 0 && !this._failed) {
      const lines = this._buffer;
      const lastSeq = this._bufferLastSeq;
      this._buffer = [];
      const text = lines.join('');
      try {
        await this._journal!.write(text);
        await this._journal!.datasync();
      } catch (e) {
        this._failed = new Error(
          `cannot write the pending-state journal in ${this._dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
        );
        for (const w of this._waiters) w.reject(this._failed);
        this._waiters = [];
        return;
      }
      this._journalBytes += Buffer.byteLength(text);
      this._durableSeq = lastSeq;
      const ready = this._waiters.filter((w) => w.seq <= lastSeq);
      this._waiters = this._waiters.filter((w) => w.seq > lastSeq);
      for (const w of ready) w.resolve();
      if (this._journalBytes >= this._compactAfter && !this._compacting && !this._closed) {
        await this._compact();
      }
    }
  }

  /**
   * Snapshot at the current sequence number: new journal file first (records after the snapshot
   * go there), then the snapshot (temp file, fsync, rename, fsync dir), then old journals go.
   */
  private async _compact(): Promise<void> {
    if (!this._exportPending) return;
    this._compacting = true;
    try {
      // Everything assigned so far is applied to the correlator (records are appended after they
      // are applied), and everything buffered goes to the old file before it is switched.
      const pendingLines = this._buffer;
      this._buffer = [];
      if (pendingLines.length > 0) {
        const text = pendingLines.join('');
        await this._journal!.write(text);
        await this._journal!.datasync();
        this._durableSeq = this._bufferLastSeq;
        const ready = this._waiters.filter((w) => w.seq <= this._durableSeq);
        this._waiters = this._waiters.filter((w) => w.seq > this._durableSeq);
        for (const w of ready) w.resolve();
      }
      const seq = this._seq;
      const payload = this._exportPending();
      const old = this._journal!;
      await this._openJournal(seq + 1);
      await old.close();
      const json = stringify({ format: FORMAT, seq, pending: payload });
      const tmp = join(this._dir, `${SNAPSHOT_FILE}.tmp`);
      writeFileSync(tmp, `${checksum(json)} ${json}\n`, { mode: 0o600 });
      const fd = openSync(tmp, constants.O_RDONLY);
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, join(this._dir, SNAPSHOT_FILE));
      fsyncDir(this._dir);
      for (const f of readdirSync(this._dir)) {
        const m = JOURNAL_PATTERN.exec(f);
        if (m && Number(m[1]) <= seq) rmSync(join(this._dir, f), { force: true });
      }
    } finally {
      this._compacting = false;
    }
  }

  private async _openJournal(startSeq: number): Promise<void> {
    const path = join(this._dir, `journal-${String(startSeq).padStart(12, '0')}.jsonl`);
    this._journal = await open(path, 'a', 0o600);
    this._journalBytes = (await this._journal.stat()).size;
    fsyncDir(this._dir);
  }
}

function takeLock(dir: string): void {
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      fsyncSync(fd);
      closeSync(fd);
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
        throw new StateDirLockedError(
          `the state directory ${dir} is in use by process ${pid}: give each instance its own state.dir`,
        );
      }
      // A lock left by a process that is gone (kill -9): take it over.
      rmSync(path, { force: true });
    }
  }
  throw new StateDirLockedError(`cannot take the lock in ${dir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readChecked(line: string): unknown | undefined {
  const space = line.indexOf(' ');
  if (space !== 16) return undefined;
  const json = line.slice(17);
  if (checksum(json) !== line.slice(0, 16)) return undefined;
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
  return r.op === 'expire' || (r.op === 'observe' && 'event' in r);
}

function readState(dir: string): Recovered & { snapshotSeq: number } {
  const problems: string[] = [];
  let snapshot: unknown;
  let snapshotSeq = 0;
  let snapshotText: string | undefined;
  try {
    snapshotText = readFileSync(join(dir, SNAPSHOT_FILE), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
      problems.push(`snapshot unreadable (${(e as NodeJS.ErrnoException).code})`);
  }
  if (snapshotText !== undefined) {
    const doc = readChecked(snapshotText.replace(/\n$/, '')) as
      | { format?: unknown; seq?: unknown; pending?: unknown }
      | undefined;
    if (doc && doc.format === FORMAT && Number.isSafeInteger(doc.seq)) {
      snapshot = doc.pending;
      snapshotSeq = doc.seq as number;
    } else {
      problems.push('snapshot failed its checksum or format check; its boundaries are unknown');
    }
  }
  const journals = readdirSync(dir)
    .map((f) => ({ f, m: JOURNAL_PATTERN.exec(f) }))
    .filter((x) => x.m !== null)
    .sort((a, b) => Number(a.m![1]) - Number(b.m![1]));
  const records: SequencedRecord[] = [];
  let lastSeq = snapshotSeq;
  for (const { f } of journals) {
    const path = join(dir, f);
    if (statSync(path).size === 0) continue;
    const lines = readFileSync(path, 'utf8').split('\n');
    // The last element is '' after a final newline, or a torn line written when the process died.
    const torn = lines.pop();
    if (torn !== undefined && torn !== '')
      problems.push(`${f}: last record incomplete (the process stopped mid-write)`);
    lines.forEach((line, i) => {
      const rec = readChecked(line);
      if (!isRecord(rec)) {
        problems.push(`${f}: record ${i + 1} failed its checksum or format check`);
        return;
      }
      if (rec.seq <= lastSeq) return;
      records.push(rec);
      lastSeq = rec.seq;
    });
  }
  return { snapshot, records, problems, snapshotSeq };
}
