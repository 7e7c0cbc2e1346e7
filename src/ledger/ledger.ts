/**
 * The ledger: an append-only, hash-chained JSON Lines file outside the conversation, shared by
 * many short-lived processes. This class is the full write path (validation with the schemas and
 * the leak guard, then `append.ts`); the lean read path is `latest.ts`.
 *
 * Never pass a raw decision value, prompt, response, tool payload, transcript path, compaction
 * summary or key to `append`: the schemas have no field for them and the guard refuses strings
 * that look like paths, secrets or free text, with nothing written. Use `capture.ts` to turn
 * values into digests first.
 */
import { closeSync, constants, fchmodSync, fstatSync } from 'node:fs';
import { InputError, problemsFromZod } from '../decision/problems.js';
import { prepareLocked, type WriteTarget, writeLocked } from './append.js';
import type { ChainKey } from './chain.js';
import type { ActivityEvidence, BoundaryEvidence } from './evidence.js';
import { assertRealDir, onFile, openNoFollow } from './files.js';
import { guardRecord } from './guard.js';
import { readAllLatestBoundaries, readLatestActivity, readLatestBoundary } from './latest.js';
import { LedgerLock, type LockOptions } from './lock.js';
import { ensureLedgerDir, sidecarPaths } from './paths.js';
import { type NewRecord, NewRecordSchema, type StoredRecord } from './records.js';
import type { Quarantined } from './tail.js';
import { FILE_MODE } from './types.js';

/** Options of {@link Ledger.open}. */
export interface LedgerOptions extends LockOptions {
  /** Chain key for an HMAC chain. Default none: plain SHA-256. */
  chainKey?: ChainKey | undefined;
}

/**
 * Validates a record for `append`: strict schema, then the leak guard. Returns the parsed record.
 * Throws {@link InputError} (source `ledger record`) naming every field at fault.
 */
export function validateRecord(record: unknown): NewRecord {
  const parsed = NewRecordSchema.safeParse(record);
  if (!parsed.success) throw new InputError('ledger record', problemsFromZod(parsed.error));
  const leaks = guardRecord(parsed.data);
  if (leaks.length > 0) {
    throw new InputError(
      'ledger record',
      leaks.map((l) => ({ path: l.path, message: l.message })),
    );
  }
  return parsed.data;
}

/** An open ledger. Cheap to open; every append takes the file lock for one write and one fsync. */
export class Ledger {
  /** The ledger file (absolute when it came from `resolveLedgerPath`). */
  readonly path: string;
  /** What opening repaired: a torn tail moved to the quarantine file, if any. */
  readonly quarantined: Quarantined | undefined;
  private readonly _target: WriteTarget;
  private readonly _lock: string;
  private readonly _lockOptions: LockOptions;
  private _queue: Promise<unknown> = Promise.resolve();
  private _closed = false;

  private constructor(path: string, fd: number, options: LedgerOptions) {
    const side = sidecarPaths(path);
    this.path = path;
    this._lock = side.lock;
    this._lockOptions = {
      ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
      ...(options.staleMs !== undefined && { staleMs: options.staleMs }),
    };
    this._target = {
      path,
      fd,
      quarantinePath: side.quarantine,
      indexDir: side.indexDir,
      headPath: side.head,
      chainKey: options.chainKey,
    };
    // Detect and quarantine a torn tail now, as the file is opened.
    const lock = LedgerLock.acquireSync(this._lock, this._lockOptions);
    try {
      this.quarantined = prepareLocked(this._target).quarantined;
    } finally {
      lock.release();
    }
  }

  /**
   * Opens (creating when absent, mode 0600, directory 0700) the ledger at `path`, moves a torn
   * tail to `<path>.quarantine` and brings the index up to date. Synchronous. Throws
   * `LedgerFileError` naming the file when the ledger, its directory or a side file is a
   * symbolic link (never followed), or cannot be opened.
   */
  static open(path: string, options: LedgerOptions = {}): Ledger {
    ensureLedgerDir(path);
    const fd = openNoFollow(path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT, FILE_MODE);
    try {
      // A ledger created by an older tool or a copy may be wider: it is ours, so narrow it.
      onFile(path, 'set the mode of', () => {
        if ((fstatSync(fd).mode & 0o077) !== 0) fchmodSync(fd, FILE_MODE);
      });
      assertRealDir(sidecarPaths(path).indexDir);
      return new Ledger(path, fd, options);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  /**
   * Appends one record (without `v`, `seq`, `prev`, `hash`) and resolves with the stored record
   * once it is fsynced. Rejects with {@link InputError} (nothing written) for a record that fails
   * the schema or the guard.
   */
  async append(record: NewRecord): Promise<StoredRecord> {
    const [stored] = await this.appendBatch([record]);
    return stored!;
  }

  /**
   * Appends several records with one lock, one write and one fsync, in order. All are validated
   * before anything is written.
   */
  appendBatch(records: readonly NewRecord[]): Promise<StoredRecord[]> {
    this._assertOpen();
    const valid = records.map((r) => validateRecord(r));
    // Serialize this process's appends so they queue here instead of polling the file lock.
    const run = this._queue.then(async () => {
      const lock = await LedgerLock.acquire(this._lock, this._lockOptions);
      try {
        return writeLocked(this._target, valid).stored as StoredRecord[];
      } finally {
        lock.release();
      }
    });
    this._queue = run.catch(() => undefined);
    return run;
  }

  /** Like {@link append}, blocking: for hook processes that exit right after. */
  appendSync(record: NewRecord): StoredRecord {
    this._assertOpen();
    const valid = validateRecord(record);
    const lock = LedgerLock.acquireSync(this._lock, this._lockOptions);
    try {
      return writeLocked(this._target, [valid]).stored[0] as StoredRecord;
    } finally {
      lock.release();
    }
  }

  /** The evidence of a session's latest boundary, or null (see `readLatestBoundary`). */
  latestBoundary(sessionId: string): BoundaryEvidence | null {
    return readLatestBoundary(this.path, sessionId);
  }

  /** A session's latest activity state, or null. */
  latestActivity(sessionId: string): ActivityEvidence | null {
    return readLatestActivity(this.path, sessionId);
  }

  /** Every session's latest boundary evidence (a full scan). */
  latestBoundaries(): BoundaryEvidence[] {
    return readAllLatestBoundaries(this.path);
  }

  /** Closes the file after pending appends finish. Safe to call twice. */
  async close(): Promise<void> {
    if (this._closed) return;
    this._closed = true;
    await this._queue;
    closeSync(this._target.fd);
  }

  private _assertOpen(): void {
    if (this._closed) throw new Error(`ledger ${this.path}: closed`);
  }
}
