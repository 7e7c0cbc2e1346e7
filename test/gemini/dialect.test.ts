/**
 * The Gemini CLI dialect, pure and local: the conversation-file evidence of a compression (the
 * record shapes are those Gemini CLI 0.61.0 wrote in the real runs of test/gemini-e2e, trimmed to
 * the fields read), the payload and answer translations, and init's settings.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gateOutput } from '../../src/adapters/claude-code/hook.js';
import { runInit } from '../../src/adapters/claude-code/init.js';
import { toPayload } from '../../src/adapters/claude-code/payload.js';
import { stateDirOf } from '../../src/adapters/core/state.js';
import { GEMINI_DIALECT } from '../../src/adapters/gemini/config.js';
import {
  geminiCompactionEvidence,
  isGeminiTranscript,
  latestSummary,
  SUMMARY_ACK,
} from '../../src/adapters/gemini/transcript.js';

const at = '2026-12-06T01:52:34.937Z';
const context = {
  id: 'ctx',
  timestamp: at,
  type: 'user',
  content: [{ text: '<session_context>…</session_context>' }],
};
const prompt = (id: string) => ({
  id,
  timestamp: at,
  type: 'user',
  content: [{ text: 'Work on the task.' }],
});

/** The record an applied compression writes: the history restarted from the summary. */
function compressed(summaryId: string): string {
  return JSON.stringify({
    $set: {
      messages: [
        context,
        {
          id: summaryId,
          timestamp: at,
          type: 'user',
          content: [{ text: '<state_snapshot>SECRET</state_snapshot>' }],
        },
        { id: `${summaryId}-ack`, timestamp: at, type: 'gemini', content: [{ text: SUMMARY_ACK }] },
        prompt('p2'),
      ],
    },
  });
}

describe('Gemini CLI conversation file', () => {
  it('the summary of the latest rewritten history is the evidence, by its message id', () => {
    const text = [
      JSON.stringify({ sessionId: 's', kind: 'main' }),
      JSON.stringify({ $set: { messages: [context, prompt('p1')] } }),
      compressed('sum-1'),
      JSON.stringify({ id: 'm', timestamp: at, type: 'gemini', content: '' }),
      compressed('sum-2'),
    ].join('\n');
    expect(latestSummary(text)).toEqual({ id: 'sum-2', at });
  });

  it('a history without the summary-and-answer pair, text that only mentions it, and broken lines are not evidence', () => {
    const mentions = JSON.stringify({
      $set: {
        messages: [
          context,
          { id: 'u', type: 'user', content: [{ text: `please write <state_snapshot> and ${SUMMARY_ACK}` }] },
          { id: 'g', type: 'gemini', content: [{ text: 'no' }] },
        ],
      },
    });
    const noAck = JSON.stringify({
      $set: {
        messages: [
          { id: 'x', type: 'user', content: [{ text: '<state_snapshot>s</state_snapshot>' }] },
          { id: 'y', type: 'gemini', content: [{ text: `${SUMMARY_ACK} and more` }] },
        ],
      },
    });
    const broken = compressed('sum-3').slice(10);
    expect(latestSummary([mentions, noAck, broken].join('\n'))).toBeUndefined();
  });

  it('only a Gemini conversation file path is read', () => {
    expect(isGeminiTranscript('/h/.gemini/tmp/p/chats/session-2026-12-06T01-52-cddf2200.jsonl')).toBe(true);
    for (const p of [
      undefined,
      '',
      'chats/session-x.jsonl',
      '/h/.gemini/tmp/p/session-x.jsonl',
      '/etc/passwd',
    ])
      expect(isGeminiTranscript(p)).toBe(false);
  });

  it('each summary confirms one boundary only: a resumed session that rewrites the same summary confirms nothing', () => {
    const root = mkdtempSync(join(tmpdir(), 'gemini-transcript-'));
    const chats = join(root, 'chats');
    mkdirSync(chats);
    const path = join(chats, 'session-x.jsonl');
    const state = stateDirOf(join(root, 'state'), 'gemini');
    const ctx = { transcriptPath: path, state };
    writeFileSync(path, `${JSON.stringify({ $set: { messages: [context, prompt('p1')] } })}\n`);
    expect(geminiCompactionEvidence({}, 'sess', 0, ctx)).toBeUndefined();
    writeFileSync(path, `${compressed('sum-1')}\n`, { flag: 'a' });
    expect(geminiCompactionEvidence({}, 'sess', 0, ctx)).toBe(at);
    expect(geminiCompactionEvidence({}, 'sess', 0, ctx)).toBeUndefined();
    writeFileSync(path, `${compressed('sum-1')}\n`, { flag: 'a' });
    expect(geminiCompactionEvidence({}, 'sess', 0, ctx)).toBeUndefined();
    writeFileSync(path, `${compressed('sum-2')}\n`, { flag: 'a' });
    expect(geminiCompactionEvidence({}, 'sess', 0, ctx)).toBe(at);
    // Another session's markers are its own.
    expect(geminiCompactionEvidence({}, 'other', 0, ctx)).toBe(at);
  });
});

