/**
 * The OpenCode plugin's gate when it cannot reach a verdict. OpenCode awaits `tool.execute.before`
 * with no time limit of its own and runs the tool when the hook returns, so a gate that failed
 * silently, or waited for ever, would let the call run or hold the agent: it stops the call instead.
 * The plugin's hooks are driven directly here, as OpenCode calls them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';

const hang = vi.hoisted(() => ({ on: false }));
vi.mock('../../src/adapters/core/gate.js', async (original) => {
  const real = await original<typeof import('../../src/adapters/core/gate.js')>();
  return {
    ...real,
    // A gate step that never settles (a lock never released, a read that never returns).
    decideToolCall: (...args: Parameters<typeof real.decideToolCall>) =>
      hang.on ? new Promise<never>(() => {}) : real.decideToolCall(...args),
  };
});

const { createContinuityHooks, GATE_FAILED } = await import('../../src/adapters/opencode/adapter.js');

const dirs: string[] = [];
afterEach(() => {
  hang.on = false;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function plugin(extraEnv: NodeJS.ProcessEnv = {}) {
  const base = mkdtempSync(join(tmpdir(), 'oc-gate-'));
  dirs.push(base);
  const warnings: string[] = [];
  const hooks = createContinuityHooks(
    { directory: base, worktree: base },
    {
      env: { PATH: process.env.PATH, HOME: base, CONTINUITY_STATE_DIR: join(base, 'state'), ...extraEnv },
      warn: (l) => warnings.push(l),
    },
  );
  return { hooks, warnings };
}

describe('the OpenCode gate that cannot reach a verdict', () => {
  it('lets a write run when it can decide (the oracle that the calls below reach the gate)', async () => {
    const { hooks } = plugin();
    await expect(
      hooks['tool.execute.before'](
        { sessionID: 'ses_ok', tool: 'write', callID: 'c1' },
        { args: { filePath: 'a.txt', content: 'x' } },
      ),
    ).resolves.toBeUndefined();
  });

  it('stops the call when the gate fails on its way, even with no boundary known', async () => {
    const { hooks, warnings } = plugin();
    const out = {
      get args(): unknown {
        throw new Error('arguments unreadable');
      },
    };
    await expect(
      hooks['tool.execute.before'](
        { sessionID: 'ses_err', tool: 'bash', callID: 'c2' },
        out as { args: unknown },
      ),
    ).rejects.toThrow(GATE_FAILED);
    expect(warnings.join('\n')).toContain('gate: arguments unreadable');
  });

  it('stops the call at its own deadline when a step never settles, instead of holding the agent', async () => {
    const { hooks, warnings } = plugin({ CONTINUITY_HOOK_DEADLINE_MS: '200' });
    hang.on = true;
    await expect(
      hooks['tool.execute.before'](
        { sessionID: 'ses_hang', tool: 'bash', callID: 'c3' },
        { args: { command: 'make' } },
      ),
    ).rejects.toThrow(GATE_FAILED);
    expect(warnings.join('\n')).toContain('gate: no verdict within 200 ms');
  });
});
