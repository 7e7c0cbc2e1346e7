/**
 * The continuity states on the real Claude Code binary (issue 10): each scenario runs from session
 * start through a real manual compaction (`claude -p "/compact …" --resume S`) to the first write
 * after it, and asserts the ledger, the gate's decision as Claude Code reports it
 * (`permission_denials`, the file on disk, the reason the model is told) and the spans that
 * `continuity serve` forwarded to the receiver, with the state on the post span.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { requestText } from '../support/anthropic-server.js';
import { bash, deniedIds, restate, resultOf, SCENARIO_TIMEOUT_MS, useSuite, write } from './harness.js';
import {
  compactManually,
  endScenario,
  expectBoundarySpans,
  expectClean,
  expectOneCapturedBoundary,
  expectTokens,
  humanApproves,
  rawStrings,
  records,
  resumeWith,
  type Scenario,
  scenario,
  startSession,
  status,
  type TaskValues,
  widened,
} from './scenario.js';

const suite = useSuite();

/** The restated form of `values`, each decision as the agent states it. */
function asRestated(values: TaskValues): Record<string, unknown> {
  return { ...values };
}

/**
 * Start, a manual compaction with instructions, then one turn: a write before restating (held
 * until the decisions are restated), the restatement, and the write after it.
 */
async function compactThenRestate(
  s: Scenario,
  restated: Record<string, unknown>,
): Promise<{ sessionId: string; denied: string[] }> {
  const sessionId = await startSession(s);
  await compactManually(s, sessionId, 'keep the plan');
  const r = await resumeWith(s, sessionId, [
    write('w-first', s.world.file('first.txt'), 'before restating\n'),
    restate('restate', restated),
    write('w-after', s.world.file('after.txt'), 'after restating\n'),
  ]);
  // The first write after compaction waits for the restatement.
  expect(existsSync(s.world.file('first.txt'))).toBe(false);
  expect(resultOf(s.server, 'w-first')?.text).toContain('(unverified: post_observation_missing)');
  // Restating is always allowed through Bash.
  expect(resultOf(s.server, 'restate')?.isError).toBe(false);
  return { sessionId, denied: deniedIds(r) };
}