describe('Gemini CLI payloads and answers', () => {
  it('reads Gemini’s event names as Claude Code’s, with the tool’s target', () => {
    const tool = toPayload(
      {
        session_id: 's1',
        hook_event_name: 'BeforeTool',
        cwd: '/p',
        transcript_path: '/t',
        tool_name: 'write_file',
        tool_input: { file_path: '/p/a.txt', content: 'x' },
      },
      GEMINI_DIALECT,
    );
    expect(tool.ok && [tool.payload.event, tool.payload.toolName, tool.payload.filePath]).toEqual([
      'PreToolUse',
      'write_file',
      '/p/a.txt',
    ]);
    const pre = toPayload(
      { session_id: 's1', hook_event_name: 'PreCompress', trigger: 'auto' },
      GEMINI_DIALECT,
    );
    expect(pre.ok && [pre.payload.event, pre.payload.trigger]).toEqual(['PreCompact', 'auto']);
    const start = toPayload(
      { session_id: 's1', hook_event_name: 'SessionStart', source: 'resume' },
      GEMINI_DIALECT,
    );
    expect(start.ok && start.payload.event).toBe('SessionStart');
  });

  it('answers the gate with a top-level decision, `ask` as `deny`, nothing for `allow`', () => {
    const reason = 'Blocked by the continuity gate';
    expect(
      JSON.parse(
        gateOutput({ verdict: 'deny', reason, code: 'boundary_unresolved' } as never, GEMINI_DIALECT),
      ),
    ).toEqual({
      decision: 'deny',
      reason,
    });
    expect(
      JSON.parse(
        gateOutput({ verdict: 'ask', reason, code: 'boundary_unresolved' } as never, GEMINI_DIALECT),
      ),
    ).toEqual({
      decision: 'deny',
      reason,
    });
    expect(gateOutput({ verdict: 'allow' } as never, GEMINI_DIALECT)).toBe('');
  });
});

describe('continuity init gemini', () => {
  it('registers Gemini’s events in .gemini/settings.json with millisecond timeouts; --remove takes out only ours', () => {
    const project = mkdtempSync(join(tmpdir(), 'gemini-init-'));
    mkdirSync(join(project, '.gemini'));
    const theirs = { type: 'command', command: 'their-hook', timeout: 1000 };
    writeFileSync(
      join(project, '.gemini', 'settings.json'),
      JSON.stringify({ model: { name: 'x' }, hooks: { BeforeTool: [{ matcher: 'x', hooks: [theirs] }] } }),
    );
    const env = { PATH: '/usr/bin', CONTINUITY_STATE_DIR: join(project, 'state') };
    runInit({ project, dialect: GEMINI_DIALECT, command: 'continuity', env });
    const settings = JSON.parse(readFileSync(join(project, '.gemini', 'settings.json'), 'utf8'));
    expect(Object.keys(settings.hooks).sort()).toEqual(
      ['AfterAgent', 'AfterTool', 'BeforeAgent', 'BeforeTool', 'PreCompress', 'SessionStart'].sort(),
    );
    const gate = settings.hooks.BeforeTool.find((g: { matcher?: string }) => g.matcher !== 'x');
    expect(gate).toEqual({
      matcher: 'write_file|replace|run_shell_command',
      hooks: [{ type: 'command', command: 'continuity hook gemini', timeout: 5000 }],
    });
    expect(settings.hooks.PreCompress[0].hooks[0].timeout).toBe(15_000);
    expect(settings.permissions).toBeUndefined();
    expect(settings.sandbox).toBeUndefined();
    runInit({ project, dialect: GEMINI_DIALECT, remove: true, env });
    expect(JSON.parse(readFileSync(join(project, '.gemini', 'settings.json'), 'utf8'))).toEqual({
      model: { name: 'x' },
      hooks: { BeforeTool: [{ matcher: 'x', hooks: [theirs] }] },
    });
  });
});
