/**
 * `continuity serve` starts with a floor under V8's old-generation limit (bin/continuity.js,
 * docs/service.md "Run it"): on a Node with process.execve (Node 22 from the npm registry here) it
 * replaces itself in place with `--initial-old-space-size=128`, as /proc shows its command line;
 * it is the same process (the pid it prints is the pid spawned, and a kill -9 of it frees the
 * state directory for the next instance); CONTINUITY_SERVE_HEAP_FLOOR_MB sets or turns off the
 * floor, a size on the command line is kept, a bad value is refused with exit 2 before anything
 * starts; on a Node without execve (the machines' Node 20) it runs as started, and the floor is
 * applied from inside the process (src/service/heap-floor.ts), which this Node's V8 obeys: a
 * process promoting short-lived objects runs a fraction of the full collections it runs without.
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
 * Full collections a child process on this Node runs with the run-time floor of `floorMb` (0:
 * none) under the service's pattern: most of what a step allocates dies young, and some is kept
 * for 128 steps (like requests waiting in the forward queue), so it is promoted and dies old.
 * Counted by the process itself (not a time).
 */
function fullCollections(floorMb: number): number {
  const script = `
    import { PerformanceObserver, constants } from 'node:perf_hooks';
    import { applyRuntimeHeapFloor } from ${JSON.stringify(join(REPO, 'dist/service/heap-floor.js'))};
    const floor = applyRuntimeHeapFloor(${floorMb});
    let full = 0;
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) full++;
    }).observe({ entryTypes: ['gc'] });
    const kept = [];
    for (let i = 0; i < 6000; i++) {
      let young = 0;
      for (let j = 0; j < 8000; j++) young += [j, j + 1].length;
      kept.push(Array.from({ length: 1024 }, (_, k) => ({ k, young })));
      if (kept.length > 128) kept.shift();
      if (i % 16 === 0) await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setTimeout(r, 50));
    process.stdout.write(JSON.stringify({ full }));
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  return (JSON.parse(out) as { full: number }).full;
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

  it("is obeyed by this Node's V8: far fewer full collections while short-lived objects are promoted", () => {
    const without = fullCollections(0);
    const withFloor = fullCollections(128);
    // Measured: 7 without, 1 or 2 with.
    expect(without).toBeGreaterThanOrEqual(4);
    expect(withFloor * 2).toBeLessThanOrEqual(without);
  }, 60_000);
});