describe.concurrent('continuity states on the real binary (manual compaction)', () => {
  it(
    'preserved: the restatement matches, the write goes through',
    async () => {
      const s = await scenario(suite());
      try {
        const { sessionId, denied } = await compactThenRestate(s, asRestated(s.values));
        expect(resultOf(s.server, 'restate')?.text).toContain('preserved (digest_match_fresh)');
        expect(denied).toEqual(['w-first']);
        expect(existsSync(s.world.file('after.txt'))).toBe(true);

        const st = await status(s, sessionId);
        expect(st.state).toBe('preserved');
        expect(st.trigger).toBe('manual');
        const boundaryId = expectOneCapturedBoundary(s, sessionId, 1);
        expect(st.boundaryId).toBe(boundaryId);
        // Claude Code counts the context as the last reply's input + output tokens (100 + 10 here).
        expectTokens(s, sessionId, boundaryId, 110);
        await expectBoundarySpans(s, sessionId, boundaryId, {
          trigger: 'manual',
          state: 'preserved',
          tokensBefore: 110,
        });
        expectClean(s, ['keep the plan']);
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
        const { sessionId, denied } = await compactThenRestate(s, asRestated(changed));
        expect(resultOf(s.server, 'restate')?.text).toContain('conflicting (unapproved_change)');
        expect(denied).toEqual(['w-first', 'w-after']);
        expect(existsSync(s.world.file('after.txt'))).toBe(false);
        expect(resultOf(s.server, 'w-after')?.text).toContain('(conflicting: unapproved_change)');

        const st = await status(s, sessionId);
        expect([st.state, st.reason]).toEqual(['conflicting', 'unapproved_change']);
        const boundaryId = expectOneCapturedBoundary(s, sessionId, 1);
        await expectBoundarySpans(s, sessionId, boundaryId, { trigger: 'manual', state: 'conflicting' });
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
        const { sessionId, denied } = await compactThenRestate(s, partial);
        expect(resultOf(s.server, 'restate')?.text).toContain('dropped (absent_after_compaction)');
        expect(denied).toEqual(['w-first', 'w-after']);
        expect(existsSync(s.world.file('after.txt'))).toBe(false);
        expect(resultOf(s.server, 'w-after')?.text).toContain('ask the human for "approval_boundary"');

        expect((await status(s, sessionId)).state).toBe('dropped');
        const boundaryId = expectOneCapturedBoundary(s, sessionId, 1);
        await expectBoundarySpans(s, sessionId, boundaryId, { trigger: 'manual', state: 'dropped' });
        expectClean(s);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'stale: a restatement observed before the compaction stops the write',
    async () => {
      const s = await scenario(suite());
      try {
        const old = '2020-01-01T00:00:00Z';
        const stale = Object.fromEntries(
          Object.entries(s.values).map(([n, v]) => [n, { value: v, observedAt: old }]),
        );
        const { sessionId, denied } = await compactThenRestate(s, stale);
        expect(resultOf(s.server, 'restate')?.text).toContain('unverified (stale_observation)');
        expect(denied).toEqual(['w-first', 'w-after']);
        expect(existsSync(s.world.file('after.txt'))).toBe(false);
        expect(resultOf(s.server, 'w-after')?.text).toContain('(unverified: stale_observation)');

        const st = await status(s, sessionId);
        expect([st.state, st.reason]).toEqual(['unverified', 'stale_observation']);
        const boundaryId = expectOneCapturedBoundary(s, sessionId, 1);
        await expectBoundarySpans(s, sessionId, boundaryId, { trigger: 'manual', state: 'unverified' });
        expectClean(s);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    "approval: the agent's own `continuity approve` is refused; a human's in another process releases the next write (approved_change), and the approved value carries forward to the next compaction",
    async () => {
      const s = await scenario(suite());
      try {
        const changed = widened(s.values);
        const { sessionId } = await compactThenRestate(s, asRestated(changed));

        // The agent runs the approve command `observe` printed, through its Bash tool: refused.
        const r1 = await resumeWith(s, sessionId, [
          ({ request }) => {
            const text = requestText(request.body);
            const m =
              /continuity approve --session \S+ --decision scope --from-digest \S+ --to-digest \S+/.exec(
                text,
              );
            if (!m) throw new Error('the conflicting restatement printed no approve command');
            return bash('self-approve', `${m[0]} --ref agent-self --by agent`);
          },
          write('w-self', s.world.file('self.txt'), 'after self approval\n'),
        ]);
        expect(deniedIds(r1)).toEqual(['self-approve', 'w-self']);
        expect(resultOf(s.server, 'self-approve')?.text).toContain('approvals come from a human');
        expect(records(s, sessionId).filter((r) => r.type === 'approval')).toEqual([]);
        expect(existsSync(s.world.file('self.txt'))).toBe(false);

        // The human approves in their own terminal (another process, no Claude Code around it).
        await humanApproves(s, sessionId, {
          decision: 'scope',
          from: s.values.scope,
          to: changed.scope,
          ref: 'CHG-1042',
        });

        // The next write goes through; restating the approved value says approved_change.
        const r2 = await resumeWith(s, sessionId, [
          write('w-approved', s.world.file('approved.txt'), 'after the human approval\n'),
          restate('restate-approved', asRestated(changed)),
        ]);
        expect(deniedIds(r2)).toEqual([]);
        expect(existsSync(s.world.file('approved.txt'))).toBe(true);
        expect(resultOf(s.server, 'restate-approved')?.text).toContain('approved_change');
        expect((await status(s, sessionId)).state).toBe('approved_change');
        const first = expectOneCapturedBoundary(s, sessionId, 2);
        await expectBoundarySpans(s, sessionId, first, {
          trigger: 'manual',
          state: 'approved_change',
          posts: 2,
        });

        // The next compaction compares against the approved scope: restating it is preserved.
        await compactManually(s, sessionId, 'keep going');
        const r3 = await resumeWith(s, sessionId, [
          restate('restate-next', asRestated(changed)),
          write('w-next', s.world.file('next.txt'), 'after the second compaction\n'),
        ]);
        expect(resultOf(s.server, 'restate-next')?.text).toContain('preserved');
        expect(deniedIds(r3)).toEqual([]);
        expect(existsSync(s.world.file('next.txt'))).toBe(true);
        expect((await status(s, sessionId)).state).toBe('preserved');
        expectClean(s, rawStrings(changed));
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'approval carried forward: after a human approved A→B, restating A at the next compaction is not preserved',
    async () => {
      const s = await scenario(suite());
      try {
        const changed = widened(s.values);
        const { sessionId } = await compactThenRestate(s, asRestated(changed));
        await humanApproves(s, sessionId, {
          decision: 'scope',
          from: s.values.scope,
          to: changed.scope,
          ref: 'CHG-2001',
        });
        await compactManually(s, sessionId, 'keep going');
        const r = await resumeWith(s, sessionId, [
          restate('restate-old', asRestated(s.values)),
          write('w-old', s.world.file('old.txt'), 'with the old scope\n'),
        ]);
        expect(resultOf(s.server, 'restate-old')?.text).toContain('conflicting (unapproved_change)');
        expect(deniedIds(r)).toEqual(['w-old']);
        expect(existsSync(s.world.file('old.txt'))).toBe(false);
        expect((await status(s, sessionId)).state).toBe('conflicting');
        expectClean(s, rawStrings(changed));
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
