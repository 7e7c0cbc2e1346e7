/**
 * Whole Claude Code sessions replayed through real processes of the CLI (issue 6): the six cases
 * of the reproduction, each from PreCompact to the first write after it, with the gate's decision
 * at each step and the spans that reached a local OTLP receiver; and the session in which the
 * gate stops a write after a scope conflict and allows it after a human's approval.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUMMARY_INSTRUCTION_PREFIX } from '../../src/adapters/core/messages.js';
import { classifyFixture, parseFixture } from '../../src/fixture/cases.js';
import {
  ATTR_BOUNDARY_ID,
  ATTR_DECISION_NAMES,
  ATTR_GEN_AI_CONVERSATION_COMPACTED,
  ATTR_RUNTIME,
  ATTR_SESSION_ID,
  ATTR_TRIGGER,
  decisionAttr,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import {
  gate,
  hook,
  ledgerRecords,
  makeWorld,
  type Receiver,
  ROOT,
  runCli,
  startReceiver,
  stateBytes,
  type World,
  widePermissions,
  writeTaskRecord,
} from './harness.js';

interface FixtureDecision {
  value: unknown;
  observedAt: string;
}
interface FixtureCase {
  id: string;
  pre: { decisions: Record<string, FixtureDecision> };
  post: { decisions: Record<string, FixtureDecision> };
  approvals?: Array<{
    decision: string;
    from: unknown;
    to: unknown;
    approvalRef: string;
    approvedBy: string;
  }>;
}

const CASES_PATH = join(ROOT, 'examples', 'six-case', 'cases.json');
const CASES = (JSON.parse(readFileSync(CASES_PATH, 'utf8')) as { cases: FixtureCase[] }).cases;
/** What the core classifier says about each case of the fixture: the replay must agree. */
const EXPECTED = new Map(
  classifyFixture(parseFixture(JSON.parse(readFileSync(CASES_PATH, 'utf8')), CASES_PATH)).map((r) => [
    r.id,
    r.classification.state,
  ]),
);

const WRITE = { file_path: 'services/ledger/reconcile.ts', content: 'export const x = 1;\n' };

/** The restatement command as the messages print it: `continuity`, or `node …/continuity.js` when it is not on PATH. */
function observeCommandFor(sessionId: string): RegExp {
  return new RegExp(`(?:^|\\s)(?:continuity|node \\S+/bin/continuity\\.js) observe --session ${sessionId} `);
}

