/**
 * Qwen Code 0.24.4 on its real binary (issue 29): `continuity init qwen-code`'s hooks in a real
 * session against our scripted chat-completions server, through a real automatic compaction
 * (usage over `context.autoCompactThreshold`) and a real manual one (`--continue -p /compress`).
 *
 * What Qwen does, recorded on this binary (docs/qwen-code.md): `PreCompact → PostCompact →
 * SessionStart(compact)`; PreCompact's `additionalContext` (not its plain stdout) is appended to
 * the summarizer's prompt; SessionStart(compact)'s context is applied without being awaited, so
 * it reaches the model from the second request after the compaction on. The gate holds the
 * writes in between.
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUMMARY_INSTRUCTION_PREFIX } from '../../src/adapters/core/messages.js';
import { ATTR_RUNTIME } from '../../src/otel/semconv.js';
import {
  compactionSpans,
  expectDroppedDecisionBlocks,
  expectOneBoundary as expectOneAdapterBoundary,
  expectOnlyAHumanApproves,
  onlySession,
} from '../support/agent-e2e.js';
import { statusOf } from '../support/evidence.js';
import { widened } from '../support/task.js';
import {
  INSTALL_TIMEOUT_MS,
  makeWorld,
  OVER_THRESHOLD,
  readFile,
  requestText,
  restate,
  resultOf,
  resumedTurn,
  SCENARIO_TIMEOUT_MS,
  type Suite,
  shell,
  startChatServer,
  startSuite,
  type World,
  writeFile,
} from './harness.js';

let suite: Suite | undefined;
beforeAll(async () => {
  suite = await startSuite();
}, INSTALL_TIMEOUT_MS);
afterAll(async () => {
  await suite?.receiver.close();
});
const s = (): Suite => {
  if (!suite) throw new Error('the Qwen Code suite did not start (see the beforeAll error)');
  return suite;
};

/** The summarizer's answer in the shape Qwen asks for (an analysis, then the state snapshot). */
const SUMMARY =
  '<analysis>a</analysis><state_snapshot><overall_goal>scripted</overall_goal></state_snapshot>';

/** One boundary, recorded by the qwen-code adapter, with its pre and `restatements` post snapshots. */
const expectOneBoundary = (w: World, sessionId: string, restatements: number): string =>
  expectOneAdapterBoundary(w, sessionId, restatements, 'qwen-code', 'qw-');

/** An automatic compaction, then the restatement of `restated` and a write. */
async function autoCompactThenRestate(w: World, restated: Record<string, unknown>) {
  const server = await startChatServer({
    steps: [
      shell('before', 'echo before > before.txt', OVER_THRESHOLD),
      readFile('look', w.file('before.txt')),
      restate('restate', restated),
      writeFile('w-after', w.file('after.txt'), 'after restating\n'),
      { text: 'Done.' },
    ],
    summary: SUMMARY,
  });
  try {
    const r = await w.qwen(server, 'Work on the task.');
    expect(r.status, r.stderr).toBe(0);
    return { server, sessionId: onlySession(w) };
  } finally {
    await server.close();
  }
}

describe.concurrent('Qwen Code on the real binary', () => {
  it(
    'automatic compaction: the summary is asked to keep the decisions; a conflicting restatement stops the write; the agent cannot approve it; a human approval releases it',
    async () => {
      const w = await makeWorld(s());
      try {
        const changed = widened(w.values);
        const { server, sessionId } = await autoCompactThenRestate(w, { ...changed });

        // PreCompact's instruction reached the summarizer, naming every decision.
        const summaries = server.requests.filter((r) => r.kind === 'summary');
        expect(summaries.length).toBeGreaterThan(0);
        const asked = requestText(summaries[0]!);
        expect(asked).toContain(SUMMARY_INSTRUCTION_PREFIX);
        for (const name of ['scope', 'approval_boundary', 'acceptance_test']) expect(asked).toContain(name);

        expect(resultOf(server, 'restate')).toContain('conflicting (unapproved_change)');
        expect(resultOf(server, 'w-after')).toContain('(conflicting: unapproved_change)');
        expect(existsSync(w.file('after.txt'))).toBe(false);
        const boundaryId = expectOneBoundary(w, sessionId, 1);
        const st = await statusOf(w.continuity, sessionId);
        expect([st.state, st.reason, st.trigger, st.boundaryId]).toEqual([
          'conflicting',
          'unapproved_change',
          'auto',
          boundaryId,
        ]);

        // The agent's own approval is refused; the human's, in their terminal, releases the write.
        await expectOnlyAHumanApproves(w, sessionId, changed, resumedTurn);

        // The spans that name a runtime name Qwen Code, the compaction spans among them.
        for (const x of compactionSpans(s().receiver, sessionId, 'qwen-code')) {
          expect(x.attributes[ATTR_RUNTIME]).toBe('qwen-code');
        }
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'hooks that run the project\'s own installation ("$QWEN_PROJECT_DIR"/node_modules/.bin/continuity): the compaction captured, a preserved restatement lets the write through',
    async () => {
      const w = await makeWorld(s(), true);
      try {
        expect(readFileSync(w.file('.qwen/settings.json'), 'utf8')).toContain(
          JSON.stringify('"$QWEN_PROJECT_DIR"/node_modules/.bin/continuity hook qwen-code').slice(1, -1),
        );
        const { server, sessionId } = await autoCompactThenRestate(w, { ...w.values });
        expect(resultOf(server, 'restate')).toContain('preserved (digest_match_fresh)');
        expect(existsSync(w.file('after.txt'))).toBe(true);
        expectOneBoundary(w, sessionId, 1);
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'automatic compaction: a preserved restatement lets the write through',
    async () => {
      const w = await makeWorld(s());
      try {
        const { server, sessionId } = await autoCompactThenRestate(w, { ...w.values });
        expect(resultOf(server, 'restate')).toContain('preserved (digest_match_fresh)');
        expect(existsSync(w.file('after.txt'))).toBe(true);
        expectOneBoundary(w, sessionId, 1);
        const st = await statusOf(w.continuity, sessionId);
        expect([st.state, st.trigger]).toEqual(['preserved', 'auto']);
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'manual compaction (/compress): a dropped decision stops the write',
    async () => {
      const w = await makeWorld(s());
      try {
        // Enough context for Qwen to find a summary worth making (it skips one that would not shrink it).
        const first = await startChatServer({
          steps: [shell('start', 'echo start > start.txt'), { text: 'Ok.' }],
          usage: { prompt_tokens: 20_000, completion_tokens: 10 },
        });
        try {
          expect((await w.qwen(first, 'Start.')).status).toBe(0);
        } finally {
          await first.close();
        }
        const sessionId = onlySession(w);
        const compress = await startChatServer({
          steps: [],
          summary: SUMMARY,
          summaryUsage: { prompt_tokens: 500, completion_tokens: 50 },
        });
        try {
          const r = await w.qwen(compress, '/compress', { resume: true });
          expect(r.status, r.stderr).toBe(0);
          expect(compress.requests.some((q) => q.kind === 'summary')).toBe(true);
        } finally {
          await compress.close();
        }
        // The resumed session does not carry the context SessionStart(compact) added in the
        // /compress run; the gate's answer to the first write names the restatement command.
        const st = await expectDroppedDecisionBlocks(w, sessionId, resumedTurn);
        expectOneBoundary(w, sessionId, 1);
        expect([st.state, st.trigger]).toEqual(['dropped', 'manual']);
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
