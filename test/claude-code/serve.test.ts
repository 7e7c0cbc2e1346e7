/**
 * The hooks' spans through the real pipeline: `continuity serve` (a child process on a free
 * port) correlates what the hooks and `continuity observe` export into the same states the gate
 * derives from the ledger, including an approval a human recorded between two restatements.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approverDir, keyStoreFiles } from '../../src/authority/key-store.js';
import { withApproverKey } from '../support/human.js';
import { BIN, gate, hook, makeWorld, runCli, type World, writeTaskRecord } from './harness.js';

let serve: ChildProcess;
let base = '';
let world: World;

beforeAll(async () => {
  world = makeWorld('http://127.0.0.1:9');
  // The human's approver key (where `runCli` approve finds it), and serve trusting its public key.
  const human = withApproverKey(world.shellEnv, world.root);
  const publicKey = keyStoreFiles(approverDir(human)).publicKey;
  const config = join(world.root, 'serve.yaml');
  writeFileSync(
    config,
    `server:\n  port: 0\nstate:\n  dir: ${join(world.root, 'serve-state')}\ncorrelation:\n  approverKeys: [${JSON.stringify(publicKey)}]\n`,
  );
  serve = spawn(process.execPath, [BIN, 'serve', '--config', config], {
    env: world.shellEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  base = await new Promise<string>((resolve, reject) => {
    let out = '';
    serve.stdout!.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const m = /"metrics":"(http:\/\/127\.0\.0\.1:\d+)\/metrics"/.exec(out);
      if (m) resolve(m[1]!);
    });
    serve.on('exit', (code) => reject(new Error(`continuity serve exited ${code}`)));
  });
  world.env.CONTINUITY_OTLP_ENDPOINT = base;
  world.shellEnv.CONTINUITY_OTLP_ENDPOINT = base;
});

afterAll(async () => {
  if (serve.pid !== undefined && serve.exitCode === null) {
    const exited = new Promise((resolve) => serve.on('exit', resolve));
    process.kill(serve.pid, 'SIGTERM');
    await exited;
  }
  world.dispose();
});

const DECISIONS = {
  scope: { repository: 'acme/payments', paths: ['services/ledger'] },
  approval_boundary: { requires_human: ['deploy', 'schema_migration'] },
  acceptance_test: { command: 'npm test -- ledger', must_pass: true },
};
const WIDER = {
  ...DECISIONS,
  scope: { repository: 'acme/payments', paths: ['services/ledger', 'services/billing'] },
};

async function metrics(): Promise<string> {
  const res = await fetch(`${base}/metrics`);
  return res.text();
}

/** Scrapes until `ok` holds (the service updates its gauges between scrapes), or gives the last text. */
async function metricsWhen(ok: (text: string) => boolean): Promise<string> {
  let text = '';
  for (let i = 0; i < 50; i++) {
    text = await metrics();
    if (ok(text)) return text;
    await new Promise((r) => setTimeout(r, 100));
  }
  return text;
}

async function compact(sessionId: string): Promise<void> {
  await hook(world, sessionId, 'PreCompact', { trigger: 'auto' });
  await hook(world, sessionId, 'PostCompact', { trigger: 'auto', compact_summary: 'summary' });
}

async function observe(sessionId: string, decisions: unknown): Promise<string> {
  const r = await runCli(['observe', '--session', sessionId, '--decisions', '-', '--json'], {
    input: JSON.stringify(decisions),
    env: world.shellEnv,
    cwd: world.project,
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout).state as string;
}

describe('continuity serve correlates the hooks', () => {
  it('agrees with the gate: preserved, conflicting, then approved_change after a human approval', async () => {
    writeTaskRecord(world, Object.fromEntries(Object.entries(DECISIONS).map(([n, v]) => [n, { value: v }])));
    await compact('serve-preserved');
    expect(await observe('serve-preserved', DECISIONS)).toBe('preserved');

    await compact('serve-conflict');
    expect(await observe('serve-conflict', WIDER)).toBe('conflicting');
    expect((await gate(world, 'serve-conflict', 'Write', { file_path: 'a.ts', content: 'x' })).decision).toBe(
      'deny',
    );
    let text = await metricsWhen((t) => t.includes('session_id="serve-conflict"'));
    expect(text).toMatch(
      /continuity_boundaries_total\{(?=[^}]*continuity_state="preserved")(?=[^}]*continuity_runtime="claude-code")[^}]*\} 1/,
    );
    expect(text).toMatch(
      /continuity_needs_human\{session_id="serve-conflict",[^}]*continuity_state="conflicting"[^}]*\} 1/,
    );

    const approve = await runCli(
      [
        'approve',
        '--session',
        'serve-conflict',
        '--decision',
        'scope',
        '--from',
        JSON.stringify(DECISIONS.scope),
        '--to',
        JSON.stringify(WIDER.scope),
        '--ref',
        'CHG-7',
        '--by',
        'reviewer-1',
      ],
      { env: world.shellEnv, cwd: world.project },
    );
    expect(approve.status, approve.stderr).toBe(0);
    expect((await gate(world, 'serve-conflict', 'Write', { file_path: 'a.ts', content: 'x' })).decision).toBe(
      'allow',
    );
    // Restating again sends the approval span before the new post span: serve agrees.
    expect(await observe('serve-conflict', WIDER)).toBe('approved_change');
    text = await metricsWhen((t) => t.includes('continuity_reason="approved_chain"'));
    expect(text).toMatch(
      /continuity_boundaries_total\{(?=[^}]*continuity_state="approved_change")(?=[^}]*continuity_reason="approved_chain")(?=[^}]*continuity_runtime="claude-code")[^}]*\} 1/,
    );
    expect(text).toMatch(/continuity_sessions\{[^}]*continuity_state="approved_change"[^}]*\} 1/);
    // The gauges tell the truth after the change: the session no longer needs a human (its series
    // reads 0, none reads 1) and no session is left in a conflicting cell.
    expect(text).toMatch(
      /continuity_needs_human\{session_id="serve-conflict",[^}]*continuity_state="conflicting"[^}]*\} 0/,
    );
    expect(text).not.toMatch(/continuity_needs_human\{session_id="serve-conflict",[^}]*\} 1/);
    const conflictingCells = [
      ...text.matchAll(/^continuity_sessions\{[^}]*continuity_state="conflicting"[^}]*\} (\S+)/gm),
    ];
    expect(conflictingCells.length).toBeGreaterThan(0);
    expect(conflictingCells.map((m) => Number(m[1]))).toEqual(conflictingCells.map(() => 0));
  });
});