/** Every raw string value of a case, for the leak scan (long enough not to match by chance). */
function rawStrings(c: FixtureCase): string[] {
  const out = new Set<string>();
  const walk = (v: unknown) => {
    if (typeof v === 'string' && v.length >= 8) out.add(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  for (const d of Object.values(c.pre.decisions)) walk(d.value);
  for (const d of Object.values(c.post.decisions)) walk(d.value);
  return [...out];
}

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

describe('Claude Code session replays', () => {
  describe('the six cases, from PreCompact to the first write after it', () => {
    for (const [i, c] of CASES.entries()) {
      it(`${c.id}: the gate and observe agree with the classifier (${EXPECTED.get(c.id)})`, async () => {
        const sessionId = `replay-${i + 1}-${c.id}`;
        const world: World = makeWorld(
          receiver.endpoint,
          i === 4 ? { CONTINUITY_OTLP_PROTOCOL: 'http/protobuf' } : {},
        );
        try {
          writeTaskRecord(
            world,
            Object.fromEntries(Object.entries(c.pre.decisions).map(([n, d]) => [n, { value: d.value }])),
          );
          const secretSummary = `SUMMARY-${sessionId}-the compaction summary must never be stored`;

          // Startup: no compaction yet, writes are not the gate's business.
          expect(
            (await hook(world, sessionId, 'SessionStart', { source: 'startup', model: 'claude-sonnet' }))
              .status,
          ).toBe(0);
          expect((await gate(world, sessionId, 'Write', WRITE)).decision).toBe('allow');

          // Compaction.
          const preTime = Date.now();
          const pre = await hook(world, sessionId, 'PreCompact', {
            trigger: 'auto',
            custom_instructions: '',
          });
          expect(pre.status).toBe(0);
          // PreCompact's stdout is appended to the summarizer's instructions: names, never values.
          expect(pre.stdout).toContain(SUMMARY_INSTRUCTION_PREFIX);
          for (const name of Object.keys(c.pre.decisions)) expect(pre.stdout).toContain(`"${name}"`);
          for (const raw of rawStrings(c)) expect(pre.stdout).not.toContain(raw);
          expect(
            (await hook(world, sessionId, 'PostCompact', { trigger: 'auto', compact_summary: secretSummary }))
              .status,
          ).toBe(0);
          const start = await hook(world, sessionId, 'SessionStart', { source: 'compact' });
          const context = JSON.parse(start.stdout).hookSpecificOutput;
          expect(context.hookEventName).toBe('SessionStart');
          for (const name of Object.keys(c.pre.decisions))
            expect(context.additionalContext).toContain(`"${name}"`);
          expect(context.additionalContext).toMatch(observeCommandFor(sessionId));
          for (const raw of rawStrings(c)) expect(context.additionalContext).not.toContain(raw);
          const loaded = await hook(world, sessionId, 'InstructionsLoaded', {
            file_path: join(world.project, 'CLAUDE.md'),
            memory_type: 'Project',
            load_reason: 'compact',
          });
          expect(loaded.status).toBe(0);
          expect(loaded.stdout).toBe(''); // the request was already made once for this boundary

          // The first write after compaction waits for the restatement.
          const blocked = await gate(world, sessionId, 'Write', WRITE);
          expect(blocked.decision).toBe('deny');
          expect(blocked.reason).toContain('post_observation_missing');
          expect(blocked.reason).toMatch(observeCommandFor(sessionId));
          // …but restating is always allowed through Bash.
          const restate = `continuity observe --session ${sessionId} --decisions - <<'EOF'\n{"scope": 1}\nEOF`;
          expect((await gate(world, sessionId, 'Bash', { command: restate })).decision).toBe('allow');

          // A human approval recorded in between (case 3), by the human's own terminal.
          for (const a of c.approvals ?? []) {
            const r = await runCli(
              [
                'approve',
                '--session',
                sessionId,
                '--decision',
                a.decision,
                '--from',
                JSON.stringify(a.from),
                '--to',
                JSON.stringify(a.to),
                '--ref',
                a.approvalRef,
                '--by',
                a.approvedBy,
              ],
              { env: world.shellEnv, cwd: world.project },
            );
            expect(r.status, r.stderr).toBe(0);
          }

          // The agent restates what it now believes (the fixture's post side), from its Bash tool:
          // no --session, no CLAUDE_PROJECT_DIR, run from a subdirectory of the project.
          const restated: Record<string, unknown> = {};
          for (const [n, d] of Object.entries(c.post.decisions)) {
            const stale = Date.parse(d.observedAt) <= Date.parse(c.pre.decisions[n]?.observedAt ?? '');
            restated[n] = stale
              ? { value: d.value, observedAt: new Date(preTime - 1000).toISOString() }
              : d.value;
          }
          const sub = join(world.project, 'services');
          mkdirSync(sub, { recursive: true });
          const obs = await runCli(['observe', '--decisions', '-', '--json'], {
            input: JSON.stringify(restated),
            env: world.shellEnv,
            cwd: sub,
          });
          expect(obs.status, obs.stderr).toBe(0);
          const result = JSON.parse(obs.stdout);
          expect(result.sessionId).toBe(sessionId);
          expect(result.state).toBe(EXPECTED.get(c.id));

          // The first write after the restatement.
          const after = await gate(world, sessionId, 'Write', WRITE);
          const healthy = result.state === 'preserved' || result.state === 'approved_change';
          expect(after.decision).toBe(healthy ? 'allow' : 'deny');
          if (!healthy) expect(after.reason).toContain(`(${result.state}: ${result.reason})`);

          // The ledger holds the evidence, digests only; nothing raw anywhere on disk.
          const records = ledgerRecords(world);
          const types = records.map((r) => `${r.type}${r.phase ? `:${r.phase}` : ''}`);
          expect(types).toEqual(
            expect.arrayContaining(['snapshot:pre', 'boundary', 'snapshot:post', 'classification']),
          );
          const disk = stateBytes(world).toString('utf8');
          for (const raw of [...rawStrings(c), secretSummary, world.root]) expect(disk).not.toContain(raw);
          expect(widePermissions(world.state)).toEqual([]);

          // The spans that reached the receiver: pre and post of this boundary, same trace, linked.
          const mine = receiver.spans.filter((s) => s.attributes[ATTR_SESSION_ID] === sessionId);
          const preSpan = mine.find((s) => s.name === SPAN_COMPACTION_PRE);
          const postSpan = mine.find((s) => s.name === SPAN_COMPACTION_POST);
          expect(preSpan).toBeDefined();
          expect(postSpan).toBeDefined();
          expect(preSpan!.attributes[ATTR_RUNTIME]).toBe('claude-code');
          expect(preSpan!.attributes[ATTR_TRIGGER]).toBe('auto');
          expect(preSpan!.attributes[ATTR_BOUNDARY_ID]).toBe(result.boundaryId);
          expect([...(preSpan!.attributes[ATTR_DECISION_NAMES] as string[])].sort()).toEqual(
            Object.keys(c.pre.decisions).sort(),
          );
          for (const n of Object.keys(c.pre.decisions)) {
            expect(String(preSpan!.attributes[decisionAttr(n, 'digest')])).toMatch(/^sha256:[0-9a-f]{64}$/);
          }
          expect(postSpan!.attributes[ATTR_GEN_AI_CONVERSATION_COMPACTED]).toBe(true);
          expect(postSpan!.traceId).toBe(preSpan!.traceId);
          expect(postSpan!.links).toContainEqual({ traceId: preSpan!.traceId, spanId: preSpan!.spanId });
          const wire = Buffer.concat(receiver.requests.map((r) => r.body)).toString('latin1');
          for (const raw of [...rawStrings(c), secretSummary, world.root]) expect(wire).not.toContain(raw);
          expect(receiver.errors).toEqual([]);
        } finally {
          world.dispose();
        }
      });
    }
  });

  describe('a scope conflict stops writes until a human approves the change', () => {
    it("denies the write, refuses the agent's own approval, and allows the write after the human approves", async () => {
      const sessionId = 'conflict-then-approval';
      const world = makeWorld(receiver.endpoint);
      try {
        const scope = { repository: 'acme/payments', paths: ['services/ledger'] };
        const widened = { repository: 'acme/payments', paths: ['services/ledger', 'services/billing'] };
        writeTaskRecord(world, {
          scope: { value: scope },
          approval_boundary: { value: { requires_human: ['deploy', 'schema_migration'] } },
          acceptance_test: { value: { command: 'npm test -- ledger', must_pass: true } },
        });
        await hook(world, sessionId, 'SessionStart', { source: 'startup' });
        await hook(world, sessionId, 'PreCompact', {
          trigger: 'manual',
          custom_instructions: 'keep the plan',
        });
        await hook(world, sessionId, 'PostCompact', { trigger: 'manual', compact_summary: 'summary' });
        await hook(world, sessionId, 'SessionStart', { source: 'compact' });

        const obs = await runCli(['observe', '--session', sessionId, '--decisions', '-'], {
          input: JSON.stringify({
            scope: widened,
            approval_boundary: { requires_human: ['deploy', 'schema_migration'] },
            acceptance_test: { command: 'npm test -- ledger', must_pass: true },
          }),
          env: world.shellEnv,
          cwd: world.project,
        });
        expect(obs.status, obs.stderr).toBe(0);
        expect(obs.stdout).toContain('conflicting (unapproved_change)');
        expect(obs.stdout).toContain('"scope" changed after compaction without a human approval');
        expect(obs.stdout).toMatch(
          new RegExp(
            `(?:continuity|node \\S+/bin/continuity\\.js) approve --session ${sessionId} --decision scope --from-digest sha256:`,
          ),
        );

        const denied = await gate(world, sessionId, 'Edit', {
          file_path: 'services/billing/x.ts',
          old_string: 'a',
          new_string: 'b',
        });
        expect(denied.decision).toBe('deny');
        expect(denied.reason).toContain('(conflicting: unapproved_change)');
        expect((await gate(world, sessionId, 'Bash', { command: 'npm run migrate' })).decision).toBe('deny');

        // The agent tries to approve its own change: refused, whatever the state.
        const selfApproval = await gate(world, sessionId, 'Bash', {
          command: `continuity approve --session ${sessionId} --decision scope --from x --to y --ref r --by agent`,
        });
        expect(selfApproval.decision).toBe('deny');
        expect(selfApproval.reason).toContain('approvals come from a human');
        expect(
          (
            await gate(world, sessionId, 'Bash', {
              command: 'cd /tmp && npx continuity approve --decision scope',
            })
          ).decision,
        ).toBe('deny');

        // The human approves in their own terminal.
        const approve = await runCli(
          [
            'approve',
            '--session',
            sessionId,
            '--decision',
            'scope',
            '--from',
            JSON.stringify(scope),
            '--to',
            JSON.stringify(widened),
            '--ref',
            'CHG-1042',
            '--by',
            'reviewer-17',
          ],
          { env: world.shellEnv, cwd: world.project },
        );
        expect(approve.status, approve.stderr).toBe(0);

        const allowed = await gate(world, sessionId, 'Edit', {
          file_path: 'services/billing/x.ts',
          old_string: 'a',
          new_string: 'b',
        });
        expect(allowed.decision).toBe('allow');
        expect(allowed.run.stdout).toBe('');
        const status = await runCli(
          [
            'observe',
            '--session',
            sessionId,
            '--json',
            '--decision',
            `scope=${JSON.stringify(widened)}`,
            '--decision',
            'approval_boundary={"requires_human":["deploy","schema_migration"]}',
            '--decision',
            'acceptance_test={"command":"npm test -- ledger","must_pass":true}',
          ],
          {
            env: world.shellEnv,
            cwd: world.project,
          },
        );
        const result = JSON.parse(status.stdout);
        expect(result.state).toBe('approved_change');
        expect(result.writes).toBe('allowed');
        expect(result.next).toContain('CHG-1042');
      } finally {
        world.dispose();
      }
    });

    it('a dropped decision blocks writes until the agent restores it', async () => {
      const sessionId = 'dropped-then-restored';
      const world = makeWorld(receiver.endpoint);
      try {
        const decisions = {
          scope: { repository: 'acme/payments', paths: ['services/ledger'] },
          approval_boundary: { requires_human: ['deploy', 'schema_migration'] },
          acceptance_test: { command: 'npm test -- ledger', must_pass: true },
        };
        writeTaskRecord(
          world,
          Object.fromEntries(Object.entries(decisions).map(([n, v]) => [n, { value: v }])),
        );
        await hook(world, sessionId, 'PreCompact', { trigger: 'auto' });
        await hook(world, sessionId, 'PostCompact', { trigger: 'auto', compact_summary: 's' });
        const { approval_boundary: _dropped, ...partial } = decisions;
        const first = await runCli(['observe', '--session', sessionId, '--decisions', '-'], {
          input: JSON.stringify(partial),
          env: world.shellEnv,
          cwd: world.project,
        });
        expect(first.stdout).toContain('dropped (absent_after_compaction)');
        expect(first.stdout).toContain('"approval_boundary" is missing');
        const denied = await gate(world, sessionId, 'Write', WRITE);
        expect(denied.decision).toBe('deny');
        expect(denied.reason).toContain('ask the human for "approval_boundary"');
        const second = await runCli(['observe', '--session', sessionId, '--decisions', '-'], {
          input: JSON.stringify(decisions),
          env: world.shellEnv,
          cwd: world.project,
        });
        expect(second.stdout).toContain('preserved (digest_match_fresh)');
        expect((await gate(world, sessionId, 'Write', WRITE)).decision).toBe('allow');
      } finally {
        world.dispose();
      }
    });
  });
});
