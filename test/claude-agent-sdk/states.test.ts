/**
 * The continuity states on the real `@anthropic-ai/claude-agent-sdk` 0.3.328 (its bundled Claude
 * Code 2.1.328): each scenario starts a session, compacts it for real with `/compact` in a resumed
 * query, and makes the first writes after it, with the adapter's callbacks in this process. It
 * asserts the ledger, the gate's effect as the SDK reports it (`permission_denials`, the files on
 * disk, the words the model got), the spans through the application's tracer provider (with the
 * state its ContinuityProcessor wrote) and that nothing leaked.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RESTATE_TOOL_NAME } from '../../src/adapters/claude-agent-sdk/index.js';
import { ATTR_RUNTIME, ATTR_SESSION_ID, SPAN_COMPACTION_POST } from '../../src/otel/semconv.js';
import {
  bash,
  type QueryRun,
  restateWithCli,
  restateWithTool,
  resultOf,
  SCENARIO_TIMEOUT_MS,
  useSuite,
  write,
} from './harness.js';
import {
  compactManually,
  expectAppSpans,
  expectClean,
  expectOneBoundary,
  inScenario,
  rawStrings,
  records,
  resumeWith,
  type Scenario,
  startSession,
  status,
  widened,
} from './scenario.js';

const suite = useSuite();

/**
 * Start, a manual compaction, then one turn: a write before restating (held), the restatement
 * (through the MCP tool unless `cli`), and a write after it.
 */
async function compactThenRestate(
  s: Scenario,
  restated: Record<string, unknown>,
  how: 'tool' | 'cli' = 'tool',
): Promise<{ sessionId: string; runs: QueryRun[]; after: QueryRun }> {
  const first = await startSession(s);
  const sessionId = first;
  const compact = await compactManually(s, sessionId, 'keep the plan');
  const after = await resumeWith(s, sessionId, [
    write('w-first', s.world.file('first.txt'), 'before restating\n'),
    how === 'tool' ? restateWithTool('restate', restated) : restateWithCli('restate', restated),
    write('w-after', s.world.file('after.txt'), 'after restating\n'),
  ]);
  // The first write after compaction waits for the restatement, with the words that say how.
  expect(existsSync(s.world.file('first.txt'))).toBe(false);
  const held = resultOf(s.server, 'w-first');
  expect(held?.isError).toBe(true);
  expect(held?.text).toContain('Blocked by the continuity gate (unverified: post_observation_missing)');
  expect(resultOf(s.server, 'restate')?.isError).toBe(false);
  return { sessionId, runs: [compact, after], after };
}

