/**
 * `verify` names the first bad seq and why: edited, removed, reordered, duplicated, torn; and an
 * HMAC chain cannot be rewritten with plain SHA-256 hashes.
 */
import { chmodSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { canonicalJson, createChainKey, recordHash } from '../../src/ledger/chain.js';
import { Ledger } from '../../src/ledger/ledger.js';
import { sidecarPaths } from '../../src/ledger/paths.js';
import type { NewRecord } from '../../src/ledger/records.js';
import { VerifyConfigError, verifyLedger } from '../../src/ledger/verify.js';
import { cleanEnv, rehashedLine, runCli, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let n = 0;
let ledgerPath = '';
beforeEach(() => {
  ledgerPath = join(tmp.dir, `ledger-${++n}.jsonl`);
});

const key = createChainKey(Buffer.alloc(32, 7));
const otherKey = createChainKey(Buffer.alloc(32, 8));
const digest = (i: number) => `sha256:${i.toString(16).padStart(64, '0')}`;
function approval(i: number): NewRecord {
  return {
    type: 'approval',
    sessionId: 'session-1',
    decision: 'scope',
    fromDigest: digest(i),
    toDigest: digest(i + 1),
    approvalRef: `PR-${i}`,
    approvedBy: 'alice',
    approvedAt: '2026-11-30T12:00:00Z',
  };
}

async function writeLedger(count: number, chainKey?: ReturnType<typeof createChainKey>): Promise<string[]> {
  const ledger = Ledger.open(ledgerPath, { chainKey });
  for (let i = 1; i <= count; i++) await ledger.append(approval(i));
  await ledger.close();
  return readLines();
}

function readLines(): string[] {
  return readFileSync(ledgerPath, 'utf8').split('\n').slice(0, -1);
}

function writeLines(lines: string[]): void {
  writeFileSync(ledgerPath, lines.map((l) => `${l}\n`).join(''));
}

describe('verifyLedger', () => {
  it('reports an intact ledger with its record count and chain scheme', async () => {
    await writeLedger(10);
    expect(verifyLedger(ledgerPath)).toEqual({
      ok: true,
      records: 10,
      lastSeq: 10,
      scheme: 'sha256',
      quarantined: 0,
      head: 'checked',
    });
  });

  it('catches an edited line at its seq (why: edited)', async () => {
    const lines = await writeLedger(10);
    lines[4] = lines[4]!.replace('"approvedBy":"alice"', '"approvedBy":"mallory"');
    writeLines(lines);
    expect(verifyLedger(ledgerPath)).toMatchObject({ ok: false, seq: 5, why: 'edited', line: 5 });
  });

  it('catches an edit whose plain SHA-256 hash was recomputed, at the edited seq', async () => {
    const lines = await writeLedger(10);
    lines[4] = rehashedLine(lines[4]!, (rec) => {
      rec.approvedBy = 'mallory';
    });
    writeLines(lines);
    const r = verifyLedger(ledgerPath);
    expect(r).toMatchObject({ ok: false, seq: 5, why: 'edited' });
    expect(r.ok === false && r.message).toContain("seq 6's prev");
  });

  it('catches a hand edit that keeps the values but changes the bytes', async () => {
    const lines = await writeLedger(5);
    lines[2] = lines[2]!.replace('{', '{ ');
    writeLines(lines);
    expect(verifyLedger(ledgerPath)).toMatchObject({ ok: false, seq: 3, why: 'edited' });
  });

  it('catches a deleted line at the missing seq (why: removed)', async () => {
    const lines = await writeLedger(10);
    lines.splice(6, 1);
    writeLines(lines);
    expect(verifyLedger(ledgerPath)).toMatchObject({ ok: false, seq: 7, why: 'removed', line: 7 });
  });

  it('catches two swapped lines at the first seq out of place (why: reordered)', async () => {
    const lines = await writeLedger(10);
    [lines[3], lines[4]] = [lines[4]!, lines[3]!];
    writeLines(lines);
    expect(verifyLedger(ledgerPath)).toMatchObject({ ok: false, seq: 4, why: 'reordered', line: 4 });
  });

  it('catches a line copied further down (why: duplicated)', async () => {
    const lines = await writeLedger(6);
    lines.splice(4, 0, lines[2]!);
    writeLines(lines);
    expect(verifyLedger(ledgerPath)).toMatchObject({ ok: false, seq: 3, why: 'duplicated', line: 5 });
  });

  it('catches records removed from the end, using what the index saw (why: removed)', async () => {
    const lines = await writeLedger(8);
    writeLines(lines.slice(0, 6));
    expect(verifyLedger(ledgerPath)).toMatchObject({ ok: false, seq: 7, why: 'removed' });
  });

  describe('removing the tail', () => {
    it("catches the last line removed by writing a new file (sed -i '$d'), index deleted too", async () => {
      const lines = await writeLedger(8);
      // sed -i writes a new file and renames it over the ledger: another inode.
      writeFileSync(
        `${ledgerPath}.sed`,
        lines
          .slice(0, 7)
          .map((l) => `${l}\n`)
          .join(''),
      );
      renameSync(`${ledgerPath}.sed`, ledgerPath);
      rmSync(sidecarPaths(ledgerPath).indexDir, { recursive: true });
      const r = verifyLedger(ledgerPath);
      expect(r).toMatchObject({ ok: false, seq: 8, why: 'removed' });
      expect(r.ok === false && r.message).toContain('.head recorded seq 8');
    });

    it('catches an in-place truncate, and keeps catching it after the next append (no seq is reused)', async () => {
      const lines = await writeLedger(8);
      truncateSync(
        ledgerPath,
        Buffer.byteLength(
          lines
            .slice(0, 7)
            .map((l) => `${l}\n`)
            .join(''),
        ),
      );
      expect(verifyLedger(ledgerPath)).toMatchObject({ ok: false, seq: 8, why: 'removed' });
      const l = Ledger.open(ledgerPath);
      const next = await l.append(approval(20));
      await l.close();
      expect(next.seq).toBe(9);
      expect(next.prev).toBe((JSON.parse(lines[6]!) as { hash: string }).hash);
      const r = verifyLedger(ledgerPath);
      expect(r).toMatchObject({ ok: false, seq: 8, why: 'removed', line: 8 });
      expect(r.ok === false && r.message).toContain('seq 8 is missing');
    });

    it('catches a last record rewritten with its hash recomputed, through the head', async () => {
      const lines = await writeLedger(5);
      lines[4] = rehashedLine(lines[4]!, (rec) => {
        rec.approvedBy = 'mallory';
      });
      writeLines(lines);
      const r = verifyLedger(ledgerPath);
      expect(r).toMatchObject({ ok: false, seq: 5, why: 'edited' });
      expect(r.ok === false && r.message).toContain('.head');
    });

    it('catches a ledger deleted and started again beside its head', async () => {
      await writeLedger(4);
      rmSync(ledgerPath);
      const l = Ledger.open(ledgerPath);
      expect((await l.append(approval(1))).seq).toBe(5);
      await l.close();
      expect(verifyLedger(ledgerPath)).toMatchObject({ ok: false, seq: 1, why: 'removed' });
    });

    it('reports a head file that is not a head record (why: head)', async () => {
      await writeLedger(3);
      writeFileSync(sidecarPaths(ledgerPath).head, 'garbage\n');
      expect(verifyLedger(ledgerPath)).toMatchObject({ ok: false, why: 'head' });
    });

    it('verifies a ledger written before the head file existed, and checks its tail from the next open on', async () => {
      await writeLedger(4);
      rmSync(sidecarPaths(ledgerPath).head);
      expect(verifyLedger(ledgerPath)).toMatchObject({ ok: true, records: 4, head: 'absent' });
      await Ledger.open(ledgerPath).close();
      expect(verifyLedger(ledgerPath)).toMatchObject({ ok: true, records: 4, head: 'checked' });
      const lines = readLines();
      writeLines(lines.slice(0, 3));
      expect(verifyLedger(ledgerPath)).toMatchObject({ ok: false, seq: 4, why: 'removed' });
    });

    it('cannot catch the tail removed together with the head and the index (the documented limit)', async () => {
      const lines = await writeLedger(6);
      writeLines(lines.slice(0, 5));
      rmSync(sidecarPaths(ledgerPath).head);
      rmSync(sidecarPaths(ledgerPath).indexDir, { recursive: true });
      expect(verifyLedger(ledgerPath)).toMatchObject({ ok: true, records: 5, head: 'absent' });
    });
  });

  it('reports a torn tail without repairing it (why: torn)', async () => {
    const lines = await writeLedger(4);
    writeFileSync(ledgerPath, `${lines.join('\n')}\n${lines[3]!.slice(0, 40)}`);
    expect(verifyLedger(ledgerPath)).toMatchObject({ ok: false, seq: 5, why: 'torn', line: 5 });
    expect(verifyLedger(ledgerPath)).toMatchObject({ ok: false, why: 'torn' });
  });
});

describe('HMAC chain', () => {
  it('seals every record with the chain key and verifies only with it', async () => {
    const lines = await writeLedger(5, key);
    expect(lines.every((l) => l.includes(`"hash":"hmac-sha256:${key.keyId}:`))).toBe(true);
    expect(verifyLedger(ledgerPath, { chainKey: key })).toMatchObject({
      ok: true,
      scheme: `hmac-sha256:${key.keyId}`,
    });
    expect(() => verifyLedger(ledgerPath)).toThrow(VerifyConfigError);
    expect(() => verifyLedger(ledgerPath, { chainKey: otherKey })).toThrow(/key of id/);
  });

  it('catches an edit whose hash was recomputed with plain SHA-256', async () => {
    const lines = await writeLedger(6, key);
    lines[2] = rehashedLine(lines[2]!, (rec) => {
      rec.approvedBy = 'mallory';
    });
    writeLines(lines);
    expect(verifyLedger(ledgerPath, { chainKey: key })).toMatchObject({ ok: false, seq: 3, why: 'edited' });
  });

  it('catches an edit whose HMAC was recomputed with another key, even under the right key id', async () => {
    const lines = await writeLedger(6, key);
    const rec = JSON.parse(lines[2]!) as Record<string, unknown>;
    rec.approvedBy = 'mallory';
    const forged = recordHash(rec, otherKey).split(':')[2];
    rec.hash = `hmac-sha256:${key.keyId}:${forged}`;
    lines[2] = canonicalJson(rec);
    writeLines(lines);
    expect(verifyLedger(ledgerPath, { chainKey: key })).toMatchObject({ ok: false, seq: 3, why: 'edited' });
  });

  it('catches a whole ledger rewritten with plain SHA-256 (why: unkeyed)', async () => {
    const lines = await writeLedger(4, key);
    let prev: string | null = null;
    const rewritten = lines.map((l) => {
      const rec = JSON.parse(l) as Record<string, unknown>;
      rec.prev = prev;
      rec.hash = recordHash(rec, undefined);
      prev = rec.hash as string;
      return canonicalJson(rec);
    });
    writeLines(rewritten);
    expect(verifyLedger(ledgerPath, { chainKey: key })).toMatchObject({ ok: false, seq: 1, why: 'unkeyed' });
  });

  it('refuses to extend an HMAC ledger without its key, and a plain one with a key', async () => {
    await writeLedger(2, key);
    const plain = Ledger.open(ledgerPath);
    await expect(plain.append(approval(9))).rejects.toThrow(/chained with hmac-sha256/);
    await plain.close();
    expect(readLines()).toHaveLength(2);
  });
});

describe('continuity ledger verify', () => {
  it('exits 0 with a one-line summary when intact', async () => {
    await writeLedger(3);
    const r = runCli(['ledger', 'verify', '--ledger', ledgerPath]);
    expect(r.code).toBe(0);
    // The three approvals were written unsigned (as before approvals were signed): the migration report.
    expect(r.stdout).toBe(
      `ledger ${ledgerPath}: intact, 3 records (seq 1..3), chain sha256\n` +
        "approvals: 0 signed by the approver key; 3 approvals that do not count (unsigned 3): attempts without the human's key, or approvals recorded before approvals were signed (docs/security.md)\n",
    );
  });

  it('exits 1 naming the first bad seq and why, with nothing on stdout', async () => {
    const lines = await writeLedger(5);
    lines.splice(1, 1);
    writeLines(lines);
    const r = runCli(['ledger', 'verify', '--ledger', ledgerPath]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/seq 2: removed/);
  });

  it('verifies an HMAC chain with the key file from CONTINUITY_CHAIN_KEY_FILE or --chain-key-file', async () => {
    const keyFile = join(tmp.dir, `chain-${n}.key`);
    writeFileSync(keyFile, Buffer.alloc(32, 7).toString('hex'));
    chmodSync(keyFile, 0o600);
    await writeLedger(3, key);
    expect(runCli(['ledger', 'verify', '--ledger', ledgerPath, '--chain-key-file', keyFile]).code).toBe(0);
    const viaEnv = runCli(['ledger', 'verify', '--ledger', ledgerPath], {
      env: cleanEnv({ CONTINUITY_CHAIN_KEY_FILE: keyFile }),
    });
    expect(viaEnv.code).toBe(0);
    expect(viaEnv.stdout).toContain(`chain hmac-sha256:${key.keyId}`);
    const noKey = runCli(['ledger', 'verify', '--ledger', ledgerPath]);
    expect(noKey.code).toBe(3);
    expect(noKey.stderr).toContain('CONTINUITY_CHAIN_KEY_FILE');
  });

  it('prints one JSON document with --json whatever the result, exit codes unchanged', async () => {
    const lines = await writeLedger(4);
    const ok = runCli(['ledger', 'verify', '--json', '--ledger', ledgerPath]);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual({
      ledger: ledgerPath,
      ok: true,
      records: 4,
      lastSeq: 4,
      scheme: 'sha256',
      quarantined: 0,
      head: 'checked',
      approvals: {
        signed: 0,
        attempts: { unsigned: 4, bad_signature: 0, unknown_key: 0, other_boundary: 0 },
        keys: [],
      },
    });

    lines.splice(2, 1);
    writeLines(lines);
    const bad = runCli(['ledger', 'verify', '--json', '--ledger', ledgerPath]);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({
      ledger: ledgerPath,
      ok: false,
      seq: 3,
      why: 'removed',
      line: 3,
    });
    expect(bad.stdout.trim().split('\n')).toHaveLength(1);

    const missing = join(tmp.dir, 'no-such-ledger.jsonl');
    const none = runCli(['ledger', 'verify', '--json', '--ledger', missing]);
    expect(none.code).toBe(3);
    expect(JSON.parse(none.stdout)).toMatchObject({
      ledger: missing,
      ok: false,
      error: expect.stringContaining('no such file'),
    });
    expect(none.stderr).toContain('no such file');
  });

  it('has --help', () => {
    const r = runCli(['ledger', 'verify', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--chain-key-file');
  });
});
