/**
 * A gate that waits on a promise nothing can settle (its slow path returns one and leaves no timer
 * or handle behind) must not end quietly when the event loop drains: no output is "no objection".
 * The hook's watchdog answers on the drain as on its deadline. Through the real hook entry, with
 * ./drained-slow-path.cjs preloaded into the hook process.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  compact,
  makeWorld,
  PAYMENTS_DECISIONS,
  payload,
  type Receiver,
  startReceiver,
  type World,
  writeTaskRecord,
} from './harness.js';

const DRAIN = join(import.meta.dirname, 'drained-slow-path.cjs');

let receiver: Receiver;
let world: World;
beforeAll(async () => {
  receiver = await startReceiver();
  world = makeWorld(receiver.endpoint);
  writeTaskRecord(world, PAYMENTS_DECISIONS);
}, 120_000);
afterAll(async () => {
  world.dispose();
  await receiver.close();
});

function drainedGate(
  runtime: string,
  input: string,
): { stdout: string; stderr: string; status: number | null } {
  const r = spawnSync(process.execPath, ['--require', DRAIN, BIN, 'hook', runtime], {
    input,
    env: world.env,
    cwd: world.project,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { stdout: r.stdout, stderr: r.stderr, status: r.status };
}

describe('a gate whose slow path never settles and leaves nothing pending', () => {
  it('Claude Code: asks (never the silent no-objection), exit 0', async () => {
    await compact(world, 'drained-1', 'auto');
    const r = drainedGate(
      'claude-code',
      payload(world, 'drained-1', 'PreToolUse', {
        tool_name: 'Write',
        tool_input: { file_path: 'a.ts', content: 'x' },
      }),
    );
    expect(r.status).toBe(0);
    expect(r.stderr).toContain('nothing left to wait for');
    const out = JSON.parse(r.stdout) as { hookSpecificOutput: { permissionDecision: string } };
    expect(out.hookSpecificOutput.permissionDecision).toBe('ask');
  });

  it('Codex: denies (its ask), exit 0', () => {
    const r = drainedGate(
      'codex',
      JSON.stringify({
        session_id: '019a0000-0000-7000-8000-000000000001',
        hook_event_name: 'PreToolUse',
        cwd: world.project,
        tool_name: 'apply_patch',
        tool_input: { command: '*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch' },
        turn_id: 't',
        model: 'm',
        transcript_path: null,
        permission_mode: 'default',
        tool_use_id: 'c1',
      }),
    );
    expect(r.status).toBe(0);
    expect(r.stderr).toContain('nothing left to wait for');
    const out = JSON.parse(r.stdout) as { hookSpecificOutput: { permissionDecision: string } };
    expect(out.hookSpecificOutput.permissionDecision).toBe('deny');
  });
});
