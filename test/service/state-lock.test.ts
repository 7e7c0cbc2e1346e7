/**
 * The state directory lock is held only while the process that wrote it runs: a pid alone is not
 * enough, since after `kill -9` the pid may be reused by an unrelated program (issue 26).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  lockIsHeld,
  parseLock,
  StateDirLockedError,
  systemProbe,
  takeLock,
} from '../../src/service/state-lock.js';
import { startServe, tempDir } from './harness.js';

const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      process.kill(c.pid!, 'SIGKILL');
      await once(c, 'exit');
    }
  }
});

/** An unrelated live process (not a `continuity serve`), stopped after the test by its pid. */
async function unrelatedProcess(): Promise<number> {
  const c = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  children.push(c);
  await once(c, 'spawn');
  return c.pid!;
}

function lockDir(): string {
  const dir = join(tempDir('lock-'), 'state');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

describe('state directory lock', () => {
  it('records the holder by pid, start time and boot id', () => {
    const dir = lockDir();
    takeLock(dir);
    const holder = parseLock(readFileSync(join(dir, 'lock'), 'utf8'));
    expect(holder?.pid).toBe(process.pid);
    expect(holder?.start).toBe(systemProbe.startTicks(process.pid));
    expect(holder?.boot).toBe(systemProbe.bootId());
    expect(holder?.start).toMatch(/^\d+$/);
  });

  it('breaks a lock left by kill -9 whose pid now belongs to an unrelated live process', async () => {
    // A real serve's lock, left by kill -9; its pid then reused by another program.
    const served = await startServe({ config: { ui: { enabled: false }, server: { grpcPort: false } } });
    const stateDir = join(tempDirOf(served), 'state');
    await served.kill9();
    const left = JSON.parse(readFileSync(join(stateDir, 'lock'), 'utf8')) as Record<string, unknown>;
    expect(left.pid).toBe(served.pid);
    const reused = await unrelatedProcess();
    writeFileSync(join(stateDir, 'lock'), `${JSON.stringify({ ...left, pid: reused })}\n`);
    expect(systemProbe.alive(reused)).toBe(true);
    // The next instance starts on the same directory, no manual removal.
    const next = await startServe({
      dir: tempDirOf(served),
      config: { ui: { enabled: false }, server: { grpcPort: false } },
    });
    expect(parseLock(readFileSync(join(stateDir, 'lock'), 'utf8'))?.pid).toBe(next.pid);
    expect(await next.stop()).toBe(0);
  }, 30_000);

  it('refuses a directory whose lock is held by a live serve (the same process that wrote it)', async () => {
    const first = await startServe({ config: { ui: { enabled: false }, server: { grpcPort: false } } });
    await expect(
      startServe({ dir: tempDirOf(first), config: { ui: { enabled: false }, server: { grpcPort: false } } }),
    ).rejects.toThrow(/exited with 3[\s\S]*in use by process/);
    expect(await first.stop()).toBe(0);
  }, 30_000);

  it('breaks a lock whose pid is dead', () => {
    const dir = lockDir();
    writeFileSync(
      join(dir, 'lock'),
      `${JSON.stringify({ pid: 2147483646, start: '1', boot: systemProbe.bootId() })}\n`,
    );
    takeLock(dir);
    expect(parseLock(readFileSync(join(dir, 'lock'), 'utf8'))?.pid).toBe(process.pid);
  });

  it('breaks a lock written in an earlier boot', async () => {
    const dir = lockDir();
    const pid = await unrelatedProcess();
    writeFileSync(
      join(dir, 'lock'),
      `${JSON.stringify({ pid, start: systemProbe.startTicks(pid), boot: '00000000-0000-0000-0000-000000000000' })}\n`,
    );
    takeLock(dir);
    expect(parseLock(readFileSync(join(dir, 'lock'), 'utf8'))?.pid).toBe(process.pid);
  });

  it('holds a lock whose pid and start time match a live process', async () => {
    const dir = lockDir();
    const pid = await unrelatedProcess();
    writeFileSync(
      join(dir, 'lock'),
      `${JSON.stringify({ pid, start: systemProbe.startTicks(pid), boot: systemProbe.bootId() })}\n`,
    );
    expect(() => takeLock(dir)).toThrow(StateDirLockedError);
  });

  describe('bare-pid locks (written before the start time was recorded)', () => {
    it('breaks one whose live pid started after the lock was written', async () => {
      const dir = lockDir();
      const pid = await unrelatedProcess();
      writeFileSync(join(dir, 'lock'), `${pid}\n`);
      const hourAgo = new Date(Date.now() - 3_600_000);
      utimesSync(join(dir, 'lock'), hourAgo, hourAgo);
      takeLock(dir);
      expect(parseLock(readFileSync(join(dir, 'lock'), 'utf8'))?.pid).toBe(process.pid);
    });

    it('holds one whose live pid started before the lock was written', () => {
      const dir = lockDir();
      writeFileSync(join(dir, 'lock'), `${process.ppid}\n`);
      expect(() => takeLock(dir)).toThrow(StateDirLockedError);
    });
  });

  it('without /proc, falls back to the pid (as before)', () => {
    const probe = {
      alive: () => true,
      startTicks: () => undefined,
      bootId: () => undefined,
      startedAtMs: () => undefined,
    };
    expect(lockIsHeld({ pid: 42, start: '7', boot: 'b' }, 0, probe)).toBe(true);
    expect(lockIsHeld({ pid: 42 }, 0, probe)).toBe(true);
    expect(lockIsHeld({ pid: 42 }, 0, { ...probe, alive: () => false })).toBe(false);
  });
});

/** The temp directory startServe used (its state directory is `<dir>/state`). */
function tempDirOf(served: { stderr(): string }): string {
  const m = /"dir":"([^"]+)\/state"/.exec(served.stderr());
  if (!m) throw new Error(`no state dir in the log:\n${served.stderr()}`);
  return m[1]!;
}
