/**
 * The continuity states on the real Codex CLI binary (0.171.0): each scenario runs `codex exec`
 * through a real automatic compaction (a response reporting more tokens than
 * `model_auto_compact_token_limit`, so Codex compacts mid-turn after the tool call) to the writes
 * after it, and asserts the ledger, the gate's effect as Codex reports it (the file not written,
 * Codex's "Command blocked by PreToolUse hook" output the model is given next), the spans at the
 * receiver, and that nothing leaked.
 */
import { describe, expect, it } from 'vitest';
import { SUMMARY_INSTRUCTION_PREFIX } from '../../src/adapters/core/messages.js';
import { inputTexts, type Step, SUMMARY_PREFIX } from '../support/responses-server.js';
import { BIG_USAGE, SCENARIO_TIMEOUT_MS, useSuite } from './harness.js';
import {
  endScenario,
  exec,
  expectBlocked,
  expectBoundaries,
  expectBoundarySpans,
  expectClean,
  expectRan,
  humanApproves,
  injectedContext,
  outputOf,
  rawStrings,
  records,
  restate,
  type Scenario,
  scenario,
  shell,
  status,
  type TaskValues,
  widened,
  write,
} from './scenario.js';

const suite = useSuite();

/**
 * One `codex exec`: a shell call whose response reports 9 100 tokens (Codex compacts right after
 * it), a write before restating (blocked), the restatement, a write after it.
 */
async function compactThenRestate(
  s: Scenario,
  restated: Record<string, unknown>,
  more: Step[] = [],
): Promise<string> {
  s.steps.push(
    shell('c-start', 'echo started', BIG_USAGE),
    write('w-first', 'first.txt', 'before restating\n'),
    restate('restate', restated),
    write('w-after', 'after.txt', 'after restating\n'),
    ...more,
    'done',
  );
  const r = await exec(s, 'do the task');
  const sessionId = r.threadId!;
  expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
  // A real compaction happened: one summarization request, its summary carried into the next window.
  expect(s.server.requestsOf('compact')).toHaveLength(1);
  const after = s.server.requests.find((q) => q.kind === 'turn' && injectedContext(q));
  expect(after, 'the restatement request reached the model').toBeDefined();
  expect(inputTexts(after!.body).some((t) => t.text.startsWith(SUMMARY_PREFIX))).toBe(true);
  // The first write after compaction waits for the restatement.
  expectBlocked(s, 'w-first', 'first.txt', '(unverified: post_observation_missing)');
  // Restating is always allowed through the shell.
  expectRan(s, 'restate');
  return sessionId;
}

describe.concurrent('continuity states on the real Codex binary (automatic compaction)', () => {
  it(
    'preserved: the restatement matches, the write goes through',
    async () => {
      const s = await scenario(suite());
      try {
        const sessionId = await compactThenRestate(s, { ...s.values });
        expect(outputOf(s.server, 'restate')).toContain('preserved (digest_match_fresh)');
        expectRan(s, 'w-after', 'after.txt');
        const st = await status(s, sessionId);
        expect([st.state, st.runtime, st.trigger]).toEqual(['preserved', 'codex-cli', 'auto']);
        const [boundaryId] = expectBoundaries(s, sessionId, 1, 'auto');
        // The context fill Codex compacted from: the big response's total_tokens.
        const b = records(s, sessionId).find((r) => r.type === 'boundary')!;
        expect(b.tokensBefore).toBe(BIG_USAGE.total_tokens);
        await expectBoundarySpans(s, sessionId, boundaryId!, {
          trigger: 'auto',
          posts: 1,
          tokensBefore: BIG_USAGE.total_tokens,
        });
        // The summarizer saw the names (never the values) in the conversation it summarized next time:
        // the SessionStart context carries the instruction into the new window.
        const last = s.server.requestsOf('turn').at(-1)!;
        expect(inputTexts(last.body).some((t) => t.text.includes(SUMMARY_INSTRUCTION_PREFIX))).toBe(true);
        expectClean(s);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'conflicting: a changed scope stops the write',
    async () => {
      const s = await scenario(suite());
      try {
        const changed = widened(s.values);
        const sessionId = await compactThenRestate(s, { ...changed });
        expect(outputOf(s.server, 'restate')).toContain('conflicting (unapproved_change)');
        expectBlocked(s, 'w-after', 'after.txt', '(conflicting: unapproved_change)');
        const st = await status(s, sessionId);
        expect([st.state, st.reason]).toEqual(['conflicting', 'unapproved_change']);
        const [boundaryId] = expectBoundaries(s, sessionId, 1, 'auto');
        await expectBoundarySpans(s, sessionId, boundaryId!, { trigger: 'auto', posts: 1 });
        expectClean(s, rawStrings(changed));
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'dropped: a decision left out of the restatement stops the write',
    async () => {
      const s = await scenario(suite());
      try {
        const { approval_boundary: _left, ...partial } = s.values;
        const sessionId = await compactThenRestate(s, partial);
        expect(outputOf(s.server, 'restate')).toContain('dropped (absent_after_compaction)');
        expectBlocked(s, 'w-after', 'after.txt', 'ask the human for "approval_boundary"');
        expect((await status(s, sessionId)).state).toBe('dropped');
        const [boundaryId] = expectBoundaries(s, sessionId, 1, 'auto');
        await expectBoundarySpans(s, sessionId, boundaryId!, { trigger: 'auto', posts: 1 });
        expectClean(s);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    "approval: the agent's own `continuity approve` is refused; a human's in another process releases the next write (approved_change)",
    async () => {
      const s = await scenario(suite());
      try {
        const changed: TaskValues = widened(s.values);
        // The agent runs the approve command its conflicting restatement printed: refused.
        const selfApprove: Step = () => {
          const out = outputOf(s.server, 'restate') ?? '';
          const m =
            /^\s*(\S.*\bcontinuity(?:\.js)? approve --session \S+ --decision scope --from-digest \S+ --to-digest \S+)/m.exec(
              out,
            );
          if (!m) throw new Error('the conflicting restatement printed no approve command');
          return shell('self-approve', `${m[1]} --ref agent-self --by agent`);
        };
        const sessionId = await compactThenRestate(s, { ...changed }, [selfApprove]);
        expectBlocked(s, 'w-after', 'after.txt', '(conflicting: unapproved_change)');
        expectBlocked(s, 'self-approve', undefined, 'approvals come from a human');
        expect(records(s, sessionId).filter((r) => r.type === 'approval')).toEqual([]);

        await humanApproves(s, sessionId, {
          decision: 'scope',
          from: s.values.scope,
          to: changed.scope,
          ref: 'CHG-1042',
        });

        // The next process (exec resume): the write goes through.
        s.steps.push(write('w-approved', 'approved.txt', 'after the human approval\n'), 'done');
        const r2 = await exec(s, 'go on', sessionId);
        expect(r2.threadId).toBe(sessionId);
        expectRan(s, 'w-approved', 'approved.txt');
        expect((await status(s, sessionId)).state).toBe('approved_change');
        expect(records(s, sessionId).filter((r) => r.type === 'approval')).toHaveLength(1);
        const [boundaryId] = expectBoundaries(s, sessionId, 1, 'auto');
        await expectBoundarySpans(s, sessionId, boundaryId!, { trigger: 'auto', posts: 1 });
        expectClean(s, rawStrings(changed));
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
