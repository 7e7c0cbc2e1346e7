/**
 * The attack suite for H2's task record (issue 26): the agent rewrites `.continuity/task.json`
 * with `sed -i` to widen the scope, then restates the widened scope after the compaction. With the
 * task record sealed by the human, the pre snapshot keeps the sealed digests, records
 * `task_record_changed`, and the widened restatement is a change (`conflicting`), not `preserved`.
 * Through the real Claude Code hook entry and `continuity observe`.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compact,
  gate,
  ledgerRecords,
  makeWorld,
  PAYMENTS_DECISIONS,
  PAYMENTS_VALUES,
  type Receiver,
  runCli,
  startReceiver,
  type World,
  writeTaskRecord,
} from '../claude-code/harness.js';
import { atTerminal, ensureTerminalTools, withApproverKey } from '../support/human.js';
import { BIN } from '../support/world.js';

const WIDENED = { repository: 'acme/payments', paths: ['services'] };

let receiver: Receiver;
beforeAll(async () => {
  await ensureTerminalTools();
  receiver = await startReceiver();
}, 120_000);
afterAll(async () => {
  await receiver.close();
});

async function observe(world: World, sessionId: string, decisions: Record<string, unknown>) {
  const r = await runCli(['observe', '--session', sessionId, '--decisions', '-', '--json'], {
    input: JSON.stringify(decisions),
    env: world.shellEnv,
    cwd: world.project,
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { state: string; reason: string };
}

/** The agent's `sed -i` on the task record: the scope's paths widened to the whole tree. */
function agentWidensScope(world: World): void {
  const r = spawnSync(
    'setsid',
    ['-w', 'bash', '-c', `sed -i 's#"services/ledger"#"services"#' .contin*/task.json`],
    { cwd: world.project, env: world.shellEnv, encoding: 'utf8' },
  );
  expect(r.status, r.stderr).toBe(0);
}

async function seal(world: World): Promise<void> {
  const env = withApproverKey(world.shellEnv, dirname(world.project));
  world.shellEnv = env;
  const r = await atTerminal(process.execPath, [BIN, 'task', 'seal'], { env, cwd: world.project });
  expect(r.status, r.stdout).toBe(0);
  expect(r.stdout).toMatch(/task record sealed: 3 decisions, signed by ed25519:[0-9a-f]{32}/);
}

describe('a sealed task record', () => {
  it('a sed -i widening the scope is task_record_changed, and restating the widened scope is not preserved', async () => {
    const world = makeWorld(receiver.endpoint);
    try {
      writeTaskRecord(world, PAYMENTS_DECISIONS);
      await seal(world);
      agentWidensScope(world);
      await compact(world, 'seal-1', 'auto');
      const records = ledgerRecords(world).filter((r) => r.sessionId === 'seal-1');
      expect(records.map((r) => `${r.type}${r.reason ? `:${r.reason}` : ''}`)).toContain(
        'evidence_missing:task_record_changed',
      );
      const pre = records.find((r) => r.type === 'snapshot' && r.phase === 'pre') as {
        decisions: Record<string, { source?: string }>;
      };
      expect(pre.decisions.scope?.source).toBe('task-seal');
      const r = await observe(world, 'seal-1', { ...PAYMENTS_VALUES, scope: WIDENED });
      expect(r.state).toBe('conflicting');
      expect((await gate(world, 'seal-1', 'Write', { file_path: 'a.ts', content: 'x' })).decision).toBe(
        'deny',
      );
      // The sealed scope restated is preserved.
      expect((await observe(world, 'seal-1', PAYMENTS_VALUES)).state).toBe('preserved');
    } finally {
      world.dispose();
    }
  });

  it('unsealed (the migration path), the same sed -i is adopted as before: why sealing matters', async () => {
    const world = makeWorld(receiver.endpoint);
    try {
      writeTaskRecord(world, PAYMENTS_DECISIONS);
      agentWidensScope(world);
      await compact(world, 'unsealed-1', 'auto');
      expect((await observe(world, 'unsealed-1', { ...PAYMENTS_VALUES, scope: WIDENED })).state).toBe(
        'preserved',
      );
    } finally {
      world.dispose();
    }
  });

  it('a seal the agent rewrote does not verify: no pre snapshot (task_seal_invalid), and the gate asks', async () => {
    const world = makeWorld(receiver.endpoint);
    try {
      writeTaskRecord(world, PAYMENTS_DECISIONS);
      await seal(world);
      agentWidensScope(world);
      // The agent re-signs nothing: it edits the seal's digests to match its record.
      const sealDir = join(world.state, 'seals');
      const r = spawnSync('sh', ['-c', `sed -i 's/"revision": 1/"revision": 2/' ${sealDir}/*.json`], {
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
      await compact(world, 'forged-seal', 'auto');
      const missing = ledgerRecords(world).filter(
        (x) => x.sessionId === 'forged-seal' && x.type === 'evidence_missing',
      );
      expect(missing.map((m) => m.reason)).toContain('task_seal_invalid');
      expect((await gate(world, 'forged-seal', 'Write', { file_path: 'a.ts', content: 'x' })).decision).toBe(
        'ask',
      );
    } finally {
      world.dispose();
    }
  });
});
