/**
 * `approverSigner` (the app's signer for `recordApproval({ signer })`): the human's key, unlocked
 * by the passphrase typed at the app's controlling terminal, for one boundary. The human is a
 * pseudo-terminal typing the passphrase (../support/human.ts); the agent is a process with no
 * controlling terminal (`setsid`), holding every file the human has.
 */
import { spawnSync } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approverDir, keyStoreFiles } from '../../src/authority/key-store.js';
import {
  approvalStatement,
  keyIdOfHex,
  publicKeyFromHex,
  publicKeyHex,
  verifyStatement,
} from '../../src/authority/signing.js';
import { digestValue } from '../../src/digest/digest.js';
import { atTerminal, ensureTerminalTools, HUMAN_PASSPHRASE, withApproverKey } from '../support/human.js';

const ROOT = new URL('../..', import.meta.url).pathname;

/** An app's script: unlocks a signer for boundary b-1 and prints what it signs, as JSON. */
const SCRIPT = `
import { approverSigner } from 'agent-continuity';
const statement = (boundaryId, keyId) => ({ kind: 'continuity.approval/v1', sessionId: 's-1', boundaryId, decision: 'scope', fromDigest: ${JSON.stringify(digestValue('a'))}, toDigest: ${JSON.stringify(digestValue('b'))}, approvalRef: 'CHG-1', approvedBy: 'reviewer-1', approvedAt: '2026-12-01T00:00:00Z', keyId });
try {
  const signer = await approverSigner('b-1');
  let other = 'signed';
  try { signer.sign(statement('b-2', signer.keyId)); } catch (e) { other = 'refused'; }
  console.log('RESULT ' + JSON.stringify({ boundaryId: signer.boundaryId, keyId: signer.keyId, signature: signer.sign(statement('b-1', signer.keyId)), other }));
} catch (e) {
  console.log('ERROR ' + e.name + ': ' + e.message);
  process.exit(4);
}
`;

describe('approverSigner', () => {
  let home: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    await ensureTerminalTools();
    home = mkdtempSync(join(tmpdir(), 'continuity-app-signer-'));
    env = withApproverKey({ ...process.env, XDG_CONFIG_HOME: undefined }, home);
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it("signs approvals of its boundary only, with the human's key, after the passphrase is typed at the terminal", async () => {
    const r = await atTerminal(process.execPath, ['--input-type=module', '-e', SCRIPT], { env, cwd: ROOT });
    expect(r.status, r.stdout).toBe(0);
    expect(r.stdout).toContain('Approving a change of boundary b-1 with approver key ed25519:');
    expect(r.stdout).not.toContain(HUMAN_PASSPHRASE);
    const out = JSON.parse(/RESULT (.*)/.exec(r.stdout)![1]!) as Record<string, string>;
    const pub = keyStoreFiles(approverDir(env)).publicKey;
    const publicHex = publicKeyHex(createPublicKey(readFileSync(pub, 'utf8')));
    expect(out.keyId).toBe(keyIdOfHex(publicHex));
    expect(out.boundaryId).toBe('b-1');
    expect(out.other).toBe('refused');
    const statement = approvalStatement({
      sessionId: 's-1',
      boundaryId: 'b-1',
      decision: 'scope',
      fromDigest: digestValue('a'),
      toDigest: digestValue('b'),
      approvalRef: 'CHG-1',
      approvedBy: 'reviewer-1',
      approvedAt: '2026-12-01T00:00:00Z',
      keyId: out.keyId!,
    });
    expect(verifyStatement(statement, out.signature, publicKeyFromHex(publicHex)!)).toBe(true);
  });

  it('signs nothing for a wrong passphrase', async () => {
    const r = await atTerminal(process.execPath, ['--input-type=module', '-e', SCRIPT], {
      env,
      cwd: ROOT,
      answers: ['not the passphrase at all'],
    });
    expect(r.status).toBe(4);
    expect(r.stdout).toContain('ERROR KeyStoreError: approver key: wrong passphrase');
    expect(r.stdout).not.toContain('RESULT');
  });

  it('signs nothing without a controlling terminal (the agent holds every file, not the human)', () => {
    const r = spawnSync('setsid', ['-w', process.execPath, '--input-type=module', '-e', SCRIPT], {
      env,
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    });
    expect(r.status).toBe(4);
    expect(r.stdout).toContain('ERROR NoTerminalError: approverSigner: no terminal');
    expect(r.stdout).not.toContain('RESULT');
  });
});
