/**
 * How the real Claude Code binary compacts, and what the adapter makes of each way (issue 10):
 * automatic compaction driven by the usage the model server reports, a project with a CLAUDE.md
 * (InstructionsLoaded), `--resume` across processes, two sessions in one project at once, a
 * subagent, a PreCompact that cannot write the ledger, a PreCompact with no compaction after it,
 * and what the hooks' output tells the model (PreCompact's instruction in the summarization
 * request, SessionStart's restatement request in the next turn).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ATTR_EVIDENCE_MISSING, SPAN_COMPACTION_PRE } from '../../src/otel/semconv.js';
import {
  contentText,
  lastUserMessage,
  type MessagesBody,
  startAnthropicServer,
} from '../support/anthropic-server.js';
import {
  bash,
  deniedIds,
  edit,
  restate,
  restatementCommand,
  resultOf,
  SCENARIO_TIMEOUT_MS,
  spansOf,
  useSuite,
  write,
} from './harness.js';
import {
  boundaryIds,
  compactManually,
  DECISION_NAMES,
  debugLines,
  endScenario,
  expectBoundarySpans,
  expectClean,
  expectOneCapturedBoundary,
  expectTokens,
  rawStrings,
  records,
  resumeWith,
  type Scenario,
  scenario,
  sessionOf,
  startSession,
  status,
  widened,
} from './scenario.js';

const suite = useSuite();

/** Usage that puts the context over the threshold of `--autocompact 100000` (window 80 000). */
const FULL = { input_tokens: 190_000 };
const AUTOCOMPACT = ['--autocompact', '100000'];

/** The text block that carries the restatement request, in the first request that has one. */
function contextBlock(s: Scenario): string | undefined {
  for (const r of s.server.requestsOf('turn')) {
    for (const m of r.body?.messages ?? []) {
      const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
      for (const b of blocks)
        if (b.text && restatementCommand({ messages: [{ role: m.role, content: b.text }] })) return b.text;
    }
  }
  return undefined;
}

/** The compaction prompt of a summarization request: the last text block of its last user message. */
function compactionPrompt(body: MessagesBody | undefined): string {
  const last = lastUserMessage(body)?.content;
  if (typeof last === 'string') return last;
  return contentText(last?.filter((b) => b.type === 'text').slice(-1));
}

