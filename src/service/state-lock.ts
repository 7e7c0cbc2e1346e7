/**
 * The lock of a `continuity serve` state directory: one instance per directory.
 *
 * The lock file names its holder by pid, and by what a pid cannot fake: the process's start time
 * (field 22 of `/proc/<pid>/stat`, clock ticks since boot) and the boot id. After `kill -9` the
 * pid is free and may be reused by any process; a pid alone then keeps the lock "held" by an
 * unrelated live program, and the directory needed removing by hand. A lock is held only while
 * the process at its pid is the same process that wrote it: same boot, same start time.
 *
 * Locks written before the start time was recorded (a bare pid) are judged by the lock file's
 * own time: a process that started after the file was written cannot have written it.
 *
 * Without `/proc` (macOS, Windows) only the pid can be checked, as before.
 */
import { closeSync, fsyncSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';

const LOCK_FILE = 'lock';

/** A state directory used by a live process. */
export class StateDirLockedError extends Error {
  override readonly name = 'StateDirLockedError';
}

/** Who holds a lock, as written in it. */
export interface LockHolder {
  pid: number;
  /** `/proc/<pid>/stat` start time in clock ticks since boot; undefined in a bare-pid lock. */
  start?: string | undefined;
  /** `/proc/sys/kernel/random/boot_id`; undefined in a bare-pid lock. */
  boot?: string | undefined;
}

/** What the system says about a pid now. */
export interface ProcessProbe {
  /** Whether a process with the pid exists (EPERM counts: it exists). */
  alive(pid: number): boolean;
  /** Its start time in clock ticks since boot, or undefined where there is no `/proc`. */
  startTicks(pid: number): string | undefined;
  /** The boot id, or undefined where there is none. */
  bootId(): string | undefined;
  /** When it started, ms since the epoch, or undefined where unknown. */
  startedAtMs(pid: number): number | undefined;
}

/** Reads a lock file's text: JSON with pid, start and boot, or a bare pid (older locks). */
export function parseLock(text: string): LockHolder | undefined {
  const t = text.trim();
  if (/^\d+$/.test(t)) return { pid: Number(t) };
  try {
    const v = JSON.parse(t) as Record<string, unknown>;
    if (!Number.isSafeInteger(v.pid) || (v.pid as number) <= 0) return undefined;
    return {
      pid: v.pid as number,
      start: typeof v.start === 'string' ? v.start : undefined,
      boot: typeof v.boot === 'string' ? v.boot : undefined,
    };
  } catch {
    return undefined;
  }
}

/**
 * Whether the lock is still held by the process that wrote it. Pure over the probe.
 * `writtenAtMs`: the lock file's modification time (for bare-pid locks).
 */
export function lockIsHeld(holder: LockHolder, writtenAtMs: number, probe: ProcessProbe): boolean {
  if (!probe.alive(holder.pid)) return false;
  if (holder.start !== undefined) {
    const boot = probe.bootId();
    if (holder.boot !== undefined && boot !== undefined && holder.boot !== boot) return false;
    const start = probe.startTicks(holder.pid);
    // Same pid, another start time: the pid was reused by an unrelated process.
    return start === undefined || start === holder.start;
  }
  // A bare pid: a process that started after the file was written is not its writer. One second
  // of slack: /proc gives the start in clock ticks, the file time is the file system's.
  const started = probe.startedAtMs(holder.pid);
  return started === undefined || started <= writtenAtMs + 1000;
}

/** `/proc/<pid>/stat` field 22 (after the parenthesised command name, which may hold spaces). */
function procStartTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields after the name start at field 3 (state): field 22 is index 19.
    const v = fields[19];
    return v !== undefined && /^\d+$/.test(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

function procBootId(): string | undefined {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Boot time from `/proc/stat` (`btime`, seconds). */
function procBootTimeMs(): number | undefined {
  try {
    const m = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'));
    return m ? Number(m[1]) * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** Clock ticks per second of `/proc` times: USER_HZ, 100 on every Linux architecture Node runs on. */
const USER_HZ = 100;

/** The probe over this system's `/proc` and `kill(pid, 0)`. */
export const systemProbe: ProcessProbe = {
  alive(pid) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'EPERM';
    }
  },
  startTicks: procStartTicks,
  bootId: procBootId,
  startedAtMs(pid) {
    const ticks = procStartTicks(pid);
    const boot = procBootTimeMs();
    return ticks === undefined || boot === undefined ? undefined : boot + (Number(ticks) * 1000) / USER_HZ;
  },
};

/** The lock text for this process. */
function ownLock(probe: ProcessProbe): string {
  const start = probe.startTicks(process.pid);
  const boot = probe.bootId();
  return `${JSON.stringify({ pid: process.pid, ...(start && { start }), ...(boot && { boot }) })}\n`;
}

/**
 * Takes the lock of `dir`, breaking a stale one (its writer is gone, or its pid now belongs to
 * another process). Throws {@link StateDirLockedError} when its writer still runs.
 */
export function takeLock(dir: string, probe: ProcessProbe = systemProbe): void {
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      try {
        writeSync(fd, ownLock(probe));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let text: string;
      let writtenAtMs: number;
      try {
        text = readFileSync(path, 'utf8');
        writtenAtMs = statSync(path).mtimeMs;
      } catch (r) {
        // Removed in between by its holder: try again.
        if ((r as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw r;
      }
      const holder = parseLock(text);
      if (holder && holder.pid !== process.pid && lockIsHeld(holder, writtenAtMs, probe)) {
        throw new StateDirLockedError(
          `the state directory ${dir} is in use by process ${holder.pid}: give each instance its own state.dir`,
        );
      }
      // Stale (kill -9, a reboot, or a pid since reused), unreadable, or our own: take it over.
      rmSync(path, { force: true });
    }
  }
  throw new StateDirLockedError(`cannot take the lock in ${dir}`);
}

/** Releases the lock of `dir`. */
export function releaseLock(dir: string): void {
  rmSync(join(dir, LOCK_FILE), { force: true });
}