describe.concurrent(`the Agent SDK adapter on the real package (manual compaction)`, () => {
  it(
    'preserved through the MCP tool: the restatement matches, the write goes through',
    () =>
      inScenario(suite(), async (s) => {
        const { sessionId, runs, after } = await compactThenRestate(s, { ...s.values });
        expect(resultOf(s.server, 'restate')?.text).toContain('preserved (digest_match_fresh)');
        expect(after.denied).toEqual(['w-first']);
        expect(existsSync(s.world.file('after.txt'))).toBe(true);

        const st = await status(s, sessionId);
        expect([st.state, st.trigger]).toEqual(['preserved', 'manual']);
        const boundaryId = expectOneBoundary(s, sessionId, 1, runs[0]!.boundaries[0]!);
        expect(st.boundaryId).toBe(boundaryId);
        // The post snapshot came from the tool, in this process.
        const post = records(s, sessionId).find((r) => r.type === 'snapshot' && r.phase === 'post');
        expect(post?.runtime).toBe('claude-agent-sdk');
        expectAppSpans(s, sessionId, boundaryId, {
          trigger: 'manual',
          state: 'preserved',
          compact: runs[0]!.boundaries[0]!,
        });
        expectClean(s, runs, ['keep the plan']);
      }),
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'conflicting: a changed scope stops the write',
    () =>
      inScenario(suite(), async (s) => {
        const changed = widened(s.values);
        const { sessionId, runs, after } = await compactThenRestate(s, { ...changed });
        expect(resultOf(s.server, 'restate')?.text).toContain('conflicting (unapproved_change)');
        expect(after.denied).toEqual(['w-first', 'w-after']);
        expect(existsSync(s.world.file('after.txt'))).toBe(false);
        const reason = resultOf(s.server, 'w-after')?.text ?? '';
        expect(reason).toContain('Blocked by the continuity gate (conflicting: unapproved_change)');
        expect(reason).toContain('only a human can approve it');

        const st = await status(s, sessionId);
        expect([st.state, st.reason]).toEqual(['conflicting', 'unapproved_change']);
        const boundaryId = expectOneBoundary(s, sessionId, 1, runs[0]!.boundaries[0]!);
        expectAppSpans(s, sessionId, boundaryId, {
          trigger: 'manual',
          state: 'conflicting',
          compact: runs[0]!.boundaries[0]!,
        });
        expectClean(s, runs, rawStrings(changed));
      }),
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'dropped: a decision left out of the restatement stops the write',
    () =>
      inScenario(suite(), async (s) => {
        const { approval_boundary: _left, ...partial } = s.values;
        const { sessionId, runs, after } = await compactThenRestate(s, partial);
        expect(resultOf(s.server, 'restate')?.text).toContain('dropped (absent_after_compaction)');
        expect(after.denied).toEqual(['w-first', 'w-after']);
        expect(existsSync(s.world.file('after.txt'))).toBe(false);
        expect(resultOf(s.server, 'w-after')?.text).toContain('ask the human for "approval_boundary"');

        expect((await status(s, sessionId)).state).toBe('dropped');
        const boundaryId = expectOneBoundary(s, sessionId, 1, runs[0]!.boundaries[0]!);
        expectAppSpans(s, sessionId, boundaryId, {
          trigger: 'manual',
          state: 'dropped',
          compact: runs[0]!.boundaries[0]!,
        });
        expectClean(s, runs);
      }),
    SCENARIO_TIMEOUT_MS,
  );

  it(
    "conflicting, then the agent's own `continuity approve` is refused and a human's approval in another process releases the next write",
    () =>
      inScenario(suite(), async (s) => {
        const changed = widened(s.values);
        const { sessionId, runs } = await compactThenRestate(s, { ...changed });
        // The gate's reason printed the approval command for the human, with the two digests.
        const printed =
          /(\S+ approve --session \S+ --decision scope --from-digest \S+ --to-digest \S+) --ref/.exec(
            resultOf(s.server, 'w-after')?.text ?? '',
          );
        expect(printed, 'the approval command in the reason').not.toBeNull();
        const approveArgs = printed![1]!.split(' ').slice(printed![1]!.split(' ').indexOf('approve'));

        // The agent tries to approve its own change in its Bash tool: refused, nothing recorded.
        const selfApproval = await resumeWith(s, sessionId, [
          bash('self-approve', `continuity ${approveArgs.join(' ')} --ref CHG-1 --by agent`),
          write('w-self', s.world.file('self.txt'), 'after approving myself\n'),
        ]);
        expect(selfApproval.denied).toEqual(['self-approve', 'w-self']);
        expect(resultOf(s.server, 'self-approve')?.text).toContain('approvals come from a human');
        expect(records(s, sessionId).filter((r) => r.type === 'approval')).toEqual([]);
        expect(existsSync(s.world.file('self.txt'))).toBe(false);

        // A human approves in their own terminal: another process, the same ledger.
        const human = await s.world.cli([...approveArgs, '--ref', 'CHG-1042', '--by', 'reviewer-17']);
        expect(human.status, human.stderr).toBe(0);
        const released = await resumeWith(s, sessionId, [
          write('w-approved', s.world.file('approved.txt'), 'approved\n'),
        ]);
        expect(released.denied).toEqual([]);
        expect(existsSync(s.world.file('approved.txt'))).toBe(true);
        const st = await status(s, sessionId);
        expect([st.state, st.reason]).toEqual(['approved_change', 'approved_chain']);
        expect(records(s, sessionId).filter((r) => r.type === 'approval')).toHaveLength(1);
        expectClean(s, [...runs, selfApproval, released], rawStrings(changed));
      }),
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'preserved through the CLI: the agent runs the printed `continuity observe` in its Bash tool',
    () =>
      inScenario(suite(), async (s) => {
        const { sessionId, runs, after } = await compactThenRestate(s, { ...s.values }, 'cli');
        expect(resultOf(s.server, 'restate')?.text).toContain('preserved (digest_match_fresh)');
        expect(after.denied).toEqual(['w-first']);
        expect(existsSync(s.world.file('after.txt'))).toBe(true);
        // The CLI took the runtime from the session's boundary in the ledger.
        const boundaryId = expectOneBoundary(s, sessionId, 1, runs[0]!.boundaries[0]!);
        expect((await status(s, sessionId)).state).toBe('preserved');
        // `continuity observe` is another process: its post span went over OTLP, as the CLI's do.
        const post = s.suite.receiver.spans.find(
          (x) => x.attributes[ATTR_SESSION_ID] === sessionId && x.name === SPAN_COMPACTION_POST,
        );
        expect(post?.attributes[ATTR_RUNTIME]).toBe('claude-agent-sdk');
        expect(post?.service).toBe('claude-agent-sdk');
        expect(boundaryId).toMatch(/^sdk-/);
        expectClean(s, runs);
      }),
    SCENARIO_TIMEOUT_MS,
  );
});

describe('the restatement tool', () => {
  it(
    'is offered with its schema (alwaysLoad) and the permission it needs',
    () =>
      inScenario(suite(), async (s) => {
        await startSession(s);
        const first = s.server.requestsOf('turn')[0]!;
        const tools = (first.body?.tools ?? []) as Array<{ name: string; input_schema?: unknown }>;
        const mine = tools.find((t) => t.name === RESTATE_TOOL_NAME);
        expect(mine, 'the tool is in the request, not deferred').toBeDefined();
        expect(JSON.stringify(mine!.input_schema)).toContain('"decisions"');
        expect(s.world.continuity.allowedTools).toEqual([RESTATE_TOOL_NAME]);
      }),
    SCENARIO_TIMEOUT_MS,
  );
});
