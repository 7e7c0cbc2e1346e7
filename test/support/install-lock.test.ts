/**
 * The cache fill the tests' peer installs and the stack's build share (scripts/install-lock.js):
 * filled once, never half, and the lock that parallel processes wait on.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fillOnce, withLock } from '../../scripts/install-lock.js';

const scratch = mkdtempSync(join(tmpdir(), 'continuity-install-lock-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('fillOnce', () => {
  it('fills the folder once, through a temporary folder renamed into place, and then finds it complete', async () => {
    const dir = join(scratch, 'cache-a', 'thing@1');
    let fills = 0;
    const fill = (tmp: string) => {
      fills++;
      expect(tmp).not.toBe(dir);
      expect(readdirSync(tmp)).toEqual([]);
      writeFileSync(join(tmp, 'bin'), 'x');
    };
    expect(await fillOnce(dir, 'bin', fill)).toEqual(expect.any(Number));
    expect(readdirSync(dir).sort()).toEqual(['.complete', 'bin']);
    expect(readdirSync(join(scratch, 'cache-a'))).toEqual(['thing@1']);
    expect(await fillOnce(dir, 'bin', fill)).toBeNull();
    expect(fills).toBe(1);
  });

  it('fills again when the named file is gone from a complete folder', async () => {
    const dir = join(scratch, 'cache-b', 'thing@1');
    await fillOnce(dir, 'bin', (tmp) => writeFileSync(join(tmp, 'bin'), 'x'));
    rmSync(join(dir, 'bin'));
    let fills = 0;
    await fillOnce(dir, 'bin', (tmp) => {
      fills++;
      writeFileSync(join(tmp, 'bin'), 'y');
    });
    expect(fills).toBe(1);
    expect(existsSync(join(dir, 'bin'))).toBe(true);
  });

  it('leaves nothing behind when the fill throws, and passes its error on', async () => {
    const root = join(scratch, 'cache-c');
    const error = await fillOnce(join(root, 'thing@1'), undefined, (tmp) => {
      writeFileSync(join(tmp, 'half'), 'x');
      throw new Error('the install failed');
    }).catch((e: Error) => e);
    expect((error as Error).message).toBe('the install failed');
    expect(readdirSync(root)).toEqual([]);
  });
});

describe('withLock', () => {
  it('waits while the lock’s owner lives, then runs and releases it', async () => {
    const lock = join(scratch, 'live.lock');
    mkdirSync(lock);
    writeFileSync(join(lock, 'pid'), String(process.pid));
    const order: string[] = [];
    const waiting = withLock(lock, () => order.push('ran'), { pollMs: 10 });
    await new Promise((r) => setTimeout(r, 100));
    order.push('released');
    rmSync(lock, { recursive: true });
    await waiting;
    expect(order).toEqual(['released', 'ran']);
    expect(existsSync(lock)).toBe(false);
  });

  it('takes over a lock whose owner process is gone', async () => {
    const lock = join(scratch, 'orphan.lock');
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
      encoding: 'utf8',
    });
    mkdirSync(lock);
    writeFileSync(join(lock, 'pid'), gone.stdout);
    expect(await withLock(lock, () => 'ran', { pollMs: 10 })).toBe('ran');
    expect(existsSync(lock)).toBe(false);
  });

  it('releases the lock when the work throws', async () => {
    const lock = join(scratch, 'throws.lock');
    await expect(
      withLock(lock, () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(existsSync(lock)).toBe(false);
  });
});
