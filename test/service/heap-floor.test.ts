/**
 * `continuity serve` starts with a floor under V8's old-generation limit (bin/continuity.js,
 * docs/service.md "Run it"): on a Node with process.execve (Node 22 from the npm registry here) it
 * replaces itself in place with `--initial-old-space-size=128`, as /proc shows its command line;
 * it is the same process (the pid it prints is the pid spawned, and a kill -9 of it frees the
 * state directory for the next instance); CONTINUITY_SERVE_HEAP_FLOOR_MB sets or turns off the
 * floor, a size on the command line is kept, a bad value is refused with exit 2 before anything
 * starts; on a Node without execve (the machines' Node 20) it runs as started, and the floor is
 * applied from inside the process (src/service/heap-floor.ts): this Node's V8 computes its next
 * limit with the growing factor the floor sets, as V8's own trace shows.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { floorGrowingPercent, heapFloorMb } from '../../src/service/heap-floor.js';
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

const MiB = 1024 * 1024;
const REPO = new URL('../..', import.meta.url).pathname;

/**
 * The limits V8 set after two full collections in a child process on this Node that applied the
 * run-time floor of `floorMb` (0: none) first: V8's own trace (`--trace-gc-verbose`), each line
 * `[HeapController] Limit: old size: 3094 KB, new limit: 65994 KB (21.0)`, the last number the
 * growing factor it used. Read from V8 itself, not timed.
 */
function limitsAfterFullCollections(
  floorMb: number,
): Array<{ oldKb: number; limitKb: number; factor: number }> {
  const script = `
    import { applyRuntimeHeapFloor } from ${JSON.stringify(join(REPO, 'dist/service/heap-floor.js'))};
    applyRuntimeHeapFloor(${floorMb});
    globalThis.gc();
    await new Promise((r) => setImmediate(r));
    globalThis.gc();
  `;
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--trace-gc-verbose', '--input-type=module', '-e', script],
    { encoding: 'utf8', maxBuffer: 64 * MiB },
  );
  return [
    ...out.matchAll(/\[HeapController\] Limit: old size: (\d+) KB, new limit: (\d+) KB \(([\d.]+)\)/g),
  ].map((m) => ({ oldKb: Number(m[1]), limitKb: Number(m[2]), factor: Number(m[3]) }));
}

describe('the heap floor applied from inside the process', () => {
  it('sets the growing factor that takes the next limit to the floor while the heap is under half of it', () => {
    expect(floorGrowingPercent(16 * MiB, 128 * MiB)).toBe(700);
    expect(floorGrowingPercent(20 * MiB, 128 * MiB)).toBe(550); // 540 rounded up to a multiple of 25
    expect(floorGrowingPercent(63 * MiB, 128 * MiB)).toBe(125);
    expect(floorGrowingPercent(64 * MiB, 128 * MiB)).toBe(0);
    expect(floorGrowingPercent(900 * MiB, 128 * MiB)).toBe(0);
    expect(floorGrowingPercent(1, 128 * MiB)).toBe(2000);
    expect(floorGrowingPercent(16 * MiB, 0)).toBe(0);
  });

  it('reads CONTINUITY_SERVE_HEAP_FLOOR_MB as bin/continuity.js does', () => {
    expect(heapFloorMb(undefined)).toBe(128);
    expect(heapFloorMb(' ')).toBe(128);
    expect(heapFloorMb('0')).toBe(0);
    expect(heapFloorMb('64')).toBe(64);
    expect(heapFloorMb('1.5g')).toBeUndefined();
    expect(heapFloorMb('-1')).toBeUndefined();
    expect(heapFloorMb('1048577')).toBeUndefined();
  });

  it("is what this Node's V8 computes its next limit with", () => {
    const without = limitsAfterFullCollections(0);
    const withFloor = limitsAfterFullCollections(128);
    expect(without.length).toBeGreaterThanOrEqual(2);
    expect(withFloor.length).toBeGreaterThanOrEqual(2);
    // V8's own factor is at most 4; the floor's, for a heap of a few MiB, its highest (21: a
    // 128 MiB floor over 3 MiB would be 42, capped).
    for (const l of without) expect(l.factor).toBeLessThanOrEqual(4);
    for (const l of withFloor) {
      expect(l.factor).toBe(21);
      expect(l.limitKb).toBeGreaterThanOrEqual(l.oldKb * 20);
    }
  });
});
