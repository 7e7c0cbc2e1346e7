/**
 * The in-process core of the framework integrations (src/integrations/in-process) without a
 * framework: the calls each integration translates onto, and what they do when given bad input
 * or when the evidence cannot be read. The real frameworks run in test/frameworks.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SUMMARY_INSTRUCTION_PREFIX } from '../../src/adapters/core/messages.js';
import { createAiSdkContinuity } from '../../src/integrations/ai-sdk/index.js';
import {
  createFrameworkContinuity,
  RESTATE_TOOL_NAME,
  restateToolParameters,
} from '../../src/integrations/in-process/continuity.js';
import { writeKey } from '../support/task.js';

const VALUES = {
  scope: 'SCOPE-VALUE-91ab',
  target: 'release/VALUE-3.1',
  acceptance_test: 'npm test -- VALUE-77',
};

let root: string;
let project: string;
let env: NodeJS.ProcessEnv;
let warnings: string[];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'in-process-'));
  project = join(root, 'project');
  mkdirSync(join(project, '.continuity'), { recursive: true });
  mkdirSync(join(root, 'state'), { recursive: true });
  writeKey(join(root, 'digest.key'));
  writeKey(join(root, 'chain.key'));
  writeFileSync(
    join(project, '.continuity', 'task.json'),
    JSON.stringify({
      task: 't',
      decisions: Object.fromEntries(Object.entries(VALUES).map(([k, v]) => [k, { value: v }])),
    }),
  );
  env = {
    PATH: process.env.PATH,
    CONTINUITY_STATE_DIR: join(root, 'state'),
    CONTINUITY_LEDGER: join(root, 'state', 'ledger.jsonl'),
    CONTINUITY_DIGEST_KEY_FILE: join(root, 'digest.key'),
    CONTINUITY_CHAIN_KEY_FILE: join(root, 'chain.key'),
    CONTINUITY_OTLP_ENDPOINT: 'http://127.0.0.1:9',
    CONTINUITY_OTLP_TIMEOUT_MS: '200',
  };
  warnings = [];
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function continuity() {
  return createFrameworkContinuity('langchain', {
    projectDir: project,
    env,
    onWarning: (l) => warnings.push(l),
  });
}

describe('the in-process core', () => {
  it('captures names and the summarizer sentence without values, writes nothing until a compaction', () => {
    const c = continuity();
    const held = c.capture('s-1');
    expect([...held.names].sort()).toEqual(['acceptance_test', 'scope', 'target']);
    expect(held.instruction.startsWith(SUMMARY_INSTRUCTION_PREFIX)).toBe(true);
    expect(held.instruction).not.toContain(VALUES.scope);
    expect(held.capture.ok).toBe(true);
  });

  it('a compaction asks for the restatement once per boundary; the gate denies until it, allows after', async () => {
    const c = continuity();
    expect((await c.gate('s-1', { name: 'write_file' })).verdict).toBe('allow');
    const first = await c.compacted('s-1', { signal: 'test', held: c.capture('s-1') });
    expect(first?.context).toContain('[continuity] This session was just compacted');
    expect(first?.context).toContain(RESTATE_TOOL_NAME);
    const again = await c.compacted('s-1', { signal: 'test' });
    expect(again?.context, 'asked once per boundary').toBeUndefined();
    const denied = await c.gate('s-1', { name: 'write_file' });
    expect([denied.verdict, denied.code]).toEqual(['deny', 'state_blocks']);
    expect((await c.gate('s-1', { name: RESTATE_TOOL_NAME })).verdict, 'restating always passes').toBe(
      'allow',
    );
    const text = await c.restateText('s-1', { decisions: VALUES });
    expect(text).toContain('continuity: preserved');
    expect((await c.gate('s-1', { name: 'write_file' })).verdict).toBe('allow');
  });

  it('refuses what it cannot record: a session id that is not opaque, a restatement without decisions', async () => {
    const c = continuity();
    expect(c.isSessionId('../etc/passwd')).toBe(false);
    expect(await c.compacted('/abs/path', { signal: 'test', held: c.capture('/abs/path') })).toBeUndefined();
    expect(warnings.join('\n')).toContain('not an opaque identifier');
    expect(warnings.join('\n')).not.toContain('/abs/path');
    expect(await c.restateText(undefined, { decisions: {} })).toContain('no session id');
    expect(await c.restateText('s-1', { nope: 1 })).toContain('expected {"decisions"');
  });

  it('asks (never allows) when the evidence of a session it saw compacted cannot be read', async () => {
    const c = continuity();
    await c.compacted('s-2', { signal: 'test', held: c.capture('s-2') });
    // The state directory and the ledger are gone, a file in their place (root reads through modes).
    rmSync(join(root, 'state'), { recursive: true, force: true });
    writeFileSync(join(root, 'state'), 'not a directory');
    const answer = await c.gate('s-2', { name: 'write_file' });
    expect([answer.verdict, answer.code]).toEqual(['ask', 'state_unknown']);
  });

  it('a describeTool that throws makes the call one the gate cannot inspect (ask after a compaction)', async () => {
    const c = createFrameworkContinuity('langchain', {
      projectDir: project,
      env,
      describeTool: () => {
        throw new Error('boom');
      },
      onWarning: (l) => warnings.push(l),
    });
    await c.compacted('s-3', { signal: 'test', held: c.capture('s-3') });
    await c.restateText('s-3', { decisions: VALUES });
    const answer = await c.gate('s-3', { name: 'write_file', input: { path: 'x' } });
    expect([answer.verdict, answer.code]).toEqual(['ask', 'uninspectable_ask']);
  });

  it('gives each framework a fresh tool schema (a validator may annotate it)', () => {
    const a = restateToolParameters();
    (a as Record<string, unknown>).__annotated = true;
    expect(restateToolParameters()).not.toHaveProperty('__annotated');
  });
});

describe('the AI SDK recipe without the AI SDK', () => {
  it('maps the gate onto toolApproval statuses and the session onto session.id', async () => {
    const r = createAiSdkContinuity({ projectDir: project, env, onWarning: (l) => warnings.push(l) });
    expect(r.enrichSpan({ runtimeContext: { sessionId: 'chat-1' } })).toEqual({ 'session.id': 'chat-1' });
    expect(r.enrichSpan({ runtimeContext: { sessionId: '/not/opaque' } })).toBeUndefined();
    expect(r.enrichSpan({ runtimeContext: undefined })).toBeUndefined();
    const before = await r.toolApproval({
      toolCall: { toolName: 'write_file' },
      runtimeContext: { sessionId: 'chat-1' },
    });
    expect(before).toBe('not-applicable');
    const messages = await r.compact('chat-1', async (instruction) => {
      expect(instruction.startsWith(SUMMARY_INSTRUCTION_PREFIX)).toBe(true);
      return [{ role: 'user', content: 'summary' }];
    });
    expect(messages.map((m) => m.role)).toEqual(['user', 'user']);
    const after = await r.toolApproval({
      toolCall: { toolName: 'write_file' },
      runtimeContext: { sessionId: 'chat-1' },
    });
    expect(after).toMatchObject({ type: 'denied' });
    // A summarizer that fails records nothing and throws to the application.
    await expect(r.compact('chat-2', async () => Promise.reject(new Error('model down')))).rejects.toThrow(
      'model down',
    );
    expect(
      await r.toolApproval({ toolCall: { toolName: 'write_file' }, runtimeContext: { sessionId: 'chat-2' } }),
    ).toBe('not-applicable');
  });
});
