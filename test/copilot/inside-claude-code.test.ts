/**
 * `continuity hook claude-code` inside GitHub Copilot CLI: Copilot 1.0.102 loads a repository's
 * `.claude/settings.json`, so the hooks `continuity init claude-code` writes run in its sessions.
 * Fed through real processes of the CLI the payloads and hook environment Copilot sent them on
 * the real binary (test/copilot-e2e: Claude Code's payloads, `source: "new"`, PreCompact's
 * transcript its own event log, `COPILOT_CLI=1` in the hook's environment, never a PostCompact
 * or SessionStart(compact)), and the session directory as Copilot writes it.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MCP_SERVER_NAME } from '../../src/adapters/core/mcp-names.js';
import {
  BIN,
  ledgerRecords,
  makeWorld,
  PAYMENTS_DECISIONS,
  PAYMENTS_VALUES,
  type Receiver,
  type Run,
  runCli,
  startReceiver,
  type World,
  writeTaskRecord,
} from '../claude-code/harness.js';
import {
  copilotHook,
  copilotSessionDir,
  type GateReply,
  gateReply,
  type HookRuntime,
  writeCopilotCheckpoint,
  writeToolCall,
} from './session.js';

const SESSION = '072cfb3d-5bea-499f-89c3-ee848c6c7cf1';

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

let world: World;
beforeEach(() => {
  world = makeWorld(receiver.endpoint);
  writeTaskRecord(world, PAYMENTS_DECISIONS);
  // `init claude-code` registers our restate server in .mcp.json, which Copilot starts too.
  writeFileSync(
    join(world.project, '.mcp.json'),
    JSON.stringify({
      mcpServers: { [MCP_SERVER_NAME]: { command: 'node', args: [BIN, 'mcp', '--runtime', 'claude-code'] } },
    }),
  );
});
afterEach(() => world.dispose());

/** What Copilot 1.0.102 puts in a hook's environment (recorded), beside the world's. */
function copilotEnv(): NodeJS.ProcessEnv {
  return {
    ...world.env,
    COPILOT_CLI: '1',
    COPILOT_CLI_BINARY_VERSION: '1.0.102',
    COPILOT_PROJECT_DIR: world.project,
    CLAUDE_PROJECT_DIR: world.project,
  };
}

function sessionDir(): string {
  return copilotSessionDir(world, SESSION);
}

function writeCheckpoint(): void {
  writeCopilotCheckpoint(world, SESSION, '001-session-072cfb3d.md');
}

function hookIn(
  runtime: HookRuntime,
  event: string,
  extra: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = copilotEnv(),
): Promise<Run> {
  return copilotHook(world, SESSION, runtime, event, extra, env);
}

function preCompact(runtime: HookRuntime = 'claude-code', env?: NodeJS.ProcessEnv): Promise<Run> {
  writeFileSync(join(sessionDir(), 'events.jsonl'), '');
  return hookIn(
    runtime,
    'PreCompact',
    { transcript_path: join(sessionDir(), 'events.jsonl'), trigger: 'auto', custom_instructions: '' },
    env,
  );
}

/** The gate's answer to Copilot's `create`, through `runtime`'s hook. */
async function write(
  file: string,
  runtime: HookRuntime = 'claude-code',
  extra: Record<string, unknown> = {},
  env?: NodeJS.ProcessEnv,
): Promise<GateReply> {
  return gateReply(await hookIn(runtime, 'PreToolUse', { ...writeToolCall(world, file), ...extra }, env));
}

function boundaryRecords(): Array<Record<string, unknown>> {
  if (!existsSync(world.ledger)) return [];
  return ledgerRecords(world).filter((r) => typeof r.boundaryId === 'string');
}

function boundaries(): string[] {
  return [...new Set(boundaryRecords().map((r) => r.boundaryId as string))];
}

