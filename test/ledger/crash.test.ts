/**
 * kill -9 at random moments during appends: the ledger verifies after quarantining at most the
 * torn tail, and keeps every append that had been reported done.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/ledger.js';
import { sidecarPaths } from '../../src/ledger/paths.js';
import { verifyLedger } from '../../src/ledger/verify.js';
import { parseReports, readRecords, tempDir, writerPath } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const ROUNDS = 64;
const PARALLEL = 4;
// A wave is PARALLEL writers started, two appends each and a kill: a few seconds on a loaded
// 2-core machine. The budget grows with the rounds, so a slow machine is never a failure.
const WAVE_BUDGET_MS = 12_000;

/**
 * Starts a writer that appends until killed and sends SIGKILL at a random point of its append
 * cycle. The cycle is measured, not assumed: the time between its first two reports (one append
 * with the lock taken in turn with the other writers) sets the window, and the kill comes a
 * uniformly random 0–3 cycles later (single, single, batch: every step of each kind of append,
 * from the tail read to the head and index updates and the report). So the kills cover the same
 * points on a loaded machine as on an idle one. Resolves with everything it reported before dying.
 */
function killDuringAppends(ledger: string, session: string): Promise<Map<number, string>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [writerPath, ledger, session, '0', 'batch'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let firstAt: number | undefined;
    let armed = false;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (armed) return;
      const now = performance.now();
      if (firstAt === undefined) {
        firstAt = now;
        return;
      }
      armed = true;
      setTimeout(() => child.kill('SIGKILL'), Math.random() * 3 * (now - firstAt));
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`writer ended by itself (${code}): ${err}`));
      else resolve(parseReports(out));
    });
  });
}

describe('ledger under kill -9', () => {
  it(`keeps every reported append through ${ROUNDS} kills and verifies after quarantining at most the torn tail`, {
    timeout: (ROUNDS / PARALLEL) * WAVE_BUDGET_MS,
  }, async () => {
    const ledger = join(tmp.dir, 'ledger.jsonl');
    const reported = new Map<number, string>();
    for (let round = 0; round < ROUNDS; round += PARALLEL) {
      const kills = Array.from({ length: PARALLEL }, (_, i) =>
        killDuringAppends(ledger, `crash-${round + i}`),
      );
      for (const seen of await Promise.all(kills)) {
        for (const [seq, hash] of seen) {
          // Two processes can never have been told the same seq.
          expect(reported.has(seq)).toBe(false);
          reported.set(seq, hash);
        }
      }
    }
    // Each writer is killed after its second report at the earliest.
    expect(reported.size).toBeGreaterThanOrEqual(2 * ROUNDS);

    // Opening repairs whatever the last kill left: at most the bytes after the last whole record.
    const before = readFileSync(ledger);
    const opened = Ledger.open(ledger);
    await opened.close();
    const after = readFileSync(ledger);
    if (opened.quarantined) {
      expect(after.length).toBe(opened.quarantined.offset);
      expect(before.length - after.length).toBe(opened.quarantined.length);
      expect(after.subarray(0, after.length).equals(before.subarray(0, after.length))).toBe(true);
    } else {
      expect(after.equals(before)).toBe(true);
    }

    const result = verifyLedger(ledger);
    expect(result.ok, JSON.stringify(result)).toBe(true);

    // Every append that had been reported done is there, at its seq, with its hash.
    const bySeq = new Map(readRecords(ledger).map((r) => [r.seq as number, r.hash as string]));
    for (const [seq, hash] of reported) expect(bySeq.get(seq)).toBe(hash);

    // Whatever was quarantined over the run is kept beside the ledger, never silently dropped.
    const q = sidecarPaths(ledger).quarantine;
    if (result.ok && result.quarantined > 0) {
      expect(existsSync(q)).toBe(true);
      for (const line of readFileSync(q, 'utf8').trim().split('\n')) {
        const entry = JSON.parse(line) as { length: number; bytesBase64: string };
        expect(Buffer.from(entry.bytesBase64, 'base64')).toHaveLength(entry.length);
      }
    }
    process.stdout.write(
      `kill -9 rounds: ${ROUNDS}, reported appends: ${reported.size}, records: ${bySeq.size} (stored, never reported: ${bySeq.size - reported.size}), torn tails quarantined: ${result.ok ? result.quarantined : '?'}\n`,
    );
  });
});
