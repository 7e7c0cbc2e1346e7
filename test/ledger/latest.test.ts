/**
 * The latest-boundary read: which boundary is the latest, that the index answers the same as a
 * full scan, and that a stale, lost or foreign index is caught (scan) and rebuilt.
 */
import { cpSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { classify } from '../../src/classify/classify.js';
import {
  type ReadPath,
  readAllLatestBoundaries,
  readLatestActivity,
  readLatestBoundary,
} from '../../src/ledger/latest.js';
import { Ledger } from '../../src/ledger/ledger.js';
import { sidecarPaths } from '../../src/ledger/paths.js';
import { classifyEvidence } from '../../src/ledger/receipt.js';
import type { NewRecord } from '../../src/ledger/records.js';
import { testApprover } from '../support/approver.js';
import { digestOf as d, utcSecond as t, tempDir } from './helpers.js';

const APPROVER = testApprover();

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let n = 0;
let ledgerPath = '';
beforeEach(() => {
  ledgerPath = join(tmp.dir, `case-${++n}`, 'ledger.jsonl');
});

function snap(
  sessionId: string,
  boundaryId: string,
  phase: 'pre' | 'post',
  digests: Record<string, number>,
  at: number,
): NewRecord {
  return {
    type: 'snapshot',
    phase,
    sessionId,
    boundaryId,
    capturedAt: t(at),
    normalizerVersion: 1,
    decisions: Object.fromEntries(
      Object.entries(digests).map(([k, v]) => [k, { digest: d(v), revision: 1, observedAt: t(at) }]),
    ),
  };
}

function readWith(sessionId: string, options: { forceScan?: boolean } = {}) {
  let path: ReadPath | undefined;
  const ev = readLatestBoundary(ledgerPath, sessionId, { ...options, onPath: (p) => (path = p) });
  return { ev, path };
}

describe('readLatestBoundary', () => {
  it('returns null for a missing ledger or an unknown session', async () => {
    expect(readLatestBoundary(join(tmp.dir, 'nope.jsonl'), 's')).toBeNull();
    const l = Ledger.open(ledgerPath);
    await l.append(snap('s', 'b', 'pre', { scope: 1 }, 0));
    await l.close();
    expect(readLatestBoundary(ledgerPath, 'other')).toBeNull();
  });

  it('assembles pre, post, boundary report, approvals and missing evidence of the latest boundary', async () => {
    const l = Ledger.open(ledgerPath);
    await l.append(snap('s', 'b1', 'pre', { scope: 1, target: 2, acceptance_test: 3 }, 0));
    await l.append({
      type: 'approval',
      sessionId: 's',
      ...APPROVER.sign(
        {
          decision: 'target',
          fromDigest: d(2),
          toDigest: d(9),
          approvalRef: 'PR-1',
          approvedBy: 'alice',
          approvedAt: t(1),
        },
        's',
        'b1',
      ),
    });
    await l.append({
      type: 'boundary',
      sessionId: 's',
      boundaryId: 'b1',
      trigger: 'auto',
      compactedAt: t(2),
    });
    await l.append({
      type: 'evidence_missing',
      sessionId: 's',
      boundaryId: 'b1',
      phase: 'post',
      reason: 'capture_failed',
      at: t(3),
    });
    await l.append(snap('s', 'b1', 'post', { scope: 1, target: 9, acceptance_test: 3 }, 4));
    await l.append(snap('other', 'x', 'pre', { scope: 5 }, 5));
    // The approver key the approval is signed with, trusted by the ledger (no pin: the ledger's own record).
    await l.append(APPROVER.keyRecord());
    await l.close();
    const { ev, path } = readWith('s');
    expect(path).toBe('index');
    expect(ev).toMatchObject({
      sessionId: 's',
      boundaryId: 'b1',
      trigger: 'auto',
      compactedAt: t(2),
      boundary: { seq: 3, compactedAt: t(2), trigger: 'auto' },
      evidenceMissing: [{ seq: 4, phase: 'post', reason: 'capture_failed', at: t(3) }],
      seqs: { pre: 1, post: 5, boundary: 3, approvals: [2] },
    });
    expect(ev?.pre?.decisions.target?.digest).toBe(d(2));
    expect(ev?.approvals).toEqual([
      {
        decision: 'target',
        fromDigest: d(2),
        toDigest: d(9),
        approvalRef: 'PR-1',
        approvedBy: 'alice',
        approvedAt: t(1),
        boundaryId: 'b1',
        keyId: APPROVER.keyId,
        signature: expect.stringMatching(/^[0-9a-f]{128}$/),
      },
    ]);
    expect(ev?.approvalAttempts).toEqual([]);
    expect(classifyEvidence(ev!)).toEqual(
      classify({ pre: ev!.pre, post: ev!.post, approvals: ev!.approvals, compactedAt: t(2) }),
    );
    expect(classifyEvidence(ev!).state).toBe('approved_change');
  });

  describe('approvals', () => {
    // Signed for boundary b1 by the approver the ledger trusts once its key record is appended.
    const approve = (from: number, to: number, at: number, ref = 'PR-1'): NewRecord => ({
      type: 'approval',
      sessionId: 's',
      ...APPROVER.sign(
        {
          decision: 'target',
          fromDigest: d(from),
          toDigest: d(to),
          approvalRef: ref,
          approvedBy: 'alice',
          approvedAt: t(at),
        },
        's',
        'b1',
      ),
    });

    it('ignores an approval recorded before the pre snapshot it would change', async () => {
      const l = Ledger.open(ledgerPath);
      // Recorded while the session was healthy, before any compaction.
      await l.append(approve(2, 9, 0));
      await l.append(snap('s', 'b1', 'pre', { scope: 1, target: 2 }, 1));
      await l.append({ type: 'boundary', sessionId: 's', boundaryId: 'b1', compactedAt: t(2) });
      await l.append(snap('s', 'b1', 'post', { scope: 1, target: 9 }, 3));
      await l.close();
      for (const forceScan of [false, true]) {
        const ev = readLatestBoundary(ledgerPath, 's', { forceScan })!;
        expect(ev.approvals).toEqual([]);
        expect(ev.seqs.approvals).toEqual([]);
        expect(classifyEvidence(ev)).toMatchObject({ state: 'conflicting', reason: 'unapproved_change' });
      }
      expect(classifyEvidence(readAllLatestBoundaries(ledgerPath)[0]!).state).toBe('conflicting');
    });

    it('counts an approval recorded after the pre snapshot, before or after the compaction', async () => {
      const l = Ledger.open(ledgerPath);
      await l.append(snap('s', 'b1', 'pre', { scope: 1, target: 2 }, 0));
      await l.append(approve(2, 5, 1, 'PR-1'));
      await l.append({ type: 'boundary', sessionId: 's', boundaryId: 'b1', compactedAt: t(2) });
      await l.append(approve(5, 9, 3, 'PR-2'));
      await l.append(snap('s', 'b1', 'post', { scope: 1, target: 9 }, 4));
      await l.append(APPROVER.keyRecord());
      await l.close();
      const ev = readLatestBoundary(ledgerPath, 's')!;
      expect(ev.seqs.approvals).toEqual([2, 4]);
      expect(classifyEvidence(ev)).toMatchObject({ state: 'approved_change', reason: 'approved_chain' });
      expect(classifyEvidence(ev).decisions.target?.approvalRefs).toEqual(['PR-1', 'PR-2']);
    });

    it("does not carry a previous boundary's approvals to the next boundary", async () => {
      const l = Ledger.open(ledgerPath);
      await l.append(snap('s', 'b1', 'pre', { scope: 1, target: 2 }, 0));
      await l.append(approve(2, 9, 1));
      await l.append(snap('s', 'b1', 'post', { scope: 1, target: 9 }, 2));
      // The next compaction's pre snapshot still holds the old target, and the agent restates 9.
      await l.append(snap('s', 'b2', 'pre', { scope: 1, target: 2 }, 3));
      await l.append(snap('s', 'b2', 'post', { scope: 1, target: 9 }, 4));
      await l.close();
      const ev = readLatestBoundary(ledgerPath, 's')!;
      expect(ev.boundaryId).toBe('b2');
      expect(ev.approvals).toEqual([]);
      expect(classifyEvidence(ev).state).toBe('conflicting');
    });

    it('counts only approvals after the latest pre snapshot when the pre snapshot is captured again', async () => {
      const l = Ledger.open(ledgerPath);
      await l.append(snap('s', 'b1', 'pre', { scope: 1, target: 2 }, 0));
      await l.append(approve(2, 9, 1));
      await l.append(snap('s', 'b1', 'pre', { scope: 1, target: 2 }, 2));
      await l.append(snap('s', 'b1', 'post', { scope: 1, target: 9 }, 3));
      await l.close();
      expect(readLatestBoundary(ledgerPath, 's')!.seqs).toMatchObject({ pre: 3, approvals: [] });
    });
  });

  it('takes the boundary that appeared last; a late record for an older boundary does not revive it', async () => {
    const l = Ledger.open(ledgerPath);
    await l.append(snap('s', 'b1', 'pre', { scope: 1 }, 0));
    await l.append(snap('s', 'b2', 'pre', { scope: 2 }, 1));
    await l.append(snap('s', 'b1', 'post', { scope: 1 }, 2));
    await l.close();
    const { ev } = readWith('s');
    expect(ev?.boundaryId).toBe('b2');
    expect(ev?.post).toBeNull();
    expect(classifyEvidence(ev!)).toMatchObject({ state: 'unverified', reason: 'post_observation_missing' });
  });

  it('treats a boundary opened by a missing pre snapshot as unverified (pre_snapshot_missing)', async () => {
    const l = Ledger.open(ledgerPath);
    await l.append({
      type: 'evidence_missing',
      sessionId: 's',
      boundaryId: 'b',
      phase: 'pre',
      reason: 'task_record_missing',
      at: t(0),
    });
    await l.append(snap('s', 'b', 'post', { scope: 1 }, 1));
    await l.close();
    const ev = readLatestBoundary(ledgerPath, 's');
    expect(ev?.pre).toBeNull();
    expect(classifyEvidence(ev!)).toMatchObject({ state: 'unverified', reason: 'pre_snapshot_missing' });
  });

  it('answers from the index exactly what a full scan answers, across many sessions and boundaries', async () => {
    const l = Ledger.open(ledgerPath);
    const batch: NewRecord[] = [];
    for (let i = 0; i < 600; i++) {
      const s = `s${i % 7}`;
      const b = `b${Math.floor(i / 35)}`;
      const r = i % 5;
      if (r === 0) batch.push(snap(s, b, 'pre', { scope: i, target: i + 1, acceptance_test: i + 2 }, i % 60));
      else if (r === 1) batch.push(snap(s, b, 'post', { scope: i, target: i + 1 }, (i + 1) % 60));
      else if (r === 2)
        batch.push({
          type: 'approval',
          sessionId: s,
          decision: 'scope',
          fromDigest: d(i),
          toDigest: d(i + 7),
          approvalRef: `R${i}`,
          approvedBy: 'bob',
          approvedAt: t(i % 60),
        });
      else if (r === 3) batch.push({ type: 'boundary', sessionId: s, boundaryId: b, compactedAt: t(i % 60) });
      else batch.push({ type: 'activity', sessionId: s, state: 'working', at: t(i % 60) });
      if (batch.length === 50) await l.appendBatch(batch.splice(0));
    }
    await l.close();
    const all = readAllLatestBoundaries(ledgerPath);
    expect(all).toHaveLength(7);
    for (let s = 0; s < 7; s++) {
      const viaIndex = readWith(`s${s}`);
      const viaScan = readWith(`s${s}`, { forceScan: true });
      expect(viaIndex.path).toBe('index');
      expect(viaScan.path).toBe('scan');
      expect(viaIndex.ev).toEqual(viaScan.ev);
      expect(all.find((e) => e.sessionId === `s${s}`)).toEqual(viaScan.ev);
    }
  });

  it('answers every session from the index exactly what a full scan answers, late records and tails included', async () => {
    const l = Ledger.open(ledgerPath);
    const batch: NewRecord[] = [];
    // Enough records that each session's index file is read from its latest boundary backwards
    // (more than 1 KiB), not whole.
    for (let i = 0; i < 8100; i++) {
      // Each session goes through every kind of record, six records per boundary.
      const s = `s${i % 9}`;
      const b = `b${Math.floor(i / 54)}`;
      const r = Math.floor(i / 9) % 6;
      if (r === 0) batch.push(snap(s, b, 'pre', { scope: i, target: i + 1, acceptance_test: i + 2 }, i % 60));
      else if (r === 1) batch.push(snap(s, b, 'post', { scope: i, target: i + 1 }, (i + 1) % 60));
      // A late record for the session's previous boundary.
      else if (r === 2)
        batch.push(snap(s, `b${Math.max(0, Math.floor(i / 54) - 1)}`, 'post', { scope: i }, 3));
      else if (r === 3)
        batch.push({
          type: 'approval',
          sessionId: s,
          decision: 'scope',
          fromDigest: d(i - 3),
          toDigest: d(i),
          approvalRef: `R${i}`,
          approvedBy: 'bob',
          approvedAt: t(i % 60),
        });
      else if (r === 4) batch.push({ type: 'boundary', sessionId: s, boundaryId: b, compactedAt: t(i % 60) });
      else batch.push({ type: 'activity', sessionId: s, state: 'idle', at: t(i % 60) });
      if (batch.length === 900) await l.appendBatch(batch.splice(0));
    }
    await l.close();
    const idx = sidecarPaths(ledgerPath).indexDir;
    const { readdirSync, statSync } = await import('node:fs');
    const sFiles = readdirSync(idx).filter((f) => f.startsWith('s-'));
    expect(sFiles).toHaveLength(9);
    for (const f of sFiles) expect(statSync(join(idx, f)).size).toBeGreaterThan(1024);
    const read = (forceScan: boolean) => {
      let path: ReadPath | undefined;
      const all = readAllLatestBoundaries(ledgerPath, { forceScan, onPath: (p) => (path = p) });
      return { all, path };
    };
    const scan = read(true);
    expect(scan.path).toBe('scan');
    expect(scan.all).toHaveLength(9);
    expect(read(false)).toEqual({ all: scan.all, path: 'index' });
    for (const ev of scan.all) expect(readWith(ev.sessionId).ev).toEqual(ev);

    // Records after `covered` (a writer killed before its index update): a new boundary of an
    // indexed session, a late record for an old one, and a session the index has never seen.
    const backup = `${idx}.backup`;
    cpSync(idx, backup, { recursive: true });
    const more = Ledger.open(ledgerPath);
    await more.appendBatch([
      snap('s1', 'b-new', 'pre', { scope: 1, target: 2, acceptance_test: 3 }, 5),
      snap('s2', 'b0', 'post', { scope: 1 }, 6),
      snap('fresh', 'f1', 'pre', { scope: 1, target: 2, acceptance_test: 3 }, 7),
    ]);
    await more.close();
    rmSync(idx, { recursive: true });
    renameSync(backup, idx);
    const after = read(true);
    expect(after.all).toHaveLength(10);
    expect(after.all.find((e) => e.sessionId === 's1')?.boundaryId).toBe('b-new');
    expect(read(false)).toEqual({ all: after.all, path: 'index' });
    for (const ev of after.all) expect(readWith(ev.sessionId)).toEqual({ ev, path: 'index' });
  });

  it("reads a session's latest boundary without the index entries of its earlier boundaries", async () => {
    const l = Ledger.open(ledgerPath);
    const batch: NewRecord[] = [];
    for (let b = 0; b < 400; b++) {
      batch.push(
        snap('s', `b${b}`, 'pre', { scope: b, target: 1, acceptance_test: 2 }, b % 60),
        snap('s', `b${b}`, 'post', { scope: b, target: 1, acceptance_test: 2 }, (b + 1) % 60),
      );
    }
    await l.appendBatch(batch);
    await l.close();
    const expected = readWith('s', { forceScan: true }).ev;
    expect(expected?.boundaryId).toBe('b399');
    // Keep only the entries of the latest boundary: the answer and the path do not change.
    const idx = sidecarPaths(ledgerPath).indexDir;
    const { readdirSync } = await import('node:fs');
    const f = join(idx, readdirSync(idx).find((x) => x.startsWith('s-'))!);
    expect(readFileSync(f).length).toBeGreaterThan(1024);
    const kept = readFileSync(f, 'utf8').split('\n').slice(-2);
    // Padding in place of the earlier entries keeps the file large enough to be read backwards.
    writeFileSync(f, `${' '.repeat(2000)}${kept.map((e) => `\n${e}`).join('')}`);
    expect(readWith('s')).toEqual({ ev: expected, path: 'index' });
    expect(readAllLatestBoundaries(ledgerPath)).toEqual([expected]);
  });

  it('rebuilds an index of the earlier format (no boundary files) and scans until then', async () => {
    const l = Ledger.open(ledgerPath);
    await l.append(snap('s', 'b1', 'pre', { scope: 1 }, 0));
    await l.close();
    const idx = sidecarPaths(ledgerPath).indexDir;
    const { readdirSync } = await import('node:fs');
    // What the previous release left: `covered` v1, and no b- files or sessions list.
    const covered = join(idx, 'covered');
    writeFileSync(covered, readFileSync(covered, 'latin1').replace(/^v2/, 'v1'));
    for (const f of readdirSync(idx)) if (f.startsWith('b-') || f === 'sessions') rmSync(join(idx, f));
    expect(readWith('s').path).toBe('scan');
    await Ledger.open(ledgerPath).close();
    expect(readFileSync(covered, 'latin1')).toMatch(/^v2 /);
    expect(readdirSync(idx).some((f) => f.startsWith('b-'))).toBe(true);
    expect(readWith('s')).toMatchObject({ path: 'index', ev: { boundaryId: 'b1' } });
  });

  it('catches records appended after the index (a writer killed before its index update)', async () => {
    const l = Ledger.open(ledgerPath);
    await l.append(snap('s', 'b1', 'pre', { scope: 1 }, 0));
    const covered = join(sidecarPaths(ledgerPath).indexDir, 'covered');
    const old = readFileSync(covered);
    await l.append(snap('s', 'b2', 'pre', { scope: 2 }, 1));
    await l.close();
    // Put back the index as it was before the second append, and drop that append's entry.
    writeFileSync(covered, old);
    const idx = sidecarPaths(ledgerPath).indexDir;
    const { readdirSync } = await import('node:fs');
    for (const f of readdirSync(idx).filter((f) => f.startsWith('s-'))) {
      writeFileSync(join(idx, f), readFileSync(join(idx, f), 'utf8').split('\n').slice(0, 2).join('\n'));
    }
    const { ev, path } = readWith('s');
    expect(path).toBe('index');
    expect(ev?.boundaryId).toBe('b2');
  });

  it('falls back to a scan when the index is gone or from another boot, and the next open rebuilds it', async () => {
    const l = Ledger.open(ledgerPath);
    await l.append(snap('s', 'b1', 'pre', { scope: 1 }, 0));
    await l.close();
    const covered = join(sidecarPaths(ledgerPath).indexDir, 'covered');
    writeFileSync(covered, readFileSync(covered, 'latin1').replace(/^(v\d+) \S+/, '$1 another-boot'));
    expect(readWith('s').path).toBe('scan');
    await Ledger.open(ledgerPath).close();
    expect(readWith('s').path).toBe('index');
    rmSync(sidecarPaths(ledgerPath).indexDir, { recursive: true });
    expect(readWith('s')).toMatchObject({ path: 'scan', ev: { boundaryId: 'b1' } });
    await Ledger.open(ledgerPath).close();
    expect(readWith('s')).toMatchObject({ path: 'index', ev: { boundaryId: 'b1' } });
  });

  it('falls back to a scan when an index entry does not point to a record of the session', async () => {
    const l = Ledger.open(ledgerPath);
    await l.append(snap('s', 'b1', 'pre', { scope: 1 }, 0));
    await l.append(snap('s', 'b1', 'post', { scope: 1 }, 1));
    await l.close();
    const idx = sidecarPaths(ledgerPath).indexDir;
    const { readdirSync } = await import('node:fs');
    const f = join(idx, readdirSync(idx).find((x) => x.startsWith('s-'))!);
    writeFileSync(f, readFileSync(f, 'utf8').replace(/\n2 (\d+) /, '\n2 0 '));
    const { ev, path } = readWith('s');
    expect(path).toBe('scan');
    expect(ev?.seqs).toMatchObject({ pre: 1, post: 2 });
  });

  it('reads the latest activity state of a session', async () => {
    const l = Ledger.open(ledgerPath);
    await l.append({ type: 'activity', sessionId: 's', state: 'working', at: t(0) });
    await l.append({ type: 'activity', sessionId: 's', state: 'waiting_human', at: t(1) });
    await l.append({ type: 'activity', sessionId: 'x', state: 'idle', at: t(2) });
    await l.close();
    expect(readLatestActivity(ledgerPath, 's')).toEqual({ seq: 2, state: 'waiting_human', at: t(1) });
    expect(readLatestActivity(ledgerPath, 's', { forceScan: true })).toEqual({
      seq: 2,
      state: 'waiting_human',
      at: t(1),
    });
    expect(readLatestActivity(ledgerPath, 'none')).toBeNull();
  });
});
