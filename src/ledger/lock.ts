/**
 * The exclusive lock that serializes appends across processes: a lock file created with O_EXCL
 * holding the owner's pid, host, start time and a random token.
 *
 * Stale-lock recovery: a lock is stale when its owner is a dead process on this host, or when it
 * is older than `staleMs` (a hung or foreign owner), or when it is still empty 2 s after it was
 * created (the owner died between creating and writing it). A lock, or an empty lock's file time,
 * dated more than a few seconds in the future is stale too: no clock gives that to a lock taken
 * now, and without the rule such a lock (a clock set back, or a file written by hand) would block
 * every writer forever.
 *
 * The lock file is never followed as a symbolic link: a link there is refused with an error
 * naming it. Breaking is done under a second,
 * short-lived `<lock>.break` file, and the breaker re-reads the lock under it and removes it only
 * if it is still the very lock judged stale: two processes that both saw a stale lock can never
 * remove a fresh lock that a third process took in between.
 *
 * Imports only node built-ins.
 */
import {
  closeSync,
  constants,
  lstatSync,
  openSync,
  readFileSync,
  type Stats,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileError, LedgerFileError, openRegularNoFollow } from './files.js';
import { FILE_MODE } from './types.js';

/** Lock timing. */
export interface LockOptions {
  /** Give up after waiting this long, in milliseconds. Default 10 000. */
  timeoutMs?: number;
  /**
   * A lock older than this is stale even if its owner is alive (hung, or on another host),
   * in milliseconds. Default 30 000; an append holds the lock for milliseconds.
   */
  staleMs?: number;
}

/** Default {@link LockOptions.timeoutMs}. */
export const DEFAULT_LOCK_TIMEOUT_MS = 10_000;
/** Default {@link LockOptions.staleMs}. */
export const DEFAULT_STALE_LOCK_MS = 30_000;
// Writing a few bytes into a file just created never takes this long: an empty lock this old is dead.
const EMPTY_LOCK_STALE_MS = 2_000;
// The break file is held for microseconds; one this old belongs to a process that died holding it.
const BREAK_STALE_MS = 2_000;
/** Most a lock's time may be ahead of this clock (another process's clock, a file system's). */
export const MAX_LOCK_CLOCK_SKEW_MS = 5_000;

/** How long ago `at` was, or Infinity when it lies beyond the allowed skew in the future. */
function ageMs(now: number, at: number): number {
  const age = now - at;
  return age < -MAX_LOCK_CLOCK_SKEW_MS ? Number.POSITIVE_INFINITY : age;
}

/** The lock could not be taken in time. */
export class LockTimeoutError extends Error {
  readonly lockPath: string;
  constructor(lockPath: string, waitedMs: number) {
    super(
      `lock ${lockPath}: still held by another process after ${waitedMs} ms; if no continuity process is running, remove the file`,
    );
    this.name = 'LockTimeoutError';
    this.lockPath = lockPath;
  }
}

interface LockInfo {
  pid: number;
  host: string;
  at: number;
  token: string;
}

function parseInfo(raw: string): LockInfo | undefined {
  try {
    const o = JSON.parse(raw) as Partial<LockInfo>;
    if (typeof o.pid === 'number' && typeof o.host === 'string' && typeof o.at === 'number') {
      return o as LockInfo;
    }
  } catch {
    // An empty or half-written lock: judged by its age below.
  }
  return undefined;
}

/** True when `pid` names a live process (EPERM means alive but not ours). */
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isStale(raw: string, st: Stats, staleMs: number, now: number): boolean {
  const info = parseInfo(raw);
  if (!info) return ageMs(now, st.mtimeMs) > EMPTY_LOCK_STALE_MS;
  if (info.host === hostname() && info.pid !== process.pid && !pidAlive(info.pid)) return true;
  return ageMs(now, info.at) > staleMs;
}

