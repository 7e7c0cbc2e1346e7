/**
 * The durable pending state: journal records are fsynced in order and read back exactly; a torn
 * or damaged record is skipped and counted, never fatal; compaction writes a snapshot and starts
 * a new journal without losing a record; the directory and files are private; the lock holds.
 */
import { appendFileSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PendingStore, StateDirLockedError } from '../../src/service/state.js';
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
    ];
    expect(seqs).toEqual([1, 2, 3]);
    await store.durable(3);
    // No close: as after kill -9, only what was fsynced is there, and the lock is left behind.
    const again = await open(dir);
    expect(again.recovered.problems).toEqual([]);
    expect(again.recovered.records.map((r) => [r.seq, r.op, r.at])).toEqual([
      [1, 'observe', 1],
      [2, 'expire', 2],
      [3, 'observe', 3],
    ]);
    expect((again.recovered.records[0] as { event: { timeNs: bigint } }).event.timeNs).toBe(
      1764500000000000001n,
    );
    // New records continue the sequence.
    expect(again.store.record({ op: 'expire', at: 4 })).toBe(4);
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
    const { store } = await open(dir, 2048);
    let state: number[] = [];
    store.setExporter(() => ({ applied: [...state] }));
    for (let i = 1; i <= 200; i++) {
      state.push(i);
      store.record({ op: 'observe', at: i, event: { n: i, pad: 'x'.repeat(40) } });
    }
    await store.durable(200);
    // Compaction runs after the group commit that crossed the threshold.
    await waitFor('the snapshot', () => readdirSync(dir).includes('pending.snapshot.json'));
    await waitFor(
      'the old journal removed',
      () => readdirSync(dir).filter((f) => f.startsWith('journal-')).length === 1,
    );
    const files = readdirSync(dir);
    expect(files.filter((f) => f.startsWith('journal-')).length).toBe(1);
    const { recovered } = await open(dir);
    const snap = recovered.snapshot as { applied: number[] };
    // The snapshot plus the journal records after it give every record exactly once.
    const replayed = recovered.records.map((r) => (r as { event: { n: number } }).event.n);
    expect([...snap.applied, ...replayed]).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    state = [];
  });

  it('writes a final snapshot at close, releases the lock, and keeps files private', async () => {
    const dir = join(tempDir('state-'), 'state');
    const { store } = await open(dir);
    store.setExporter(() => ({ version: 1, boundaries: ['b'] }));
    store.record({ op: 'expire', at: 1 });
    await store.close();
    await store.close();
    expect(readdirSync(dir)).not.toContain('lock');
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const f of readdirSync(dir)) expect(statSync(join(dir, f)).mode & 0o777, f).toBe(0o600);
    const { recovered } = await open(dir);
    expect(recovered.snapshot).toEqual({ version: 1, boundaries: ['b'] });
    expect(recovered.records).toEqual([]);
  });

  it('treats a damaged snapshot as unknown state, and says so', async () => {
    const dir = join(tempDir('state-'), 'state');
    const { store } = await open(dir);
    store.setExporter(() => ({ version: 1 }));
    await store.close();
    const snap = join(dir, 'pending.snapshot.json');
    writeFileSync(snap, readFileSync(snap, 'utf8').replace('"version":1', '"version":2'));
    const { recovered } = await open(dir);
    expect(recovered.snapshot).toBeUndefined();
    expect(recovered.problems).toEqual([expect.stringMatching(/snapshot failed its checksum/)]);
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
    expect(readFileSync(join(dir, 'lock'), 'utf8')).toBe(`${process.pid}\n`);
    await store.close();
  });
});
