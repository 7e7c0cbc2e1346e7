/**
 * `continuity serve` starts with a floor under V8's old-generation limit (bin/continuity.js,
 * docs/service.md "Run it"): on a Node with process.execve (Node 22 from the npm registry here) it
 * replaces itself in place with `--initial-old-space-size=128`, as /proc shows its command line;
 * it is the same process (the pid it prints is the pid spawned, and a kill -9 of it frees the
 * state directory for the next instance); CONTINUITY_SERVE_HEAP_FLOOR_MB sets or turns off the
 * floor, a size on the command line is kept, a bad value is refused with exit 2 before anything
 * starts; on a Node without execve (the machines' Node 20) it runs as started.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureNpmPeer, PEERS } from '../support/peers.js';
import { BIN, startServe, tempDir } from './harness.js';

let node22: string;
beforeAll(async () => {
  node22 = (await ensureNpmPeer(PEERS.node22)).bin;
}, 600_000);

/** The V8 heap flags on a process's command line, from /proc. */
function heapFlags(pid: number): string[] {
  const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  return args.filter((a) => a.startsWith('--initial-old-space-size'));
}

describe('continuity serve, heap floor', () => {
  it('re-executes itself in place with the 128 MiB floor on a Node with execve; kill -9 reaches the lock holder', async () => {
    const dir = tempDir('floor-');
    const serve = await startServe({ node: node22, dir });
    try {
      expect(heapFlags(serve.pid)).toEqual(['--initial-old-space-size=128']);
      // The same process: the pid it printed once listening is the pid spawned.
      expect(serve.printedPid).toBe(serve.pid);
      expect(await fetch(serve.ready).then((r) => r.text())).toBe('ready\n');
    } finally {
      await serve.kill9();
    }
    // The process killed was the one holding the state directory: the next instance takes it.
    const next = await startServe({ node: node22, dir });
    expect(await next.stop()).toBe(0);
  });

  it('takes its size from CONTINUITY_SERVE_HEAP_FLOOR_MB, none at 0, and keeps a size set on the command line', async () => {
    const cases: Array<[Parameters<typeof startServe>[0], string[]]> = [
      [{ env: { CONTINUITY_SERVE_HEAP_FLOOR_MB: '64' } }, ['--initial-old-space-size=64']],
      [{ env: { CONTINUITY_SERVE_HEAP_FLOOR_MB: '0' } }, []],
      [{ nodeArgs: ['--initial-old-space-size=256'] }, ['--initial-old-space-size=256']],
    ];
    for (const [options, flags] of cases) {
      const serve = await startServe({ node: node22, ...options });
      try {
        expect(heapFlags(serve.pid), JSON.stringify(options)).toEqual(flags);
      } finally {
        expect(await serve.stop()).toBe(0);
      }
    }
  });

  it('refuses a size that is not a whole number of MiB, exit 2, before anything starts', () => {
    const dir = tempDir('floor-bad-');
    const r = spawnSync(node22, [BIN, 'serve'], {
      env: {
        PATH: process.env.PATH,
        CONTINUITY_SERVE_HEAP_FLOOR_MB: '1.5g',
        CONTINUITY_SERVE_STATE_DIR: join(dir, 'state'),
      },
      encoding: 'utf8',
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      'continuity: CONTINUITY_SERVE_HEAP_FLOOR_MB: expected a whole number of MiB from 0 (no floor) to 1048576, e.g. 128\n',
    );
    expect(existsSync(join(dir, 'state'))).toBe(false);
  });

  it('runs as started on a Node without execve', async () => {
    const hasExecve = typeof (process as { execve?: unknown }).execve === 'function';
    const serve = await startServe();
    try {
      expect(heapFlags(serve.pid)).toEqual(hasExecve ? ['--initial-old-space-size=128'] : []);
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  });
});