function readLock(path: string): { raw: string; st: Stats } | undefined {
  let fd: number;
  try {
    fd = openRegularNoFollow(path, constants.O_RDONLY);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if ((e as NodeJS.ErrnoException).code === 'ELOOP' || isLink(path)) {
      throw new LedgerFileError(
        path,
        'take the lock',
        'ELOOP',
        'the lock file is a symbolic link, and the ledger does not follow links; remove it',
      );
    }
    throw fileError(path, 'read the lock', e);
  }
  try {
    const st = lstatSync(path);
    return { raw: readFileSync(fd, 'utf8'), st };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw fileError(path, 'read the lock', e);
  } finally {
    closeSync(fd);
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

function unlinkQuiet(path: string): void {
  try {
    unlinkSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/** Removes the lock at `path` if, re-read under the break file, it is still the stale `seen`. */
function breakStale(path: string, seen: { raw: string; st: Stats }, staleMs: number): void {
  const brk = `${path}.break`;
  let fd: number;
  try {
    fd = openSync(brk, 'wx', FILE_MODE);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw fileError(brk, 'create', e);
    const held = readLock(brk);
    if (held && ageMs(Date.now(), held.st.mtimeMs) > BREAK_STALE_MS) unlinkQuiet(brk);
    return;
  }
  try {
    const now = readLock(path);
    if (
      now &&
      now.raw === seen.raw &&
      now.st.ino === seen.st.ino &&
      isStale(now.raw, now.st, staleMs, Date.now())
    ) {
      unlinkSync(path);
    }
  } finally {
    closeSync(fd);
    unlinkQuiet(brk);
  }
}

let tokenCounter = 0;

/** A held lock. Release it exactly once, in a `finally`. */
export class LedgerLock {
  /** The lock file. */
  readonly path: string;
  private readonly _content: string;
  private _held = true;

  private constructor(path: string, content: string) {
    this.path = path;
    this._content = content;
  }

  /** One attempt: takes the lock, or breaks a stale one and reports failure so the caller retries. */
  private static _try(path: string, staleMs: number): LedgerLock | undefined {
    const content = JSON.stringify({
      pid: process.pid,
      host: hostname(),
      at: Date.now(),
      // Unique per attempt; not a secret, so no crypto is needed.
      token: `${(tokenCounter++).toString(36)}.${Math.random().toString(36).slice(2)}`,
    });
    let fd: number;
    try {
      // O_EXCL never follows a link: an existing link at the path is EEXIST, refused by readLock.
      fd = openSync(path, 'wx', FILE_MODE);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw fileError(path, 'create the lock', e);
      const seen = readLock(path);
      if (seen && isStale(seen.raw, seen.st, staleMs, Date.now())) breakStale(path, seen, staleMs);
      return undefined;
    }
    try {
      writeSync(fd, content);
    } catch (e) {
      closeSync(fd);
      unlinkQuiet(path);
      throw fileError(path, 'write the lock', e);
    }
    closeSync(fd);
    return new LedgerLock(path, content);
  }

  /** Takes the lock, waiting without blocking the event loop. Rejects with {@link LockTimeoutError}. */
  static async acquire(path: string, options: LockOptions = {}): Promise<LedgerLock> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    const staleMs = options.staleMs ?? DEFAULT_STALE_LOCK_MS;
    const start = Date.now();
    for (let attempt = 0; ; attempt++) {
      const lock = LedgerLock._try(path, staleMs);
      if (lock) return lock;
      const waited = Date.now() - start;
      if (waited >= timeoutMs) throw new LockTimeoutError(path, waited);
      await sleep(backoffMs(attempt));
    }
  }

  /** Takes the lock, sleeping synchronously between attempts (for short-lived hook processes). */
  static acquireSync(path: string, options: LockOptions = {}): LedgerLock {
    const timeoutMs = options.timeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    const staleMs = options.staleMs ?? DEFAULT_STALE_LOCK_MS;
    const start = Date.now();
    for (let attempt = 0; ; attempt++) {
      const lock = LedgerLock._try(path, staleMs);
      if (lock) return lock;
      const waited = Date.now() - start;
      if (waited >= timeoutMs) throw new LockTimeoutError(path, waited);
      sleepSync(backoffMs(attempt));
    }
  }

  /** Releases the lock if it is still ours (a lock broken as stale and retaken is left alone). */
  release(): void {
    if (!this._held) return;
    this._held = false;
    const now = readLock(this.path);
    if (now && now.raw === this._content) unlinkQuiet(this.path);
  }
}

// Short, jittered waits: an append holds the lock for about one fsync (a few ms), so a waiter that
// sleeps longer than that leaves the lock idle; polling costs one failed open and one small read.
function backoffMs(attempt: number): number {
  return Math.min(0.5 + attempt * 0.5, 4) * (0.5 + Math.random());
}

const sleepCell = new Int32Array(new SharedArrayBuffer(4));
function sleepSync(ms: number): void {
  Atomics.wait(sleepCell, 0, 0, ms);
}
