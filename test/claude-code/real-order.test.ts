/**
 * The Claude Code adapter against the event orders the real binary (2.1.328) sends, replayed
 * through real processes of the CLI: SessionStart(compact) before PostCompact, InstructionsLoaded
 * late or never, a lone PreCompact, duplicated hook registrations, subagents, `/clear`,
 * notifications, PowerShell, context fill, and an approved change carried into the next boundary.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUMMARY_INSTRUCTION_PREFIX, summaryInstruction } from '../../src/adapters/core/messages.js';
import {
  ATTR_SESSION_ID,
  ATTR_TOKENS_AFTER,
  ATTR_TOKENS_BEFORE,
  decisionAttr,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import {
  compact,
  gate,
  hook,
  ledgerRecords,
  makeWorld,
  PAYMENTS_DECISIONS,
  PAYMENTS_VALUES,
  type Receiver,
  runCli,
  startReceiver,
  type World,
  writeTaskRecord,
} from './harness.js';

const DECISIONS = PAYMENTS_DECISIONS;
const VALUES = PAYMENTS_VALUES;
const WRITE = { file_path: 'src/a.ts', content: 'x' };

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

function types(world: World): string[] {
  if (!existsSync(world.ledger)) return [];
  return ledgerRecords(world)
    .filter((r) => r.type !== 'activity')
    .map((r) => `${r.type}${r.phase ? `:${r.phase}` : ''}${r.reason ? `:${r.reason}` : ''}`);
}

async function observe(world: World, sessionId: string, decisions: Record<string, unknown>) {
  const r = await runCli(['observe', '--session', sessionId, '--decisions', '-', '--json'], {
    input: JSON.stringify(decisions),
    env: world.shellEnv,
    cwd: world.project,
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { state: string; reason: string; boundaryId: string; writes: string };
}

async function withWorld(fn: (world: World) => Promise<void>, extra: NodeJS.ProcessEnv = {}): Promise<void> {
  const world = makeWorld(receiver.endpoint, extra);
  try {
    writeTaskRecord(world, DECISIONS);
    await fn(world);
  } finally {
    world.dispose();
  }
}

describe('the real order: PreCompact → SessionStart(compact) → PostCompact → InstructionsLoaded(compact)', () => {
  it('makes one boundary with its pre snapshot, so a faithful restatement is preserved and the write goes through', () =>
    withWorld(async (world) => {
      const sid = 'real-order-1';
      await hook(world, sid, 'SessionStart', { source: 'startup' });
      const pre = await hook(world, sid, 'PreCompact', { trigger: 'manual', custom_instructions: null });
      // Nothing is recorded until the compaction is confirmed.
      expect(types(world)).toEqual([]);
      const start = await hook(world, sid, 'SessionStart', { source: 'compact', model: 'claude-opus-5-5' });
      const post = await hook(world, sid, 'PostCompact', { trigger: 'manual', compact_summary: 'SUMMARY' });
      const loaded = await hook(world, sid, 'InstructionsLoaded', {
        file_path: join(world.project, 'CLAUDE.md'),
        memory_type: 'Project',
        load_reason: 'compact',
      });
      for (const r of [pre, start, post, loaded]) expect(r.status).toBe(0);
      expect(pre.stdout).toBe(`${summaryInstruction(['approval_boundary', 'scope', 'acceptance_test'])}\n`);
      expect(JSON.parse(start.stdout).hookSpecificOutput.hookEventName).toBe('SessionStart');
      expect(post.stdout).toBe('');
      expect(loaded.stdout).toBe(''); // InstructionsLoaded has no JSON output
      expect(types(world)).toEqual(['snapshot:pre', 'boundary']);
      expect((await gate(world, sid, 'Write', WRITE)).decision).toBe('deny');
      const result = await observe(world, sid, VALUES);
      expect(result.state).toBe('preserved');
      expect((await gate(world, sid, 'Write', WRITE)).decision).toBe('allow');
      expect(types(world)).not.toContain('evidence_missing:pre:pre_hook_missing');
    }));

  it('asks the summarizer, in one stable sentence, to keep the decisions by name and never says a value', () =>
    withWorld(async (world) => {
      const { pre } = await compact(world, 'instruction-1', 'auto');
      expect(pre.stdout.startsWith(SUMMARY_INSTRUCTION_PREFIX)).toBe(true);
      expect(pre.stdout.trim().split('\n')).toHaveLength(1);
      for (const v of ['acme/payments', 'services/ledger', 'schema_migration', 'npm test']) {
        expect(pre.stdout).not.toContain(v);
      }
    }));
});

describe('a PreCompact no compaction follows', () => {
  it('never stops writes (lone PreCompact(auto), a blocked or discarded compaction), and the next real one is captured', () =>
    withWorld(async (world) => {
      const sid = 'lone-1';
      await hook(world, sid, 'SessionStart', { source: 'startup' });
      await hook(world, sid, 'PreCompact', { trigger: 'auto', custom_instructions: null });
      await hook(world, sid, 'Stop', { stop_hook_active: false });
      expect((await gate(world, sid, 'Write', WRITE)).decision).toBe('allow');
      expect((await gate(world, sid, 'Bash', { command: 'npm run build' })).decision).toBe('allow');
      expect(types(world)).toEqual([]);
      // The next turn compacts for real: its own PreCompact is the boundary's.
      await hook(world, sid, 'SessionStart', { source: 'resume', context_tokens: 190010 });
      const { pre } = await compact(world, sid, 'auto');
      expect(pre.stderr).toContain('never followed by a compaction');
      expect(types(world)).toEqual(['snapshot:pre', 'boundary']);
      expect((await gate(world, sid, 'Write', WRITE)).decision).toBe('deny');
      expect((await observe(world, sid, VALUES)).state).toBe('preserved');
      // A later PreCompact that goes nowhere keeps the preserved boundary in force.
      await hook(world, sid, 'PreCompact', { trigger: 'auto' });
      expect((await gate(world, sid, 'Write', WRITE)).decision).toBe('allow');
    }));
});

describe('hooks registered twice run in parallel', () => {
  it('make one boundary, not a second one whose pre is missing', () =>
    withWorld(async (world) => {
      const sid = 'twice-1';
      await Promise.all([
        hook(world, sid, 'PreCompact', { trigger: 'auto' }),
        hook(world, sid, 'PreCompact', { trigger: 'auto' }),
      ]);
      const starts = await Promise.all([
        hook(world, sid, 'SessionStart', { source: 'compact' }),
        hook(world, sid, 'SessionStart', { source: 'compact' }),
      ]);
      await Promise.all([
        hook(world, sid, 'PostCompact', { trigger: 'auto', compact_summary: 's' }),
        hook(world, sid, 'PostCompact', { trigger: 'auto', compact_summary: 's' }),
      ]);
      expect(types(world)).toEqual(['snapshot:pre', 'boundary']);
      expect(starts.filter((r) => r.stdout.includes('additionalContext'))).toHaveLength(1);
      expect((await observe(world, sid, VALUES)).state).toBe('preserved');
    }));
});

describe('subagents, /clear and notifications', () => {
  it("gates a subagent's tool calls by its session's state, and counts a subagent's compaction as the session's", () =>
    withWorld(async (world) => {
      const sid = 'parent-1';
      const sub = { agent_id: 'a1b2c3d4e5f607182', agent_type: 'general-purpose' };
      await hook(world, sid, 'SessionStart', { source: 'startup' });
      await compact(world, sid, 'auto', sub);
      expect(types(world)).toEqual(['snapshot:pre', 'boundary']);
      const run = await hook(world, sid, 'PreToolUse', {
        tool_name: 'Write',
        tool_input: WRITE,
        tool_use_id: 't1',
        ...sub,
      });
      expect(JSON.parse(run.stdout).hookSpecificOutput.permissionDecision).toBe('deny');
      expect((await gate(world, sid, 'Write', WRITE)).decision).toBe('deny');
    }));

  it('treats /clear as a new session with no boundary, leaving the old session as it was', () =>
    withWorld(async (world) => {
      await compact(world, 'before-clear', 'manual');
      await hook(world, 'before-clear', 'SessionEnd', { reason: 'clear' });
      const r = await hook(world, 'after-clear', 'SessionStart', { source: 'clear' });
      expect(r.stdout).toBe('');
      expect((await gate(world, 'after-clear', 'Write', WRITE)).decision).toBe('allow');
      expect((await gate(world, 'before-clear', 'Write', WRITE)).decision).toBe('deny');
    }));

  it('records waiting_human only for notifications that await a human', () =>
    withWorld(async (world) => {
      const sid = 'notify-1';
      await hook(world, sid, 'UserPromptSubmit', { prompt: 'go' });
      await hook(world, sid, 'Notification', { notification_type: 'auth_success', message: 'ok' });
      await hook(world, sid, 'Notification', { notification_type: 'agent_completed', message: 'done' });
      const states = () =>
        ledgerRecords(world)
          .filter((x) => x.type === 'activity')
          .map((x) => x.state);
      expect(states()).toEqual(['working']);
      await hook(world, sid, 'Notification', { notification_type: 'idle_prompt', message: 'waiting' });
      await hook(world, sid, 'PostToolUse', { tool_name: 'Bash', tool_input: { command: 'ls' } });
      await hook(world, sid, 'Notification', { notification_type: 'elicitation_dialog', message: 'input' });
      expect(states()).toEqual(['working', 'waiting_human', 'working', 'waiting_human']);
    }));
});

describe('PowerShell', () => {
  it('is gated like Bash: writes wait for the restatement, self-approval is refused, restating is allowed', () =>
    withWorld(async (world) => {
      const sid = 'pwsh-1';
      await compact(world, sid, 'auto');
      expect((await gate(world, sid, 'PowerShell', { command: 'Set-Content a.txt x' })).decision).toBe(
        'deny',
      );
      const self = await gate(world, sid, 'PowerShell', { command: 'continuity approve --decision scope' });
      expect(self.reason).toContain('approvals come from a human');
      expect(
        (await gate(world, sid, 'PowerShell', { command: `continuity status --session ${sid}` })).decision,
      ).toBe('allow');
    }));
});

describe('context fill at the boundary', () => {
  it('records tokens before (last reply at PreCompact) and after (the compact_boundary record, written after PostCompact)', () =>
    withWorld(async (world) => {
      const sid = 'tokens-1';
      const transcript = join(world.root, 'home', '.claude', 'projects', 'p', `${sid}.jsonl`);
      mkdirSync(dirname(transcript), { recursive: true });
      const reply = {
        type: 'assistant',
        message: { role: 'assistant', usage: { input_tokens: 190000, output_tokens: 10 } },
      };
      writeFileSync(
        transcript,
        `${JSON.stringify({ type: 'user', message: 'TRANSCRIPT-SECRET' })}\n${JSON.stringify(reply)}\n`,
      );
      await compact(world, sid, 'auto');
      const boundary = () => ledgerRecords(world).filter((r) => r.type === 'boundary');
      expect(boundary()).toHaveLength(1);
      expect(boundary()[0]!.tokensBefore).toBe(190010);
      expect(boundary()[0]!.tokensAfter).toBeUndefined();
      // Claude Code writes the compact_boundary record after PostCompact; the next hook reads it.
      const record = {
        type: 'system',
        subtype: 'compact_boundary',
        timestamp: new Date().toISOString(),
        compactMetadata: { trigger: 'auto', preTokens: 190010, postTokens: 2632 },
      };
      writeFileSync(transcript, `${JSON.stringify(reply)}\n${JSON.stringify(record)}\n`, { flag: 'a' });
      await hook(world, sid, 'Stop', { stop_hook_active: false });
      expect(boundary().at(-1)).toMatchObject({ tokensBefore: 190010, tokensAfter: 2632 });
      await hook(world, sid, 'Stop', { stop_hook_active: false });
      expect(boundary()).toHaveLength(2); // once per boundary
      await observe(world, sid, VALUES);
      const mine = receiver.spans.filter((s) => s.attributes[ATTR_SESSION_ID] === sid);
      const preSpan = mine.find((s) => s.name === SPAN_COMPACTION_PRE)!;
      const postSpan = mine.find((s) => s.name === SPAN_COMPACTION_POST)!;
      expect(preSpan.attributes[ATTR_TOKENS_BEFORE]).toBe(190010);
      expect(postSpan.attributes[ATTR_TOKENS_BEFORE]).toBe(190010);
      expect(postSpan.attributes[ATTR_TOKENS_AFTER]).toBe(2632);
      const wire = Buffer.concat(receiver.requests.map((r) => r.body)).toString('latin1');
      expect(wire).not.toContain('TRANSCRIPT-SECRET');
      expect(wire).not.toContain(transcript);
      expect(JSON.stringify(ledgerRecords(world))).not.toContain('projects');
    }));
});

describe('an approved change carries forward', () => {
  const widened = { repository: 'acme/payments', paths: ['services/ledger', 'services/billing'] };
  async function approveWidening(world: World, sid: string): Promise<void> {
    await compact(world, sid, 'manual');
    expect((await observe(world, sid, { ...VALUES, scope: widened })).state).toBe('conflicting');
    const r = await runCli(
      [
        'approve',
        '--session',
        sid,
        '--decision',
        'scope',
        '--from',
        JSON.stringify(DECISIONS.scope.value),
        '--to',
        JSON.stringify(widened),
        '--ref',
        'CHG-7',
        '--by',
        'reviewer-1',
      ],
      { env: world.shellEnv, cwd: world.project },
    );
    expect(r.status, r.stderr).toBe(0);
    expect((await gate(world, sid, 'Write', WRITE)).decision).toBe('allow');
  }

  it('the next compaction compares against the approved value: restating it is preserved', () =>
    withWorld(async (world) => {
      const sid = 'carry-1';
      await approveWidening(world, sid);
      await compact(world, sid, 'auto');
      const pre = ledgerRecords(world).findLast((r) => r.type === 'snapshot' && r.phase === 'pre') as {
        decisions: Record<string, { source?: string; approvalRef?: string }>;
      };
      expect(pre.decisions.scope).toMatchObject({ source: 'approval-chain', approvalRef: 'CHG-7' });
      const r = await observe(world, sid, { ...VALUES, scope: widened });
      expect(r.state).toBe('preserved');
      expect((await gate(world, sid, 'Write', WRITE)).decision).toBe('allow');
      const preSpans = receiver.spans.filter(
        (s) => s.attributes[ATTR_SESSION_ID] === sid && s.name === SPAN_COMPACTION_PRE,
      );
      expect(preSpans.at(-1)!.attributes[decisionAttr('scope', 'source')]).toBe('approval-chain');
    }));

  it('and restating the value from before the approval is a change again', () =>
    withWorld(async (world) => {
      const sid = 'carry-2';
      await approveWidening(world, sid);
      await compact(world, sid, 'auto');
      const r = await observe(world, sid, VALUES);
      expect(r.state).toBe('conflicting');
      expect((await gate(world, sid, 'Write', WRITE)).decision).toBe('deny');
    }));

  it('stops carrying once the human updates the task record', () =>
    withWorld(async (world) => {
      const sid = 'carry-3';
      await approveWidening(world, sid);
      writeTaskRecord(world, { ...DECISIONS, scope: { value: { repository: 'acme/other' } } });
      await compact(world, sid, 'auto');
      expect((await observe(world, sid, { ...VALUES, scope: { repository: 'acme/other' } })).state).toBe(
        'preserved',
      );
    }));
});

describe('continuity observe in the agent shell', () => {
  it('takes the session from CLAUDE_CODE_SESSION_ID, which Claude Code gives to the Bash tool', () =>
    withWorld(async (world) => {
      const sid = 'env-session-1';
      await compact(world, sid, 'auto');
      // Another session became the project's current one meanwhile.
      await hook(world, 'someone-else', 'SessionStart', { source: 'startup' });
      const r = await runCli(['observe', '--decisions', '-', '--json'], {
        input: JSON.stringify(VALUES),
        env: { ...world.shellEnv, CLAUDE_CODE_SESSION_ID: sid },
        cwd: world.project,
      });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ sessionId: sid, state: 'preserved' });
    }));
});
