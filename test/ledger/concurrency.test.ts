/**
 * Many writer processes at once: no record lost, none interleaved, one valid chain.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyLedger } from '../../src/ledger/verify.js';
import { readRecords, runWriter, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

// Every append is an fsync under the lock, taken in turn by 8 processes: about 40 ms each on a
// loaded 2-core machine. The budget grows with the appends, so a slow machine is never a failure.
const APPEND_BUDGET_MS = 100;

describe('ledger under concurrent writers', () => {
  it('gives 2 000 records and a valid chain from 8 processes × 250 appends', {
    timeout: 2000 * APPEND_BUDGET_MS,
  }, async () => {
    const ledger = join(tmp.dir, 'state', 'ledger.jsonl');
    const writers = Array.from({ length: 8 }, (_, i) => runWriter(ledger, `writer-${i}`, 250));
    const reports = await Promise.all(writers);

    const records = readRecords(ledger);
    expect(records).toHaveLength(2000);
    expect(records.map((r) => r.seq)).toEqual(Array.from({ length: 2000 }, (_, i) => i + 1));
    const result = verifyLedger(ledger);
    expect(result).toMatchObject({ ok: true, records: 2000, lastSeq: 2000, scheme: 'sha256' });

    // Every writer got exactly its 250 records, each at the seq and with the hash it was told.
    const bySeq = new Map(records.map((r) => [r.seq as number, r]));
    reports.forEach((seen, i) => {
      expect(seen.size).toBe(250);
      for (const [seq, hash] of seen) {
        expect(bySeq.get(seq)?.hash).toBe(hash);
        expect(bySeq.get(seq)?.sessionId).toBe(`writer-${i}`);
      }
    });
  });
});
