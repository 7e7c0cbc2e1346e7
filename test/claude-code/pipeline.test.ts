import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadClaudeCodeConfig, resolveClaudeCodeEnv } from '../../src/adapters/claude-code/config.js';
import { routeOf } from '../../src/adapters/claude-code/hook.js';
import { routeOf as codexRouteOf } from '../../src/adapters/codex/hook.js';
import { decideToolCall } from '../../src/adapters/core/gate.js';
import {
  GATE_FAILED,
  type HookAdapter,
  type PayloadBase,
  runHookPipeline,
  sessionFiles,
} from '../../src/adapters/core/pipeline.js';
import { gateFile, stateDirOf, writeActivity, writeGateState } from '../../src/adapters/core/state.js';
import { BIN, compact, hook, makeWorld, payload, type World, writeTaskRecord } from './harness.js';

let world: World;
let counter = '';

beforeAll(() => {
  world = makeWorld('http://127.0.0.1:9');
  writeTaskRecord(world, { scope: { value: { paths: ['a'] } }, target: { value: 'main' } });
  // Counts the opens of each path by the hook process (the bundle calls `fs.openSync` through the
  // module object, so replacing it here sees every one).
  counter = join(world.root, 'count-opens.cjs');
  writeFileSync(
    counter,
    [
      "'use strict';",
      "const fs = require('node:fs');",
      'const opens = {};',
      'const open = fs.openSync;',
      'fs.openSync = function (path, ...rest) {',
      "  if (typeof path === 'string') opens[path] = (opens[path] || 0) + 1;",
      '  return open.call(this, path, ...rest);',
      '};',
      "process.on('exit', () => fs.writeFileSync(process.env.OPEN_COUNT_FILE, JSON.stringify(opens)));",
    ].join('\n'),
  );
});

afterAll(() => world.dispose());

/** Runs one hook event with the counter; returns its stdout and how often it opened each file. */
function countedHook(
  sessionId: string,
  event: string,
  extra: Record<string, unknown>,
): Promise<{ stdout: string; opens: Record<string, number> }> {
  const file = join(world.root, `opens-${sessionId}-${event}.json`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--require', counter, BIN, 'hook', 'claude-code'], {
      cwd: world.project,
      env: { ...world.env, OPEN_COUNT_FILE: file },
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.resume();
    child.on('error', reject);
    child.on('close', (status) => {
      if (status !== 0) return reject(new Error(`hook exited ${status}`));
      resolve({ stdout, opens: JSON.parse(readFileSync(file, 'utf8')) as Record<string, number> });
    });
    child.stdin.end(payload(world, sessionId, event, extra));
  });
}

/** How often the session's state files were opened for reading (writes go to a temporary name). */
function stateReads(opens: Record<string, number>, sessionId: string): { gate: number; activity: number } {
  const state = stateDirOf(world.env.CONTINUITY_STATE_DIR as string, 'claude-code');
  const gate = gateFile(state, sessionId);
  const activity = join(gate, '..', 'activity');
  return { gate: opens[gate] ?? 0, activity: opens[activity] ?? 0 };
}

const WRITE = { tool_name: 'Write', tool_input: { file_path: 'a.ts', content: 'x' }, tool_use_id: 't1' };
const EDIT_RESULT = {
  tool_name: 'Read',
  tool_input: { file_path: 'src/a.ts' },
  tool_response: {},
  tool_use_id: 't2',
};

describe('the hook pipeline reads each state file once per process', () => {
  it('PreToolUse, fast path: the gate cache once, and the gate answers nothing (allow)', async () => {
    expect((await hook(world, 'once-fast', 'SessionStart', { source: 'startup' })).status).toBe(0);
    await countedHook('once-fast', 'PreToolUse', WRITE); // derives "no compaction" into the cache
    const r = await countedHook('once-fast', 'PreToolUse', WRITE);
    expect(r.stdout).toBe('');
    expect(stateReads(r.opens, 'once-fast')).toEqual({ gate: 1, activity: 0 });
  });

  it('PreToolUse after a compaction: the cache once outside the lock (the slow path re-reads under it) and holds the write', async () => {
    await compact(world, 'once-held');
    const r = await countedHook('once-held', 'PreToolUse', WRITE);
    expect(r.stdout).toMatch(/"permissionDecision":"(ask|deny)"/);
    expect(stateReads(r.opens, 'once-held').gate).toBeLessThanOrEqual(2);
  });

  it('PostToolUse after a compaction: the gate cache once, the activity once outside the lock', async () => {
    await compact(world, 'once-post');
    const r = await countedHook('once-post', 'PostToolUse', EDIT_RESULT);
    // A change: read by the pipeline, then again under the session lock by recordActivity's
    // read-modify-write (another hook of the session may have written between).
    expect(stateReads(r.opens, 'once-post')).toEqual({ gate: 1, activity: 2 });
    const again = await countedHook('once-post', 'PostToolUse', EDIT_RESULT);
    // Unchanged activity: not recorded again; only its time moves on, under the lock.
    expect(stateReads(again.opens, 'once-post')).toEqual({ gate: 1, activity: 2 });
  });
});

