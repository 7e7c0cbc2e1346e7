/**
 * Opening the ledger's files, and the errors that name them.
 *
 * The ledger never follows a symbolic link: not at the ledger path, its lock, head, quarantine or
 * index files, nor at the directory that holds them. A link there would send the records, a torn
 * tail's repair (a truncate) or a lock to a file the link's author chose, so it is refused with an
 * error naming the link. Every file is opened with `O_NOFOLLOW`, which closes the race between a
 * check and the open for the file itself; the directory is checked with `lstat` first.
 *
 * Every I/O error the ledger raises is a {@link LedgerFileError}: it names the file, what was
 * being done, and the system's reason in words, never a record's content.
 *
 * Imports only node built-ins: the lean read path uses it.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';

const REASONS: Readonly<Record<string, string>> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EISDIR: 'is a directory',
  ENOTDIR: 'a part of the path is not a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOENT: 'no such file or directory',
  ELOOP: 'is a symbolic link',
  EIO: 'input/output error',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files in the system',
  EFBIG: 'file too large',
  ENAMETOOLONG: 'file name too long',
  EBUSY: 'resource busy',
};

/** The system's reason for an error code, in words (`ENOSPC` → `no space left on the device`). */
export function describeCode(code: string | undefined): string {
  return (code && REASONS[code]) ?? 'I/O error';
}

/** An I/O error on one of the ledger's files. The message names the file and the reason. */
export class LedgerFileError extends Error {
  /** The file the operation was on. */
  readonly file: string;
  /** The system error code (`ENOSPC`, `EISDIR`, …), or `ELOOP` for a refused link. */
  readonly code: string | undefined;
  constructor(file: string, action: string, code: string | undefined, detail?: string) {
    super(`${file}: cannot ${action}: ${detail ?? describeCode(code)}${code ? ` (${code})` : ''}`);
    this.name = 'LedgerFileError';
    this.file = file;
    this.code = code;
  }
}

const LINK_DETAIL =
  'is a symbolic link, and the ledger does not follow links (one could send its records or repairs to another file); give the real path';

const NOT_REGULAR_DETAIL =
  'is not a regular file (a FIFO, a device or a socket), and the ledger reads and writes only regular files (a read from one could block for ever); remove it';

/**
 * Opens `file` with `O_NOFOLLOW | O_NONBLOCK` and checks with `fstat` that what was opened is a
 * regular file: a FIFO at a ledger path (which would block the open or the read until a writer
 * came, holding a hook past its deadline), a device or a socket is closed and refused with a
 * {@link LedgerFileError} (`EFTYPE`). `O_NONBLOCK` changes nothing for a regular file.
 */
export function openRegularNoFollow(file: string, flags: number, mode?: number): number {
  const fd = openSync(file, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, mode);
  let kind: 'file' | 'dir' | 'other' = 'other';
  try {
    const st = fstatSync(fd);
    kind = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : 'other';
  } finally {
    if (kind !== 'file') closeSync(fd);
  }
  if (kind === 'dir') throw new LedgerFileError(file, 'open', 'EISDIR');
  if (kind === 'other') throw new LedgerFileError(file, 'open', 'EFTYPE', NOT_REGULAR_DETAIL);
  return fd;
}

/** Wraps an error thrown by an fs call on `file` into a {@link LedgerFileError} (kept as is if already one). */
export function fileError(file: string, action: string, e: unknown): LedgerFileError {
  if (e instanceof LedgerFileError) return e;
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return new LedgerFileError(file, action, code, code === 'ELOOP' ? LINK_DETAIL : undefined);
}

/** True for an error raised by the system for a file operation (it has an `E…` code). */
export function isSystemError(e: unknown): e is NodeJS.ErrnoException {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return e instanceof Error && typeof code === 'string' && /^E[A-Z0-9]+$/.test(code);
}

/** Runs `fn`, turning a system error it throws into a {@link LedgerFileError} about `file`. */
export function onFile<T>(file: string, action: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof LedgerFileError || !isSystemError(e)) throw e;
    throw fileError(file, action, e);
  }
}

/** Throws a {@link LedgerFileError} when `dir` is a symbolic link; a missing directory passes. */
export function assertRealDir(dir: string): void {
  let isLink: boolean;
  try {
    isLink = lstatSync(dir).isSymbolicLink();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw fileError(dir, 'inspect', e);
  }
  if (isLink) {
    throw new LedgerFileError(
      dir,
      'use as the ledger directory',
      'ELOOP',
      'the directory is a symbolic link, and the ledger does not follow links; give the real path',
    );
  }
}

/**
 * Opens `file` without following a link at it (`O_NOFOLLOW`), after checking that its directory
 * is not a link. `flags` are `fs.constants` flags. Throws {@link LedgerFileError}; with
 * `missingOk`, returns undefined for a file that does not exist.
 */
export function openNoFollow(file: string, flags: number, mode?: number, missingOk?: false): number;
export function openNoFollow(
  file: string,
  flags: number,
  mode: number | undefined,
  missingOk: true,
): number | undefined;
export function openNoFollow(
  file: string,
  flags: number,
  mode?: number,
  missingOk = false,
): number | undefined {
  assertRealDir(dirname(file));
  try {
    return openRegularNoFollow(file, flags, mode);
  } catch (e) {
    if (missingOk && (e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw fileError(file, flags & (constants.O_WRONLY | constants.O_RDWR) ? 'open for writing' : 'open', e);
  }
}

/** Reads a small side file as latin1 text without following a link; undefined when it does not exist. */
export function readSideFile(file: string): string | undefined {
  let fd: number;
  try {
    fd = openRegularNoFollow(file, constants.O_RDONLY);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw fileError(file, 'open', e);
  }
  try {
    return readFileSync(fd, 'latin1');
  } catch (e) {
    throw fileError(file, 'read', e);
  } finally {
    closeQuiet(fd);
  }
}

function closeQuiet(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Nothing to do: the descriptor is gone either way.
  }
}
