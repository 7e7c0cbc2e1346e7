/**
 * The kinds of compaction the real `@anthropic-ai/claude-agent-sdk` 0.3.328 can be driven to,
 * and what the adapter makes of each: an automatic one in the middle of a turn (an explicit
 * window, `extraArgs: { autocompact: '100000' }`, and the usage our server reports), with the
 * failed attempt before it that fires a lone PreCompact; a manual one sent as a user message of a
 * streaming input, in one query; and the gate failing while a compaction is unresolved.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requestText } from '../support/anthropic-server.js';
import {
  type QueryRun,
  restateWithTool,
  resultOf,
  SCENARIO_TIMEOUT_MS,
  type SdkMessage,
  streamingInput,
  useSuite,
  write,
} from './harness.js';
import {
  compactManually,
  expectAppSpans,
  expectClean,
  expectOneBoundary,
  expectSummaryInstruction,
  inScenario,
  records,
  resumeWith,
  startSession,
  status,
} from './scenario.js';

const suite = useSuite();

/** The compaction status messages of a stream: `success`, or `failed:<error>`. */
function compactResults(r: QueryRun): string[] {
  return r.messages
    .filter((m) => m.type === 'system' && m.subtype === 'status' && m.compact_result !== undefined)
    .map((m) =>
      m.compact_result === 'failed' ? `failed:${String(m.compact_error)}` : String(m.compact_result),
    );
}

