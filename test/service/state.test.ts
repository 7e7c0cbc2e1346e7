/**
 * The durable pending state: journal records are written synchronously (O_DSYNC) in order and read back exactly; a torn
 * or damaged record is skipped and counted, never fatal; compaction writes a snapshot and starts
 * a new journal without losing a record; the directory and files are private; the lock holds.
 */
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  constants,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statfsSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { open as openFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PendingStore, readState, writeSnapshot } from '../../src/service/state.js';
import { StateDirLockedError } from '../../src/service/state-lock.js';
import { tempDir, waitFor } from './harness.js';

/** Every store a test opened; closed after it (a test may leave one open, as kill -9 would). */
const opened: PendingStore[] = [];

async function open(dir: string, compactAfterBytes = 1024 * 1024) {
  const result = await PendingStore.open({ dir, compactAfterBytes });
  opened.push(result.store);
  return result;
}

afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

describe('PendingStore', () => {
  it('opens its journal for synchronized writes (O_DSYNC): each write returns once it is on disk', async () => {
    // Linux shows an open file's flags in /proc/self/fdinfo; O_DSYNC saves the event loop a second
    // trip per write (the fdatasync) and is what makes the write durable without one.
    const dir = join(tempDir('state-'), 'state');
    const { store } = await open(dir);
    await store.durable(store.record({ op: 'expire', at: 1 }));
    const journal = readdirSync(dir).find((f) => f.startsWith('journal-'))!;
    const fds = readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === join(dir, journal);
      } catch {
        return false;
      }
    });
    expect(fds.length).toBe(1);
    const flags = Number.parseInt(
      /^flags:\s+(\d+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fds[0]}`, 'utf8'))![1]!,
      8,
    );
    expect(flags & constants.O_DSYNC).toBe(constants.O_DSYNC);
    expect(flags & constants.O_APPEND).toBe(constants.O_APPEND);
  });

  it('reads back every durable record in order, bigints exact', async () => {
    const dir = join(tempDir('state-'), 'state');
    const { store, recovered } = await open(dir);
    expect(recovered).toEqual({ snapshot: undefined, records: [], problems: [] });
    const seqs = [
      store.record({
        op: 'observe',
        at: 1,
        event: { kind: 'pre', sessionId: 's1', timeNs: 1764500000000000001n },
      }),
      store.record({ op: 'expire', at: 2 }),
      store.record({ op: 'observe', at: 3, event: { kind: 'post', sessionId: 's1', timeNs: null } }),
      // A bigint deeper in the event than its time: written through the general path, kept exact.
      store.record({
        op: 'observe',
        at: 5,
        event: { kind: 'post', sessionId: 's1', timeNs: 7n, boundary: { tokens: 2n ** 70n } },
      }),
    ];
    expect(seqs).toEqual([1, 2, 3, 4]);
    await store.durable(4);
    // No close: as after kill -9, only what was fsynced is there, and the lock is left behind.
    const again = await open(dir);
    expect(again.recovered.problems).toEqual([]);
    expect(again.recovered.records.map((r) => [r.seq, r.op, r.at])).toEqual([
      [1, 'observe', 1],
      [2, 'expire', 2],
      [3, 'observe', 3],
      [4, 'observe', 5],
    ]);
    expect((again.recovered.records[0] as { event: { timeNs: bigint } }).event.timeNs).toBe(
      1764500000000000001n,
    );
    expect(again.recovered.records[3]).toEqual({
      op: 'observe',
      at: 5,
      seq: 4,
      event: { kind: 'post', sessionId: 's1', timeNs: 7n, boundary: { tokens: 2n ** 70n } },
    });
    // New records continue the sequence.
    expect(again.store.record({ op: 'expire', at: 4 })).toBe(5);
    await again.store.close();
  });

  it('skips and counts a torn last record and a damaged one, and keeps the rest', async () => {
    const dir = join(tempDir('state-'), 'state');
    const { store } = await open(dir);
    for (let i = 1; i <= 3; i++) store.record({ op: 'observe', at: i, event: { n: i } });
    await store.durable(3);
    const journal = join(dir, readdirSync(dir).find((f) => f.startsWith('journal-'))!);
    const lines = readFileSync(journal, 'utf8').split('\n');
    lines[1] = lines[1]!.replace('"n":2', '"n":7');
    writeFileSync(journal, lines.join('\n'));
    appendFileSync(journal, '0123456789abcdef {"seq":4,"op":"obs');
    const { recovered } = await open(dir);
    expect(recovered.records.map((r) => r.seq)).toEqual([1, 3]);
    expect(recovered.problems).toHaveLength(2);
    expect(recovered.problems.join('\n')).toMatch(/record 2 failed its checksum/);
    expect(recovered.problems.join('\n')).toMatch(/last record incomplete/);
  });

  it('compacts into a snapshot plus a new journal without losing records', async () => {
    const dir = join(tempDir('state-'), 'state');
    // The snapshot writer gets only the directory and S: it rebuilds the state from the files.
    const snapshotAt = async (d: string, seq: number) => {
      const state = await readState(d, { uptoSeq: seq });
      const applied = [
        ...(((state.snapshot?.applied as number[] | undefined) ?? []) as number[]),
        ...state.records.map((r) => (r as { event: { n: number } }).event.n),
      ];
      await writeSnapshot(d, seq, { meta: {}, entries: applied.map((n) => ({ k: 'applied', v: n })) });
    };
    const result = await PendingStore.open({ dir, compactAfterBytes: 2048, snapshotAt });
    opened.push(result.store);
    const store = result.store;
    for (let i = 1; i <= 200; i++) {
      store.record({ op: 'observe', at: i, event: { n: i, pad: 'x'.repeat(40) } });
    }
    await store.durable(200);
    await waitFor('the snapshot', () => readdirSync(dir).includes('pending.snapshot.json'));
    await waitFor(
      'the old journals removed',
      () => readdirSync(dir).filter((f) => f.startsWith('journal-')).length <= 2,
    );
    const { recovered } = await open(dir);
    const snap = (recovered.snapshot?.applied ?? []) as number[];
    expect(snap.length).toBeGreaterThan(0);
    // The snapshot plus the journal records after it give every record exactly once.
    const replayed = recovered.records.map((r) => (r as { event: { n: number } }).event.n);
    expect([...snap, ...replayed]).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
  });

  it('flushes a background snapshot to disk as it goes, and a final one only at its end', async () => {
    // A snapshot written while the journal takes requests is flushed every SNAPSHOT_SYNC_BYTES, so
    // the journal's synchronized writes never wait behind hundreds of MiB of it (state.ts says why).
    const dir = join(tempDir('state-'), 'state');
    mkdirSync(dir, { recursive: true });
    const probe = await openFile(join(dir, 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
    await probe.close();
    const datasync = vi.spyOn(proto, 'datasync');
    const entries = Array.from({ length: 20_000 }, (_, i) => ({
      k: `session-${i}`,
      v: { n: i, pad: 'x'.repeat(40) },
    }));
    try {
      await writeSnapshot(dir, 7, { meta: { m: 1 }, entries }, 64 * 1024);
      const bytes = statSync(join(dir, 'pending.snapshot.json')).size;
      expect(bytes).toBeGreaterThan(1024 * 1024);
      // Lines go out in writes of about 1 MiB; each takes the unflushed bytes past 64 KiB, so each
      // is followed by a flush (the last one too, when it is 64 KiB or more).
      const chunks = bytes / (1024 * 1024);
      expect(datasync.mock.calls.length).toBeGreaterThanOrEqual(Math.floor(chunks));
      expect(datasync.mock.calls.length).toBeLessThanOrEqual(Math.ceil(chunks));
      const read = await readState(dir);
      expect(read.snapshotSeq).toBe(7);
      expect(read.problems).toEqual([]);
      datasync.mockClear();
      await writeSnapshot(dir, 8, { meta: { m: 1 }, entries });
      expect(datasync).not.toHaveBeenCalled();
      expect((await readState(dir)).snapshotSeq).toBe(8);
    } finally {
      datasync.mockRestore();
    }
  });

  it('writes a final snapshot at close, releases the lock, and keeps files private', async () => {
    const dir = join(tempDir('state-'), 'state');
    const { store } = await open(dir);
    store.record({ op: 'expire', at: 1 });
    const final = { meta: { version: 1 }, entries: [{ k: 'boundaries', v: 'b' }] };
    await store.close(final);
    await store.close(final);
    expect(readdirSync(dir)).not.toContain('lock');
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const f of readdirSync(dir)) expect(statSync(join(dir, f)).mode & 0o777, f).toBe(0o600);
    const { recovered } = await open(dir);
    expect(recovered.snapshot).toEqual({ version: 1, boundaries: ['b'] });
    expect(recovered.records).toEqual([]);
  });

  it('treats a damaged or incomplete snapshot as unknown state, and says so', async () => {
    const dir = join(tempDir('state-'), 'state');
    const { store } = await open(dir);
    await store.close({
      meta: { version: 1 },
      entries: [
        { k: 'boundaries', v: 1 },
        { k: 'boundaries', v: 2 },
      ],
    });
    const snap = join(dir, 'pending.snapshot.json');
    const good = readFileSync(snap, 'utf8');
    writeFileSync(snap, good.replace('"v":2', '"v":3'));
    const damaged = await open(dir);
    expect(damaged.recovered.snapshot).toBeUndefined();
    expect(damaged.recovered.problems).toEqual([expect.stringMatching(/snapshot failed its checksum/)]);
    await damaged.store.close();
    // Cut before its trailer (a crash mid-write would leave the temp file, but a copy could do this).
    writeFileSync(snap, `${good.split('\n').slice(0, 2).join('\n')}\n`);
    const cut = await open(dir);
    expect(cut.recovered.snapshot).toBeUndefined();
    expect(cut.recovered.problems).toEqual([expect.stringMatching(/snapshot failed/)]);
  });

  it('refuses a directory locked by a live process, and takes over a dead one’s lock', async () => {
    const dir = join(tempDir('state-'), 'state');
    await open(dir);
    // This process holds it: a live pid.
    writeFileSync(join(dir, 'lock'), `${process.ppid}\n`);
    await expect(open(dir)).rejects.toBeInstanceOf(StateDirLockedError);
    // A pid that does not exist (kill -9 left the lock behind).
    writeFileSync(join(dir, 'lock'), '2147483646\n');
    const { store } = await open(dir);
    expect(JSON.parse(readFileSync(join(dir, 'lock'), 'utf8'))).toMatchObject({ pid: process.pid });
    await store.close();
  });
});

describe('PendingStore on a full disk (a real 256 KiB tmpfs)', () => {
  const mounts: string[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close().catch(() => undefined);
    for (const m of mounts.splice(0)) execFileSync('umount', [m]);
  });

  /** A tmpfs of `size` mounted on a new temp dir (the test runs as root, as CI does). */
  function tmpfs(size: string): string {
    const dir = tempDir('state-tmpfs-');
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir]);
    } catch {
      throw new Error('cannot mount a tmpfs for the full-disk test: run the tests as root (CI does)');
    }
    mounts.push(dir);
    return dir;
  }

  /** Fills the file system until about `leave` bytes are free; returns the filler's path. */
  function fill(dir: string, leave: number): string {
    const path = join(dir, 'filler');
    const { bavail, bsize } = statfsSync(dir);
    writeFileSync(path, Buffer.alloc(Math.max(0, bavail * bsize - leave)));
    return path;
  }

  it('never reports a record durable that the disk cut short, and recovers once space returns', async () => {
    const root = tmpfs('256k');
    const dir = join(root, 'state');
    const { store } = await PendingStore.open({ dir, compactAfterBytes: 1 << 30, retryIntervalMs: 20 });
    opened.push(store);
    const first = store.record({ op: 'observe', at: 1, event: { n: 1 } });
    await store.durable(first);
    const filler = fill(root, 8192);
    // 64 KiB does not fit in the 8 KiB left: the write is cut short, then fails.
    const big = store.record({ op: 'observe', at: 2, event: { n: 2, pad: 'x'.repeat(65536) } });
    await expect(store.durable(big)).rejects.toThrow(/cannot write the pending-state journal.*ENOSPC/);
    expect(store.failure).toBeDefined();
    // Still full: a later record is refused too, not reported durable.
    const later = store.record({ op: 'expire', at: 3 });
    await expect(store.durable(later)).rejects.toThrow(/ENOSPC/);
    rmSync(filler);
    await waitFor('the journal recovers', () => store.failure === undefined);
    await store.durable(later);
    // As after kill -9: every record is there once, in order, none torn.
    const again = await PendingStore.open({ dir, compactAfterBytes: 1 << 30 });
    opened.push(again.store);
    expect(again.recovered.problems).toEqual([]);
    expect(again.recovered.records.map((r) => r.seq)).toEqual([1, 2, 3]);
    expect((again.recovered.records[1] as { event: { pad: string } }).event.pad.length).toBe(65536);
  });
});
