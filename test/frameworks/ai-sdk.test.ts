/**
 * The Vercel AI SDK recipe on the real package: `ai` 7.0.185 `generateText` with `@ai-sdk/openai`
 * 4.0.126 (chat completions) against our scripted server on 127.0.0.1, `@ai-sdk/otel` 1.0.185 for
 * its spans, on Node 22 (test/frameworks/harness.ts). The application shortens its conversation
 * in `prepareStep` with agent-continuity/ai-sdk's `compact`, gates tools with its `toolApproval`
 * and maps the session onto its spans with its `enrichSpan`. What the real package sends, calls
 * and traces is what is asserted.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { SUMMARY_INSTRUCTION_PREFIX } from '../../src/adapters/core/messages.js';
import {
  ATTR_CONTINUITY_STATE,
  ATTR_RUNTIME,
  ATTR_SESSION_ID,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import { humanApproves, statusOf } from '../support/evidence.js';
import {
  type ChatServer,
  messageText,
  type Step,
  startChatServer,
  toolResults,
} from '../support/openai-chat-server.js';
import { PEERS } from '../support/peers.js';
import { rawStrings, type TaskValues, taskValues, widened } from '../support/task.js';
import {
  type App,
  type AppSpan,
  ensurePeers,
  INSTALL_TIMEOUT_MS,
  makeWorld,
  type Peers,
  SCENARIO_TIMEOUT_MS,
  startApp,
  type World,
} from './harness.js';

const RESTATE = 'continuity_restate';
const DECISION_NAMES = ['approval_boundary', 'scope', 'acceptance_test'];
/** The app shortens a conversation of 3 messages or more above this many characters, at a turn's start. */
const COMPACT_ABOVE_CHARS = 10_000;
const LONG_BRIEF = `Work on the ledger service. ${'Context that fills the window. '.repeat(400)}`;

interface Turn {
  text: string;
  approvals: Array<{ approvalId: string; toolName: string; reason?: string }>;
}

let peers: Peers;
beforeAll(async () => {
  peers = await ensurePeers(PEERS.aiSdk);
}, INSTALL_TIMEOUT_MS);

interface Scenario {
  world: World;
  server: ChatServer;
  app: App;
  values: TaskValues;
  session: string;
  turn(text: string): Promise<Turn>;
  respond(approvalId: string, approved: boolean): Promise<Turn>;
  close(): Promise<void>;
}

const write = (id: string, path: string): Step => ({
  toolCalls: [{ id, name: 'write_file', args: { path, content: `${id}\n` } }],
});
const restate = (id: string, decisions: unknown): Step => ({
  toolCalls: [{ id, name: RESTATE, args: { decisions } }],
});

async function scenario(steps: Step[], values: TaskValues): Promise<Scenario> {
  const world = await makeWorld(values);
  const server = await startChatServer({
    steps,
    summary: '## Summary\nThe brief was read; a.txt was written.',
    jsonUnlessStreamed: true,
  });
  const app = await startApp(peers, 'ai-sdk', world.env);
  await app.call('setup', {
    baseURL: server.url,
    project: world.project,
    compactAboveChars: COMPACT_ABOVE_CHARS,
  });
  const session = `ai-session-${Math.random().toString(16).slice(2, 10)}`;
  return {
    world,
    server,
    app,
    values,
    session,
    turn: (text) => app.call<Turn>('turn', { session, text }),
    respond: (approvalId, approved) => app.call<Turn>('respond', { session, approvalId, approved }),
    close: async () => {
      await app.close();
      await server.close();
      await world.close();
    },
  };
}

function resultOf(server: ChatServer, callId: string): string | undefined {
  for (const r of server.requests) {
    const t = toolResults(r).get(callId);
    if (t !== undefined) return t;
  }
  return undefined;
}

