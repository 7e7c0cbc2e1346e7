/**
 * The approver key anchored outside the ledger, on the hook path. On a ledger with no approver key
 * yet (the human never ran `continuity key init` there, or the agent deleted the ledger, its head
 * and its pin), the first key pinned is trusted because it is first: an agent that makes a key of
 * its own, on a terminal of its own, can approve its own change. A runtime started with
 * `CONTINUITY_APPROVER_KEYS` naming the human's key trusts no chain that starts elsewhere, and the
 * gate keeps holding writes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compact,
  gate,
  makeWorld,
  PAYMENTS_DECISIONS,
  PAYMENTS_VALUES,
  type Receiver,
  runCli,
  startReceiver,
  type World,
  writeTaskRecord,
} from '../claude-code/harness.js';
import { atTerminal, ensureTerminalTools } from '../support/human.js';
import { BIN } from '../support/world.js';

const AGENT_PASSPHRASE = 'a passphrase the agent chose itself';
const CHANGED_SCOPE = { repository: 'acme/payments', paths: ['services'] };
const WRITE = { file_path: 'src/a.ts', content: 'x' };

let receiver: Receiver;
beforeAll(async () => {
  await ensureTerminalTools();
  receiver = await startReceiver();
}, 120_000);
afterAll(async () => {
  await receiver.close();
});

/**
 * The agent's own `continuity` on a pseudo-terminal it opened, typing its own passphrase, with the
 * variable unset (its shell's environment is its own; the runtime's, the hooks', is not).
 */
function agentAtTerminal(world: World, args: string[], answers: string[]) {
  const { CONTINUITY_APPROVER_KEYS: _unset, ...env } = world.shellEnv;
  return atTerminal(process.execPath, [BIN, ...args], {
    env: { ...env, XDG_CONFIG_HOME: `${world.project}/../agent-config` },
    cwd: world.project,
    answers,
  });
}

/** A conflicting boundary, then the agent's own key pinned first and its own approval of the change. */
async function selfApproved(world: World, sessionId: string): Promise<void> {
  writeTaskRecord(world, PAYMENTS_DECISIONS);
  await compact(world, sessionId, 'auto');
  const observed = await runCli(['observe', '--session', sessionId, '--decisions', '-', '--json'], {
    input: JSON.stringify({ ...PAYMENTS_VALUES, scope: CHANGED_SCOPE }),
    env: world.shellEnv,
    cwd: world.project,
  });
  expect(JSON.parse(observed.stdout).state).toBe('conflicting');
  const init = await agentAtTerminal(world, ['key', 'init'], [AGENT_PASSPHRASE, AGENT_PASSPHRASE]);
  expect(init.status, init.stdout).toBe(0);
  const approve = await agentAtTerminal(
    world,
    [
      'approve',
      ...['--session', sessionId, '--decision', 'scope'],
      ...['--from', JSON.stringify(PAYMENTS_DECISIONS.scope.value), '--to', JSON.stringify(CHANGED_SCOPE)],
      ...['--ref', 'SELF-1', '--by', 'agent'],
    ],
    [AGENT_PASSPHRASE],
  );
  expect(approve.status, approve.stdout).toBe(0);
}

describe("an agent's own first key on a ledger that had none", () => {
  it('is trusted where the ledger is the only anchor: its approval releases the gate (the documented limit)', async () => {
    const world = makeWorld(receiver.endpoint);
    try {
      await selfApproved(world, 'tofu-1');
      expect((await gate(world, 'tofu-1', 'Write', WRITE)).decision).toBe('allow');
    } finally {
      world.dispose();
    }
  });

  it('is not trusted by a gate started with CONTINUITY_APPROVER_KEYS naming the human key: writes stay held', async () => {
    const human = `ed25519:${'a'.repeat(32)}`;
    const world = makeWorld(receiver.endpoint, { CONTINUITY_APPROVER_KEYS: human });
    try {
      await selfApproved(world, 'anchored-1');
      const g = await gate(world, 'anchored-1', 'Write', WRITE);
      expect(g.decision).toBe('deny');
      expect(g.reason).toContain('conflicting');
    } finally {
      world.dispose();
    }
  });
});