describe.concurrent('compaction on the real binary', () => {
  it(
    'automatic compaction restated in the very first request after it: InstructionsLoaded(compact), which Claude Code does not await, changes nothing',
    async () => {
      const s = await scenario(suite(), { claudeMd: '# Project rules\nUse tabs for indentation.\n' });
      try {
        s.server.push(
          { tools: [bash('b-small', 'echo small')], usage: { input_tokens: 5_000 } },
          { tools: [bash('b-full', 'echo full')], usage: FULL },
          // The first request after the compaction: InstructionsLoaded(compact) fires beside it.
          restate('restate', { ...s.values }),
          write('w-after', s.world.file('after.txt'), 'after restating\n'),
          'Done.',
        );
        const r = await s.world.claude(s.server, ['-p', 'start the task', ...AUTOCOMPACT]);
        const sessionId = sessionOf(r);
        expect(s.server.requestsOf('summary')).toHaveLength(1);
        expect(debugLines(s).some((l) => /InstructionsLoaded:compact \[node /.test(l))).toBe(true);
        expect(resultOf(s.server, 'restate')?.text).toContain('preserved (digest_match_fresh)');
        expect(deniedIds(r)).toEqual([]);
        expect(existsSync(s.world.file('after.txt'))).toBe(true);
        // Whenever InstructionsLoaded ran, before or after the restatement: one boundary, preserved.
        const boundaryId = expectOneCapturedBoundary(s, sessionId, 1);
        expect((await status(s, sessionId)).state).toBe('preserved');
        // A write in the next process, after every late hook of this one has run.
        const again = await resumeWith(s, sessionId, [write('w-next', s.world.file('next.txt'), 'next\n')]);
        expect(deniedIds(again)).toEqual([]);
        expect(boundaryIds(s, sessionId)).toEqual([boundaryId]);
        expectClean(s);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'automatic compaction (a project with a CLAUDE.md): PreCompact(auto), one boundary, the restatement in the same turn, preserved; a --resume in the next process keeps it',
    async () => {
      const s = await scenario(suite(), { claudeMd: '# Project rules\nUse tabs for indentation.\n' });
      try {
        s.server.push(
          { tools: [bash('b-small', 'echo small')], usage: { input_tokens: 5_000 } },
          // The reply that reports a nearly full context: the binary compacts before its next request.
          { tools: [write('w-before', s.world.file('before.txt'), 'before\n')], usage: FULL },
          write('w-first', s.world.file('first.txt'), 'first after compaction\n'),
          edit('e-first', s.world.file('before.txt'), 'before', 'edited before restating'),
          restate('restate', { ...s.values }),
          write('w-after', s.world.file('after.txt'), 'after restating\n'),
          edit('e-after', s.world.file('before.txt'), 'before', 'edited after restating'),
          'Done.',
        );
        const r = await s.world.claude(s.server, ['-p', 'start the task', ...AUTOCOMPACT]);
        const sessionId = sessionOf(r);
        expect(s.server.requestsOf('summary')).toHaveLength(1);
        // PreCompact's instruction reaches an automatic compaction's summarization request too.
        const prompt = compactionPrompt(s.server.requestsOf('summary')[0]!.body);
        for (const name of DECISION_NAMES) expect(prompt).toContain(name);
        for (const raw of rawStrings(s.values)) expect(prompt).not.toContain(raw);
        expect(existsSync(s.world.file('before.txt'))).toBe(true);
        // Write and Edit wait for the restatement, and go through after it.
        expect(deniedIds(r)).toEqual(['w-first', 'e-first']);
        expect(resultOf(s.server, 'w-first')?.text).toContain('(unverified: post_observation_missing)');
        expect(resultOf(s.server, 'e-first')?.text).toContain('(unverified: post_observation_missing)');
        expect(resultOf(s.server, 'restate')?.text).toContain('preserved (digest_match_fresh)');
        expect(existsSync(s.world.file('after.txt'))).toBe(true);
        expect(readFileSync(s.world.file('before.txt'), 'utf8')).toBe('edited after restating\n');

        // InstructionsLoaded fired for the CLAUDE.md after the compaction, and our hook's answer
        // was accepted (no JSON output Claude Code rejects for that event).
        const debug = debugLines(s);
        expect(debug.some((l) => /InstructionsLoaded:compact \[node /.test(l))).toBe(true);
        expect(debug.filter((l) => /InstructionsLoaded.*(failed|validation)/i.test(l))).toEqual([]);

        // The next process resumes the session: the boundary stays resolved, the write goes through.
        const again = await resumeWith(s, sessionId, [
          write('w-resumed', s.world.file('resumed.txt'), 'resumed\n'),
        ]);
        expect(deniedIds(again)).toEqual([]);
        expect(existsSync(s.world.file('resumed.txt'))).toBe(true);

        const st = await status(s, sessionId);
        expect([st.state, st.trigger]).toEqual(['preserved', 'auto']);
        const boundaryId = expectOneCapturedBoundary(s, sessionId, 1);
        // The reply that filled the context reported 190 000 input + 10 output tokens.
        expectTokens(s, sessionId, boundaryId, 190_010);
        await expectBoundarySpans(s, sessionId, boundaryId, {
          trigger: 'auto',
          state: 'preserved',
          tokensBefore: 190_010,
          // Restated in the compacting turn, before any hook read the binary's count after the
          // compaction (it reaches the ledger at the next PostToolUse): the post span has none.
          tokensAfterOnPost: false,
        });
        expectClean(s);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    "PreCompact's instruction reaches the summarization request (decision names, never values), after the user's own instructions; SessionStart's restatement request reaches the next model request",
    async () => {
      const s = await scenario(suite());
      try {
        const sessionId = await startSession(s);
        const instructions = 'keep the migration plan';
        await compactManually(s, sessionId, instructions);
        const prompt = compactionPrompt(s.server.requestsOf('summary')[0]!.body);
        expect(prompt).toContain('Additional Instructions');
        expect(prompt).toContain(instructions);
        const extra = prompt.slice(prompt.indexOf(instructions) + instructions.length);
        for (const name of DECISION_NAMES) expect(extra, `decision ${name} named`).toContain(name);
        for (const raw of rawStrings(s.values)) expect(prompt).not.toContain(raw);

        await resumeWith(s, sessionId, [restate('restate', { ...s.values })]);
        const context = contextBlock(s);
        expect(context, 'the restatement request reached the model').toBeDefined();
        expect(context).toContain(`--session ${sessionId}`);
        for (const name of DECISION_NAMES) expect(context).toContain(`"${name}"`);
        for (const raw of rawStrings(s.values)) expect(context).not.toContain(raw);
        expect(resultOf(s.server, 'restate')?.text).toContain('preserved');
        expectClean(s, [instructions]);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'a PreCompact(auto) with no compaction after it (the first reply already reports a full context) does not stop writes; the next real compaction is captured',
    async () => {
      const s = await scenario(suite());
      try {
        s.server.push(
          { tools: [bash('b-full', 'echo full')], usage: FULL },
          write('w-lone', s.world.file('lone.txt'), 'after the lone PreCompact\n'),
          // The turn ends on a full context: the next turn compacts before its first request.
          { text: 'Done.', usage: FULL },
        );
        const r = await s.world.claude(s.server, ['-p', 'start the task', ...AUTOCOMPACT]);
        const sessionId = sessionOf(r);
        // The lone PreCompact: the hook ran, nothing was summarized.
        expect(debugLines(s).some((l) => /PreCompact:auto \[node /.test(l))).toBe(true);
        expect(s.server.requestsOf('summary')).toHaveLength(0);
        expect(deniedIds(r)).toEqual([]);
        expect(existsSync(s.world.file('lone.txt'))).toBe(true);

        // The next turn compacts at its start (the last reply still reports a full context).
        const again = await resumeWith(
          s,
          sessionId,
          [
            write('w-first', s.world.file('first.txt'), 'first after compaction\n'),
            restate('restate', { ...s.values }),
            write('w-after', s.world.file('after.txt'), 'after restating\n'),
          ],
          AUTOCOMPACT,
        );
        expect(s.server.requestsOf('summary')).toHaveLength(1);
        expect(deniedIds(again)).toEqual(['w-first']);
        expect(resultOf(s.server, 'restate')?.text).toContain('preserved');
        expect(existsSync(s.world.file('after.txt'))).toBe(true);
        const st = await status(s, sessionId);
        expect([st.state, st.trigger]).toEqual(['preserved', 'auto']);
        expectClean(s);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'a PreCompact that cannot write the ledger: evidence missing, the compaction completes, the gate asks (a denial in -p mode)',
    async () => {
      const s = await scenario(suite());
      try {
        const sessionId = await startSession(s);
        // For the compacting process only, the ledger is unwritable (its directory is a file).
        const blocked = join(s.world.root, 'not-a-directory');
        writeFileSync(blocked, '');
        await compactManually(s, sessionId, 'keep the plan', {
          CONTINUITY_LEDGER: join(blocked, 'ledger.jsonl'),
        });
        const r = await resumeWith(s, sessionId, [
          write('w-first', s.world.file('first.txt'), 'first after compaction\n'),
          restate('restate', { ...s.values }),
          write('w-after', s.world.file('after.txt'), 'after restating\n'),
        ]);
        // `ask` has no human to answer it in -p mode: Claude Code reports both writes as denied.
        expect(deniedIds(r)).toEqual(['w-first', 'w-after']);
        expect(existsSync(s.world.file('first.txt'))).toBe(false);
        expect(existsSync(s.world.file('after.txt'))).toBe(false);
        const reason = resultOf(s.server, 'w-after')?.text ?? '';
        expect(reason).toContain('asks a human first (unverified: pre_snapshot_missing)');
        expect(reason).toContain('ledger_write_failed');
        // The span tells the same: the pre snapshot is missing because the ledger failed.
        const spans = await spansOf(suite(), sessionId, (all) =>
          all.some((x) => x.name === SPAN_COMPACTION_PRE),
        );
        const pres = spans.filter((x) => x.name === SPAN_COMPACTION_PRE);
        expect(pres.map((x) => x.attributes[ATTR_EVIDENCE_MISSING])).toEqual(['ledger_write_failed']);
        expectClean(s);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'two sessions in one project at once: each compaction is its own boundary, one preserved and one conflicting',
    async () => {
      const s = await scenario(suite());
      const other = await startAnthropicServer({ summary: s.summary });
      try {
        const changed = widened(s.values);
        const b: Scenario = { ...s, server: other };
        const [a, c] = await Promise.all([startSession(s), startSession(b)]);
        expect(a).not.toBe(c);
        await Promise.all([compactManually(s, a, 'keep the plan'), compactManually(b, c, 'keep the plan')]);
        const [ra, rc] = await Promise.all([
          resumeWith(s, a, [
            restate('restate-a', { ...s.values }),
            write('w-a', s.world.file('a.txt'), 'from session a\n'),
          ]),
          resumeWith(b, c, [
            restate('restate-c', { ...changed }),
            write('w-c', s.world.file('c.txt'), 'from session c\n'),
          ]),
        ]);
        expect(deniedIds(ra)).toEqual([]);
        expect(deniedIds(rc)).toEqual(['w-c']);
        expect(existsSync(s.world.file('a.txt'))).toBe(true);
        expect(existsSync(s.world.file('c.txt'))).toBe(false);
        expect((await status(s, a)).state).toBe('preserved');
        expect((await status(s, c)).state).toBe('conflicting');
        const ba = expectOneCapturedBoundary(s, a, 1);
        const bc = expectOneCapturedBoundary(s, c, 1);
        expect(ba).not.toBe(bc);
        await expectBoundarySpans(s, a, ba, { trigger: 'manual', state: 'preserved' });
        await expectBoundarySpans(s, c, bc, { trigger: 'manual', state: 'conflicting' });
        expectClean(s, rawStrings(changed));
        expect(other.problems).toEqual([]);
      } finally {
        await other.close();
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    '`/clear` after a conflicting compaction starts a new session with no boundary (writes not held); the old session stays conflicting',
    async () => {
      const s = await scenario(suite());
      try {
        const sessionId = await startSession(s);
        await compactManually(s, sessionId, 'keep the plan');
        await resumeWith(s, sessionId, [restate('restate', { ...widened(s.values) })]);
        expect(resultOf(s.server, 'restate')?.text).toContain('conflicting');
        const cleared = await s.world.claude(s.server, ['-p', '/clear', '--resume', sessionId]);
        const fresh = sessionOf(cleared);
        expect(fresh).not.toBe(sessionId);
        const r = await resumeWith(s, fresh, [
          write('w-fresh', s.world.file('fresh.txt'), 'in the new session\n'),
        ]);
        expect(deniedIds(r)).toEqual([]);
        expect(existsSync(s.world.file('fresh.txt'))).toBe(true);
        expect(boundaryIds(s, fresh)).toEqual([]);
        expect((await status(s, sessionId)).state).toBe('conflicting');
        expectClean(s, rawStrings(widened(s.values)));
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    "a subagent (Agent tool) is held by its parent session's boundary: its write waits for the restatement and goes through after it",
    async () => {
      const s = await scenario(suite());
      try {
        // The gate holds the Agent tool itself while writes are held (a tool it does not know:
        // `gate.unknownTools`, default ask); let it through so the subagent's own calls show.
        writeFileSync(
          s.world.file('.continuity/config.json'),
          `${JSON.stringify({ gate: { unknownTools: 'allow' } })}\n`,
        );
        // A relaxation: obeyed once the human sealed the file.
        const sealed = await s.world.continuity(['config', 'seal']);
        expect(sealed.status, sealed.stdout).toBe(0);
        const sessionId = await startSession(s);
        await compactManually(s, sessionId, 'keep the plan');
        const agent = (id: string) => ({
          tool: 'Agent',
          id,
          input: {
            description: 'write a file',
            prompt: 'Write the file.',
            subagent_type: 'general-purpose',
            run_in_background: false,
          },
        });
        const r = await resumeWith(s, sessionId, [
          agent('agent-1'),
          write('w-sub-1', s.world.file('sub-1.txt'), 'from the subagent, before restating\n'),
          'Subagent report: the write was held.',
          restate('restate', { ...s.values }),
          agent('agent-2'),
          write('w-sub-2', s.world.file('sub-2.txt'), 'from the subagent, after restating\n'),
          'Subagent report: written.',
        ]);
        // The subagent's hooks carry the parent's session id: the parent's boundary holds it.
        expect(resultOf(s.server, 'w-sub-1')?.text).toContain('(unverified: post_observation_missing)');
        expect(existsSync(s.world.file('sub-1.txt'))).toBe(false);
        expect(resultOf(s.server, 'restate')?.text).toContain('preserved');
        expect(resultOf(s.server, 'w-sub-2')?.isError).toBe(false);
        expect(existsSync(s.world.file('sub-2.txt'))).toBe(true);
        expect(deniedIds(r)).not.toContain('w-sub-2');
        expect((await status(s, sessionId)).state).toBe('preserved');
        // No subagent opened a boundary or a session of its own.
        expect(boundaryIds(s, sessionId)).toHaveLength(1);
        expect(
          new Set(
            s.world
              .ledgerRecords()
              // The human's approver key, pinned by the configuration's seal, belongs to no session.
              .filter((x) => x.type !== 'approver_key')
              .map((x) => x.sessionId),
          ),
        ).toEqual(new Set([sessionId]));
        expect(records(s, sessionId).length).toBeGreaterThan(0);
        expectClean(s);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
