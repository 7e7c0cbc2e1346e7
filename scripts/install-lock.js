// @ts-check
/**
 * Filling a cache folder once, however many processes ask at the same time: a lock directory
 * (mkdir is atomic) that parallel test files and builds wait on, and a fill into a temporary
 * folder renamed into place only when complete, so a crash or a failed install never leaves half
 * of it behind. Plain JavaScript (types in install-lock.d.ts), so the stack's build script
 * (scripts/stack/toolchain.js, plain Node) and the tests' peer installs (test/support/peers.ts,
 * vitest) share one implementation with no build step.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `fn` holding the lock directory `lock`. A lock whose owner process is gone, or older than
 * `staleMs` (default 20 minutes), is taken over; a live one is polled every `pollMs` (default 250).
 * @template T @param {string} lock @param {() => T | Promise<T>} fn
 * @param {{ staleMs?: number, pollMs?: number }} [timing]
 * @returns {Promise<T>}
 */
export async function withLock(lock, fn, { staleMs = 20 * 60_000, pollMs = 250 } = {}) {
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch (e) {
      if (/** @type {NodeJS.ErrnoException} */ (e).code !== 'EEXIST') throw e;
      let stale = false;
      try {
        const pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
        if (Number.isInteger(pid) && pid > 0) {
          try {
            process.kill(pid, 0);
          } catch {
            stale = true;
          }
        }
        stale ||= Date.now() - statSync(lock).mtimeMs > staleMs;
      } catch {
        // The owner is between mkdir and writing its pid, or just released it: try again soon.
      }
      if (stale) rmSync(lock, { recursive: true, force: true });
      else await sleep(pollMs);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Fills the cache folder `dir` unless it is complete (its `.complete` stamp there, and `file`
 * inside it when given). Under the lock `<dir>.lock`, `fill(tmp)` fills the empty folder
 * `<dir>.tmp-<pid>`, which gets the stamp and is renamed into place; a `fill` that throws leaves
 * nothing behind and its error goes to the caller.
 * @param {string} dir @param {string | undefined} file @param {(tmp: string) => void} fill
 * @param {{ staleMs?: number, pollMs?: number }} [timing] the lock's (see {@link withLock})
 * @returns {Promise<number | null>} how long the fill took, ms; null when `dir` was complete already
 */
export async function fillOnce(dir, file, fill, timing) {
  const complete = () =>
    existsSync(join(dir, '.complete')) && (file === undefined || existsSync(join(dir, file)));
  if (complete()) return null;
  mkdirSync(dirname(dir), { recursive: true });
  return withLock(
    `${dir}.lock`,
    () => {
      if (complete()) return null;
      const tmp = `${dir}.tmp-${process.pid}`;
      rmSync(tmp, { recursive: true, force: true });
      mkdirSync(tmp, { recursive: true });
      const started = Date.now();
      try {
        fill(tmp);
      } catch (e) {
        rmSync(tmp, { recursive: true, force: true });
        throw e;
      }
      const builtMs = Date.now() - started;
      writeFileSync(join(tmp, '.complete'), `${JSON.stringify({ at: new Date().toISOString(), builtMs })}\n`);
      rmSync(dir, { recursive: true, force: true });
      renameSync(tmp, dir);
      return builtMs;
    },
    timing,
  );
}