describe('the Claude Code hooks inside Copilot CLI', () => {
  it('confirm a Copilot compaction from its checkpoint, hold the first write, and a preserved restatement releases it', async () => {
    expect(
      (await hookIn('claude-code', 'SessionStart', { source: 'new', initial_prompt: 'Work.' })).status,
    ).toBe(0);
    expect((await preCompact()).status).toBe(0);
    // The summary is being made: the context is intact, writes go through; nothing is a boundary yet.
    expect((await write('during.txt')).decision).toBe('allow');
    expect(boundaries()).toEqual([]);
    writeCheckpoint();
    const held = await write('first.txt');
    // Copilot runs a tool its hook asked about in prompt mode: the gate denies, saying why.
    expect(held.decision).toBe('deny');
    expect(held.reason).toContain('(unverified: post_observation_missing)');
    // The command, not the MCP tool: the server .mcp.json starts restates for Claude Code's adapter.
    expect(held.reason).toMatch(/observe --session \S+ --decisions - <<'EOF'/);
    expect(held.reason).not.toContain('mcp__');
    expect(boundaries()).toHaveLength(1);
    expect(boundaries()[0]).toMatch(/^cp-/);
    expect(new Set(boundaryRecords().map((r) => r.runtime))).toEqual(new Set(['copilot']));

    const restated = await runCli(['observe', '--session', SESSION, '--decisions', '-'], {
      input: JSON.stringify(PAYMENTS_VALUES),
      env: world.shellEnv,
      cwd: world.project,
    });
    expect(restated.status, restated.stderr).toBe(0);
    expect(restated.stdout).toContain('preserved');
    expect((await write('after.txt')).decision).toBe('allow');
    expect(boundaries()).toHaveLength(1);
  });

  it('with `init copilot`’s hooks as well: one boundary per compaction, and one gate', async () => {
    expect((await preCompact('copilot')).status).toBe(0);
    expect((await preCompact('claude-code')).status).toBe(0);
    writeCheckpoint();
    const [a, b] = await Promise.all([write('first.txt', 'copilot'), write('first.txt', 'claude-code')]);
    expect([a.decision, b.decision]).toEqual(['deny', 'deny']);
    expect(boundaries()).toHaveLength(1);
    const restated = await runCli(['observe', '--session', SESSION, '--decisions', '-'], {
      input: JSON.stringify(PAYMENTS_VALUES),
      env: world.shellEnv,
      cwd: world.project,
    });
    expect(restated.status, restated.stderr).toBe(0);
    expect((await write('after.txt', 'copilot')).decision).toBe('allow');
    expect((await write('after.txt', 'claude-code')).decision).toBe('allow');
    expect(boundaries()).toHaveLength(1);
  });

  it('open no boundary from a checkpoint without a PreCompact before it (no phantom boundary)', async () => {
    writeCheckpoint();
    expect((await write('a.txt')).decision).toBe('allow');
    expect(
      (await hookIn('claude-code', 'Stop', { transcript_path: join(sessionDir(), 'events.jsonl') })).status,
    ).toBe(0);
    expect(boundaries()).toEqual([]);
  });

  it('are Claude Code’s when the payload names a transcript that is not Copilot’s event log (Claude Code started from a Copilot shell)', async () => {
    const claudeTranscript = join(world.root, 'home', '.claude', 'projects', 'p', `${SESSION}.jsonl`);
    expect((await preCompact('claude-code')).status).toBe(0); // Copilot's: a pending pre in Copilot's state
    // Claude Code sends its own transcript with every event: with it, the hook is Claude Code's, whose
    // state has no pending pre and whose compactions Copilot's checkpoint files never confirm.
    writeCheckpoint();
    expect((await write('a.txt', 'claude-code', { transcript_path: claudeTranscript })).decision).toBe(
      'allow',
    );
    expect(boundaries()).toEqual([]);
  });

  it('are Claude Code’s without Copilot’s variable in the hook environment, whatever the payload looks like', async () => {
    const env = { ...world.env, CLAUDE_PROJECT_DIR: world.project };
    expect((await preCompact('claude-code', env)).status).toBe(0);
    writeCheckpoint();
    expect((await write('a.txt', 'claude-code', {}, env)).decision).toBe('allow');
    expect(boundaries()).toEqual([]);
  });
});