/** A long first turn with a write (no compaction yet), then "continue": `prepareStep` compacts at its start. */
async function compactedSession(s: Scenario): Promise<Turn> {
  await s.turn(LONG_BRIEF);
  expect(existsSync(s.world.file('a.txt')), 'the write before any compaction ran').toBe(true);
  expect(s.server.requests.filter((r) => r.kind === 'summary')).toHaveLength(0);
  return s.turn('continue the task');
}

describe('Vercel AI SDK recipe (ai 7.0.185, prepareStep compaction, toolApproval, @ai-sdk/otel)', () => {
  it(
    "preserved: the summary keeps the named decisions, toolApproval denies the write until the agent restates; session.id on the AI SDK's spans and ours in its trace",
    async () => {
      const values = taskValues();
      const s = await scenario(
        [
          write('w-a', 'a.txt'),
          { text: 'Wrote a.txt.' },
          write('w-before', 'b.txt'),
          restate('r-1', values),
          write('w-after', 'b.txt'),
          { text: 'Done.' },
        ],
        values,
      );
      try {
        await compactedSession(s);
        const summary = s.server.requests.find((r) => r.kind === 'summary');
        const prompt = (summary?.body?.messages ?? []).map(messageText).join('\n');
        const line = prompt.split('\n').find((l) => l.startsWith(SUMMARY_INSTRUCTION_PREFIX));
        expect(line, 'the sentence reached the summarizer').toBeDefined();
        for (const n of DECISION_NAMES) expect(line).toContain(`"${n}"`);
        // The first model call after the compaction read the summary and our request.
        const next = s.server.requests.find((r) => r.kind === 'step' && r.step === 2)!;
        const seen = next.body!.messages.map(messageText).join('\n');
        expect(seen).toContain('Summary of the conversation so far:');
        expect(seen).toContain('[continuity] This session was just compacted');
        expect(seen).not.toContain('Context that fills the window.');
        // Denied before the restatement (the tool never ran), allowed after.
        expect(resultOf(s.server, 'w-before')).toContain(
          'Blocked by the continuity gate (unverified: post_observation_missing)',
        );
        expect(resultOf(s.server, 'r-1')).toContain('continuity: preserved (digest_match_fresh)');
        expect(resultOf(s.server, 'w-after')).toContain('wrote b.txt');
        const st = await statusOf<{ state: string; reason: string }>(s.world.cli, s.session);
        expect([st.state, st.reason]).toEqual(['preserved', 'digest_match_fresh']);

        const spans = await s.app.call<AppSpan[]>('spans');
        const ai = spans.filter(
          (x) =>
            x.name.startsWith('invoke_agent') ||
            x.name.startsWith('chat ') ||
            x.name.startsWith('execute_tool'),
        );
        expect(ai.length, "the AI SDK's own spans").toBeGreaterThan(0);
        for (const x of ai)
          expect(x.attributes[ATTR_SESSION_ID], `${x.name} carries session.id`).toBe(s.session);
        const post = spans.find(
          (x) => x.name === SPAN_COMPACTION_POST && x.attributes[ATTR_SESSION_ID] === s.session,
        );
        const pre = spans.find(
          (x) => x.name === SPAN_COMPACTION_PRE && x.attributes[ATTR_SESSION_ID] === s.session,
        );
        expect(pre?.attributes[ATTR_RUNTIME]).toBe('ai-sdk');
        expect(post?.attributes[ATTR_CONTINUITY_STATE]).toBe('preserved');
        // The pre span is recorded in `prepareStep`, where `@ai-sdk/otel` has no span active
        // (observed): it is the root of the boundary's trace. The post span, made while the AI
        // SDK's `execute_tool continuity_restate` span is active, is the pre span's child (one
        // trace per boundary) and links to that tool span, which links back to it.
        const tool = spans.find((x) => x.name === `execute_tool ${RESTATE}`);
        expect(tool, 'the restatement tool ran in its span').toBeDefined();
        expect(pre!.parentSpanId).toBeUndefined();
        expect([post!.traceId, post!.parentSpanId]).toEqual([pre!.traceId, pre!.spanId]);
        expect(post!.links.map((l) => l.spanId)).toContain(tool!.spanId);
        expect(tool!.links.map((l) => l.spanId)).toContain(post!.spanId);
        // No raw value in what continuity wrote.
        const written = `${s.world.stateBytes().toString('utf8')}${JSON.stringify([pre, post])}${(await s.app.call<string[]>('warnings')).join('\n')}`;
        for (const v of rawStrings(values)) expect(written.includes(v), `"${v}" leaked`).toBe(false);
      } finally {
        await s.close();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'conflicting, then a human approval in their own terminal releases the next write; dropped keeps it denied',
    async () => {
      const values = taskValues();
      const changed = widened(values);
      const s = await scenario(
        [
          write('w-a', 'a.txt'),
          { text: 'Wrote a.txt.' },
          restate('r-1', changed),
          write('w-conflict', 'c.txt'),
          { text: 'The scope changed; I asked the human.' },
          write('w-approved', 'c.txt'),
          { text: 'Done.' },
        ],
        values,
      );
      try {
        await compactedSession(s);
        expect(resultOf(s.server, 'r-1')).toContain('continuity: conflicting (unapproved_change)');
        expect(resultOf(s.server, 'w-conflict')).toContain(
          'Blocked by the continuity gate (conflicting: unapproved_change)',
        );
        expect(existsSync(s.world.file('c.txt'))).toBe(false);
        await humanApproves(s.world.cli, s.session, {
          decision: 'scope',
          from: values.scope,
          to: changed.scope,
          ref: 'CHG-7',
        });
        await s.turn('approved: continue');
        expect(resultOf(s.server, 'w-approved')).toContain('wrote c.txt');
        const st = await statusOf<{ state: string; reason: string }>(s.world.cli, s.session);
        expect([st.state, st.reason]).toEqual(['approved_change', 'approved_chain']);
      } finally {
        await s.close();
      }
      const v2 = taskValues();
      const { approval_boundary: _left, ...partial } = v2;
      const d = await scenario(
        [
          write('w-a', 'a.txt'),
          { text: 'ok' },
          restate('r-1', partial),
          write('w-after', 'd.txt'),
          { text: 'Stopped.' },
        ],
        v2,
      );
      try {
        await compactedSession(d);
        expect(resultOf(d.server, 'r-1')).toContain('continuity: dropped');
        expect(resultOf(d.server, 'w-after')).toContain('Blocked by the continuity gate (dropped:');
        expect(existsSync(d.world.file('d.txt'))).toBe(false);
      } finally {
        await d.close();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    "ask: with no snapshot before the compaction, the write becomes the AI SDK's own approval request; approved it runs, denied it does not",
    async () => {
      const values = taskValues();
      const s = await scenario(
        [
          write('w-a', 'a.txt'),
          { text: 'Wrote a.txt.' },
          write('w-asked', 'e.txt'),
          { text: 'Written.' },
          write('w-refused', 'f.txt'),
          { text: 'Not written.' },
        ],
        values,
      );
      try {
        await s.turn(LONG_BRIEF);
        writeFileSync(s.world.file('.continuity/task.json'), '{ not json');
        const asked = await s.turn('continue the task');
        expect(asked.approvals.map((a) => a.toolName)).toEqual(['write_file']);
        expect(asked.approvals[0]!.reason).toContain(
          'The continuity gate asks a human first (unverified: pre_snapshot_missing)',
        );
        expect(existsSync(s.world.file('e.txt'))).toBe(false);
        await s.respond(asked.approvals[0]!.approvalId, true);
        expect(existsSync(s.world.file('e.txt')), 'approved, the write ran').toBe(true);
        const again = await s.turn('one more');
        expect(again.approvals.map((a) => a.toolName)).toEqual(['write_file']);
        await s.respond(again.approvals[0]!.approvalId, false);
        expect(existsSync(s.world.file('f.txt')), 'denied, the write never ran').toBe(false);
      } finally {
        await s.close();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