describe('sessionFiles', () => {
  it('reads the gate cache and the activity on first use only, and again after forget()', () => {
    const state = stateDirOf(join(world.root, 'unit-state'), 'claude-code');
    const now = '2026-01-01T00:00:00.000Z';
    writeGateState(state, 'u1', null, now);
    writeActivity(state, 'u1', { state: 'working', atMs: 1 });
    const files = sessionFiles(state, 'u1');
    expect(files.gate()?.boundary).toBeNull();
    expect(files.activity()?.state).toBe('working');
    writeGateState(state, 'u1', null, '2026-01-02T00:00:00.000Z');
    writeActivity(state, 'u1', { state: 'idle', atMs: 2 });
    expect(files.gate()?.updatedAt).toBe(now);
    expect(files.activity()?.state).toBe('working');
    files.forget();
    expect(files.gate()?.updatedAt).toBe('2026-01-02T00:00:00.000Z');
    expect(files.activity()?.state).toBe('idle');
  });
});

describe('routes: payload → core event', () => {
  it('Claude Code: the gate events, activity, the recording events, nothing', () => {
    const p = (event: string, extra = {}) => ({ event, sessionId: 's', ...extra });
    expect(routeOf(p('PreToolUse', { toolName: 'Write', filePath: 'a' })).kind).toBe('gate');
    expect(routeOf(p('PreSkillShellCommand', { toolName: 'Bash', command: 'ls' })).kind).toBe('gate');
    expect(routeOf(p('Stop'))).toEqual({ kind: 'record', activity: 'idle' });
    expect(routeOf(p('PreCompact'))).toEqual({ kind: 'record' });
    expect(routeOf(p('Notification', { notificationType: 'auth_success' }))).toEqual({ kind: 'none' });
    expect(routeOf(p('Elsewhere'))).toEqual({
      kind: 'none',
      line: 'event Elsewhere is not used; nothing recorded',
    });
  });

  it('Codex: one tool event per patched file', () => {
    const patch =
      '*** Begin Patch\n*** Add File: a.ts\n+x\n*** Update File: b.ts\n@@\n-y\n+z\n*** End Patch\n';
    const r = codexRouteOf({ event: 'PreToolUse', sessionId: 's', toolName: 'apply_patch', command: patch });
    expect(r.kind === 'gate' ? r.tools.map((t) => t.filePath) : r).toEqual(['a.ts', 'b.ts']);
    expect(codexRouteOf({ event: 'PostCompact', sessionId: 's' })).toEqual({ kind: 'record' });
  });
});

describe('decideToolCall', () => {
  it('answers the most severe verdict over a call’s tool events', async () => {
    const state = stateDirOf(join(world.root, 'unit-state'), 'claude-code');
    const env = resolveClaudeCodeEnv(world.env, undefined);
    const { config } = loadClaudeCodeConfig(world.project, env);
    const ctx = {
      config,
      state,
      rederive: async () => ({ v: 2 as const, sessionId: 's', boundary: null, updatedAt: 'x' }),
      voice: { launcher: 'continuity', consequentialTools: 'Write' },
    };
    const tools = [
      { type: 'tool' as const, toolName: 'Write', kind: 'file_write' as const, filePath: 'src/a.ts' },
      {
        type: 'tool' as const,
        toolName: 'Write',
        kind: 'file_write' as const,
        filePath: '.continuity/task.json',
      },
    ];
    expect((await decideToolCall('s', tools.slice(0, 1), ctx)).verdict).toBe('allow');
    expect((await decideToolCall('s', tools, ctx)).verdict).toBe('ask');
  });
});

describe('a gate that fails before its verdict', () => {
  // An empty answer is every runtime's `allow`: a throw on the gate's path must still answer.
  type Fake = HookAdapter<PayloadBase, undefined, undefined>;
  function fakeAdapter(event: string, step: Partial<Fake>): Fake {
    return {
      name: 'fake',
      parse: () => ({ ok: true, payload: { event, sessionId: 's-1' }, local: undefined }),
      open: () => ({
        deadlineMs: 5_000,
        configure: () => ({
          run: undefined,
          state: stateDirOf(world.state, 'fake'),
          gate: { cached: () => undefined } as never,
        }),
      }),
      route: (p) =>
        p.event === 'PreToolUse'
          ? { kind: 'gate', tools: [{ tool: 'Write', kind: 'file', paths: ['a'] } as never] }
          : { kind: 'record' },
      gateOutput: (answer) => JSON.stringify(answer),
      record: async () => '',
      ...step,
    };
  }
  async function run(adapter: Fake): Promise<{ out: string; err: string }> {
    let out = '';
    let err = '';
    await runHookPipeline(
      {
        readInput: async () => ({ buffer: Buffer.from('{}'), truncated: false }),
        stdout: { write: (t: string) => (out += t) },
        stderr: { write: (t: string) => (err += t) },
        env: {},
      },
      adapter,
    );
    return { out, err };
  }

  it('asks when confirming a pending compaction throws', async () => {
    const { out, err } = await run(
      fakeAdapter('PreToolUse', { settle: () => Promise.reject(new Error('unreadable event log')) }),
    );
    expect(JSON.parse(out)).toMatchObject({ verdict: 'ask', code: 'gate_failed', reason: GATE_FAILED });
    expect(err).toContain('unreadable event log');
  });

  it('asks when loading the configuration throws', async () => {
    const adapter = fakeAdapter('PreToolUse', {});
    adapter.open = () => ({
      deadlineMs: 5_000,
      configure: () => {
        throw new Error('config.json: not a regular file');
      },
    });
    const { out } = await run(adapter);
    expect(JSON.parse(out)).toMatchObject({ verdict: 'ask', code: 'gate_failed' });
  });

  it('answers nothing for a recording event that throws (it never holds the agent)', async () => {
    const { out, err } = await run(
      fakeAdapter('PostToolUse', { record: () => Promise.reject(new Error('disk full')) }),
    );
    expect(out).toBe('');
    expect(err).toContain('disk full');
  });
});
