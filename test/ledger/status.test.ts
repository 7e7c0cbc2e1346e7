/**
 * `continuity status` warns, in one line on stderr, when what it shows does not verify (an edited
 * record, a removed tail), without scanning the ledger; an intact ledger gets no warning.
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/ledger.js';
import { sidecarPaths } from '../../src/ledger/paths.js';
import type { NewRecord } from '../../src/ledger/records.js';
import { spotCheck } from '../../src/ledger/spot-check.js';
import { digestOf as d, rehashedLine, runCli, utcSecond as t, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let n = 0;
let ledgerPath = '';
beforeEach(() => {
  ledgerPath = join(tmp.dir, `case-${++n}`, 'ledger.jsonl');
});

const snap = (sessionId: string, phase: 'pre' | 'post', target: number, at: number): NewRecord => ({
  type: 'snapshot',
  phase,
  sessionId,
  boundaryId: `${sessionId}-b1`,
  capturedAt: t(at),
  normalizerVersion: 1,
  decisions: {
    scope: { digest: d(1), revision: 1, observedAt: t(at) },
    target: { digest: d(target), revision: 1, observedAt: t(at) },
    acceptance_test: { digest: d(3), revision: 1, observedAt: t(at) },
  },
});

/** s1: pre (seq 1), approval (2), post (3); then s2's pre (4) and an activity of s3 (5). */
async function writeLedger(): Promise<string[]> {
  const l = Ledger.open(ledgerPath);
  await l.appendBatch([
    snap('s1', 'pre', 2, 0),
    {
      type: 'approval',
      sessionId: 's1',
      decision: 'target',
      fromDigest: d(2),
      toDigest: d(9),
      approvalRef: 'PR-1',
      approvedBy: 'alice',
      approvedAt: t(1),
    },
    snap('s1', 'post', 9, 2),
    snap('s2', 'pre', 2, 3),
    { type: 'activity', sessionId: 's3', state: 'idle', at: t(4) },
  ]);
  await l.close();
  return readFileSync(ledgerPath, 'utf8').split('\n').slice(0, -1);
}

function writeLines(lines: string[]): void {
  writeFileSync(ledgerPath, lines.map((l) => `${l}\n`).join(''));
}

function status(...args: string[]) {
  return runCli(['status', '--ledger', ledgerPath, ...args]);
}

describe('status warns when the ledger does not verify', () => {
  it('says nothing for an intact ledger', async () => {
    await writeLedger();
    for (const args of [[], ['--session', 's1'], ['--json']]) {
      const r = status(...args);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
    }
  });

  it('warns about an approval changed by hand, in one line that says how to verify', async () => {
    const lines = await writeLedger();
    lines[1] = lines[1]!.replace('"approvedBy":"alice"', '"approvedBy":"mallory"');
    writeLines(lines);
    for (const args of [[], ['--session', 's1']]) {
      const r = status(...args);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('approved_change');
      expect(r.stderr.split('\n')).toHaveLength(2);
      expect(r.stderr).toMatch(/^continuity: warning: ledger .* does not verify \(seq 2: edited: /);
      expect(r.stderr).toContain(`continuity ledger verify --ledger ${ledgerPath}`);
    }
  });

  it('warns about a record edited with its hash recomputed (the next record no longer chains to it)', async () => {
    const lines = await writeLedger();
    lines[0] = rehashedLine(lines[0]!, (rec) => {
      (rec.decisions as Record<string, { digest: string }>).target!.digest = d(9);
    });
    writeLines(lines);
    expect(status('--session', 's1').stderr).toMatch(/seq 1: edited: the record after seq 1 does not chain/);
  });

  it('warns about records removed from the end, whatever tool removed them', async () => {
    const lines = await writeLedger();
    writeFileSync(
      `${ledgerPath}.new`,
      lines
        .slice(0, 4)
        .map((l) => `${l}\n`)
        .join(''),
    );
    renameSync(`${ledgerPath}.new`, ledgerPath);
    rmSync(sidecarPaths(ledgerPath).indexDir, { recursive: true });
    const r = status();
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/seq 5: removed: the ledger ends at seq 4 but .*\.head recorded seq 5/);
  });

  it('warns about a torn tail', async () => {
    const lines = await writeLedger();
    writeFileSync(ledgerPath, `${lines.join('\n')}\n${lines[4]!.slice(0, 30)}`);
    expect(status().stderr).toMatch(/does not verify \(seq 6: torn: /);
  });

  it('does not warn for a ledger written before the head file existed', async () => {
    await writeLedger();
    rmSync(sidecarPaths(ledgerPath).head);
    expect(status().stderr).toBe('');
  });
});

describe('spotCheck', () => {
  it('checks only the records it is given and the tail: an edit elsewhere is left to verify', async () => {
    const lines = await writeLedger();
    // s2's pre snapshot (seq 4) changed by hand; s1's records are intact.
    lines[3] = lines[3]!.replace('"s2-b1"', '"s2-bX"');
    writeLines(lines);
    const s1 = [
      { seq: 1, offset: 0, length: Buffer.byteLength(lines[0]!) + 1 },
      { seq: 2, offset: Buffer.byteLength(lines[0]!) + 1, length: Buffer.byteLength(lines[1]!) + 1 },
    ];
    expect(spotCheck(ledgerPath, s1)).toBeUndefined();
    const at = lines.slice(0, 3).reduce((sum, l) => sum + Buffer.byteLength(l) + 1, 0);
    expect(
      spotCheck(ledgerPath, [{ seq: 4, offset: at, length: Buffer.byteLength(lines[3]!) + 1 }]),
    ).toMatchObject({
      seq: 4,
      why: 'edited',
    });
  });
});