describe.concurrent('compaction kinds on the real package', () => {
  it(
    'automatic, mid-turn: the failed attempt before it never stops a write; the compaction holds the next one until restated',
    () =>
      inScenario(suite(), async (s) => {
        const big = { input_tokens: 95_000 };
        s.server.push(
          { tools: [write('w-a', s.world.file('a.txt'), 'a\n')], usage: big },
          { tools: [write('w-b', s.world.file('b.txt'), 'b\n')], usage: big },
          write('w-c', s.world.file('c.txt'), 'c\n'),
          restateWithTool('restate', { ...s.values }),
          write('w-d', s.world.file('d.txt'), 'd\n'),
          'Done.',
        );
        const r = await s.world.query(s.server, 'start the task', { extraArgs: { autocompact: '100000' } });
        expect(r.result?.is_error).toBe(false);
        const sessionId = r.sessionId;
        // What 0.3.328 does with this script: the first attempt bails out (PreCompact fired, nothing
        // to summarize yet), the second compacts.
        expect(compactResults(r)).toEqual(['failed:too_few_groups', 'success']);
        expect(r.boundaries).toHaveLength(1);
        expect(r.boundaries[0]!.compact_metadata!.trigger).toBe('auto');
        expect(r.boundaries[0]!.compact_metadata!.pre_tokens).toBeGreaterThanOrEqual(95_000);
        // The lone PreCompact of the failed attempt held nothing: b was written after it.
        expect(existsSync(s.world.file('a.txt'))).toBe(true);
        expect(existsSync(s.world.file('b.txt'))).toBe(true);
        expect(s.world.warnings).toContain(
          'PreCompact: an earlier PreCompact was never followed by a compaction; it is discarded',
        );
        // The compaction did: c waited for the restatement, d went through.
        expect(r.denied).toEqual(['w-c']);
        expect(existsSync(s.world.file('c.txt'))).toBe(false);
        expect(resultOf(s.server, 'w-c')?.text).toContain('(unverified: post_observation_missing)');
        expect(resultOf(s.server, 'restate')?.text).toContain('preserved (digest_match_fresh)');
        expect(existsSync(s.world.file('d.txt'))).toBe(true);
        expectSummaryInstruction(s, requestText(s.server.requestsOf('summary').at(-1)!.body));

        const boundaryId = expectOneBoundary(s, sessionId, 1, r.boundaries[0]!);
        expect((await status(s, sessionId)).state).toBe('preserved');
        expectAppSpans(s, sessionId, boundaryId, {
          trigger: 'auto',
          state: 'preserved',
          compact: r.boundaries[0]!,
        });
        expectClean(s, [r]);
      }),
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'manual, as a user message of a streaming input: one query, one boundary',
    () =>
      inScenario(
        suite(),
        async (s) => {
          s.server.push(
            write('w-start', s.world.file('start.txt'), 'started\n'),
            'Started.',
            write('w-first', s.world.file('first.txt'), 'before restating\n'),
            restateWithTool('restate', { ...s.values }),
            write('w-after', s.world.file('after.txt'), 'after restating\n'),
            'Done.',
          );
          const turns = streamingInput(['start the task', '/compact keep the plan', 'continue the task']);
          const r = await s.world.query(s.server, turns.input, {}, turns.observe);
          const sessionId = r.sessionId;
          expect(r.messages.filter((m: SdkMessage) => m.type === 'result')).toHaveLength(3);
          expect(r.boundaries).toHaveLength(1);
          expect(r.boundaries[0]!.compact_metadata!.trigger).toBe('manual');
          expect(r.denied).toEqual(['w-first']);
          expect(existsSync(s.world.file('start.txt'))).toBe(true);
          expect(existsSync(s.world.file('first.txt'))).toBe(false);
          expect(existsSync(s.world.file('after.txt'))).toBe(true);
          expect(resultOf(s.server, 'restate')?.text).toContain('preserved (digest_match_fresh)');

          const boundaryId = expectOneBoundary(s, sessionId, 1, r.boundaries[0]!);
          expectAppSpans(s, sessionId, boundaryId, {
            trigger: 'manual',
            state: 'preserved',
            compact: r.boundaries[0]!,
          });
          expectClean(s, [r], ['keep the plan']);
        },
        { claudeMd: '# Project rules\nKeep the ledger reconciled.\n' },
      ),
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'the gate cannot read the evidence while a compaction is unresolved: it asks (canUseTool decides), never lets the write through',
    () =>
      inScenario(suite(), async (s) => {
        const sessionId = await startSession(s);
        const compact = await compactManually(s, sessionId, 'keep the plan');
        // Break both sources of the gate's verdict: the cache is garbage, the ledger unreadable.
        const sessions = join(s.world.state, 'claude-agent-sdk', 'sessions');
        for (const d of readdirSync(sessions)) writeFileSync(join(sessions, d, 'gate.json'), 'garbage');
        renameSync(s.world.ledger, `${s.world.ledger}.aside`);
        mkdirSync(s.world.ledger);
        const asked: Array<{ tool: string; reason: unknown }> = [];
        const r = await resumeWith(s, sessionId, [write('w-broken', s.world.file('broken.txt'), 'x\n')], {
          canUseTool: async (tool: string, _input: unknown, o: { decisionReason?: unknown }) => {
            asked.push({ tool, reason: o.decisionReason });
            return { behavior: 'deny', message: 'The human said no.' };
          },
        });
        expect(asked).toHaveLength(1);
        expect(asked[0]!.tool).toBe('Write');
        expect(String(asked[0]!.reason)).toContain(
          "The continuity gate asks a human first: it could not read this session's continuity state or the ledger",
        );
        expect(r.denied).toEqual(['w-broken']);
        expect(existsSync(s.world.file('broken.txt'))).toBe(false);
        expect(s.world.warnings.some((w) => w.startsWith('PreToolUse: gate could not read the ledger'))).toBe(
          true,
        );
        // Put the ledger back: the evidence still holds one confirmed boundary, unrestated.
        renameSync(s.world.ledger, `${s.world.ledger}.dir`);
        renameSync(`${s.world.ledger}.aside`, s.world.ledger);
        expectOneBoundary(s, sessionId, 0, compact.boundaries[0]!);
        expect(records(s, sessionId).some((r) => r.type === 'snapshot' && r.phase === 'post')).toBe(false);
        expectClean(s, [compact, r]);
      }),
    SCENARIO_TIMEOUT_MS,
  );
});
