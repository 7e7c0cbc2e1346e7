/**
 * OpenAI Agents JS on the real package: `@openai/agents` 0.20.0 with a watched
 * `OpenAIResponsesCompactionSession`, against our scripted Responses server on 127.0.0.1
 * (streamed turns and `POST /responses/compact`), on Node 22 (test/frameworks/harness.ts). What
 * the real package sends and calls is what is asserted: the compaction request, the history it
 * replaced, the guardrail's message as the tool's output, the run's interruptions.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ATTR_CONTINUITY_STATE,
  ATTR_RUNTIME,
  ATTR_SESSION_ID,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import { humanApproves, sessionRecords, statusOf } from '../support/evidence.js';
import { PEERS } from '../support/peers.js';
import {
  type ResponsesServer,
  type Step,
  startResponsesServer,
  toolOutputs,
} from '../support/responses-server.js';
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

interface Turn {
  output: string | null;
  events: string[];
  interruptions: Array<{ name: string; callId: string }>;
}

let peers: Peers;
beforeAll(async () => {
  peers = await ensurePeers(PEERS.openaiAgents);
}, INSTALL_TIMEOUT_MS);

interface Scenario {
  world: World;
  server: ResponsesServer;
  app: App;
  session: string;
  turn(text: string, compactAfter?: boolean): Promise<Turn>;
  decide(approve: boolean): Promise<Turn>;
  close(): Promise<void>;
}

const write = (callId: string, path: string): Step => ({
  callId,
  functionCall: { name: 'write_file', arguments: { path, content: `${callId}\n` } },
});
const restate = (callId: string, decisions: unknown): Step => ({
  callId,
  functionCall: { name: RESTATE, arguments: { decisions } },
});

async function scenario(steps: Step[], values: TaskValues): Promise<Scenario> {
  const world = await makeWorld(values);
  const server = await startResponsesServer({
    steps,
    completedOutput: true,
    summary: 'The brief was read; a.txt was written.',
  });
  const app = await startApp(peers, 'openai-agents', world.env);
  await app.call('setup', { baseURL: server.baseUrl, project: world.project });
  const session = `oa-session-${Math.random().toString(16).slice(2, 10)}`;
  return {
    world,
    server,
    app,
    session,
    turn: (text, compactAfter = false) => app.call<Turn>('turn', { session, text, compactAfter }),
    decide: (approve) => app.call<Turn>('decide', { session, approve }),
    close: async () => {
      await app.close();
      await server.close();
      await world.close();
    },
  };
}

/** The output the model read for `callId` (from the request after it). */
function outputOf(server: ResponsesServer, callId: string): string | undefined {
  for (const r of server.requests) {
    const o = toolOutputs(r.body).find((x) => x.call_id === callId);
    if (o) return typeof o.output === 'string' ? o.output : JSON.stringify(o.output);
  }
  return undefined;
}

/** Turn 1 writes a.txt (no compaction yet) and the session compacts after it. */
async function compactedSession(s: Scenario): Promise<void> {
  await s.turn('Work on the ledger service: write a.txt.', true);
  expect(existsSync(s.world.file('a.txt')), 'the write before any compaction ran').toBe(true);
  expect(s.server.requestsOf('compact'), 'responses.compact was called').toHaveLength(1);
}

describe('OpenAI Agents JS (@openai/agents 0.20.0, OpenAIResponsesCompactionSession)', () => {
  it(
    'preserved: captured before responses.compact, the guardrail refuses the write until the agent restates',
    async () => {
      const values = taskValues();
      const s = await scenario(
        [
          write('w-a', 'a.txt'),
          'Wrote a.txt.',
          write('w-before', 'b.txt'),
          restate('r-1', values),
          write('w-after', 'b.txt'),
          'Done.',
        ],
        values,
      );
      try {
        await compactedSession(s);
        // The compacted history: the summary `responses.compact` returned, then our request.
        const items = await s.app.call<Array<{ type?: string; role?: string }>>('items', {
          session: s.session,
        });
        expect(items.map((i) => i.role)).toEqual(['user', 'user']);
        await s.turn('continue the task');
        const next = s.server.requestsOf('turn').find((r) => r.stepIndex === 2)!;
        const seen = JSON.stringify(next.body.input);
        expect(seen).toContain('[continuity] This session was just compacted');
        expect(seen).toContain('The brief was read; a.txt was written.');
        expect(seen).not.toContain('Work on the ledger service');
        expect(outputOf(s.server, 'w-before')).toContain(
          'Blocked by the continuity gate (unverified: post_observation_missing)',
        );
        expect(outputOf(s.server, 'r-1')).toContain('continuity: preserved (digest_match_fresh)');
        expect(outputOf(s.server, 'w-after')).toContain('wrote b.txt');
        const st = await statusOf<{ state: string; reason: string }>(s.world.cli, s.session);
        expect([st.state, st.reason]).toEqual(['preserved', 'digest_match_fresh']);
        const spans = (await s.app.call<AppSpan[]>('spans')).filter(
          (x) => x.attributes[ATTR_SESSION_ID] === s.session,
        );
        const pre = spans.find((x) => x.name === SPAN_COMPACTION_PRE);
        const post = spans.find((x) => x.name === SPAN_COMPACTION_POST);
        expect(pre?.attributes[ATTR_RUNTIME]).toBe('openai-agents');
        expect(post?.attributes[ATTR_CONTINUITY_STATE]).toBe('preserved');
        expect(post!.links.map((l) => l.spanId)).toContain(pre!.spanId);
        const records = sessionRecords(s.world.ledgerRecords(), s.session);
        expect(records.filter((r) => r.type === 'snapshot' && r.phase === 'pre')).toHaveLength(1);
        const written = `${s.world.stateBytes().toString('utf8')}${JSON.stringify(spans)}${(await s.app.call<string[]>('warnings')).join('\n')}`;
        for (const v of rawStrings(values)) expect(written.includes(v), `"${v}" leaked`).toBe(false);
      } finally {
        await s.close();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'conflicting, then a human approval in their own terminal releases the next write; dropped keeps it refused',
    async () => {
      const values = taskValues();
      const changed = widened(values);
      const s = await scenario(
        [
          write('w-a', 'a.txt'),
          'Wrote a.txt.',
          restate('r-1', changed),
          write('w-conflict', 'c.txt'),
          'The scope changed; I asked the human.',
          write('w-approved', 'c.txt'),
          'Done.',
        ],
        values,
      );
      try {
        await compactedSession(s);
        await s.turn('continue the task');
        expect(outputOf(s.server, 'r-1')).toContain('continuity: conflicting (unapproved_change)');
        expect(outputOf(s.server, 'w-conflict')).toContain(
          'Blocked by the continuity gate (conflicting: unapproved_change)',
        );
        expect(existsSync(s.world.file('c.txt'))).toBe(false);
        await humanApproves(s.world.cli, s.session, {
          decision: 'scope',
          from: values.scope,
          to: changed.scope,
          ref: 'CHG-9',
        });
        await s.turn('approved: continue');
        expect(outputOf(s.server, 'w-approved')).toContain('wrote c.txt');
        const st = await statusOf<{ state: string; reason: string }>(s.world.cli, s.session);
        expect([st.state, st.reason]).toEqual(['approved_change', 'approved_chain']);
      } finally {
        await s.close();
      }
      const v2 = taskValues();
      const { approval_boundary: _left, ...partial } = v2;
      const d = await scenario(
        [write('w-a', 'a.txt'), 'ok', restate('r-1', partial), write('w-after', 'd.txt'), 'Stopped.'],
        v2,
      );
      try {
        await compactedSession(d);
        await d.turn('continue the task');
        expect(outputOf(d.server, 'r-1')).toContain('continuity: dropped');
        expect(outputOf(d.server, 'w-after')).toContain('Blocked by the continuity gate (dropped:');
        expect(existsSync(d.world.file('d.txt'))).toBe(false);
      } finally {
        await d.close();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'ask: with no snapshot before the compaction, needsApproval interrupts the run; approved the write runs, rejected it does not',
    async () => {
      const values = taskValues();
      const s = await scenario(
        [
          write('w-a', 'a.txt'),
          'Wrote a.txt.',
          write('w-asked', 'e.txt'),
          'Written.',
          write('w-rejected', 'f.txt'),
          'Not written.',
        ],
        values,
      );
      try {
        // The task record cannot be read when the session compacts: no pre snapshot.
        writeFileSync(s.world.file('.continuity/task.json'), '{ not json');
        await s.turn('Work on the ledger service: write a.txt.', true);
        expect(s.server.requestsOf('compact')).toHaveLength(1);
        const asked = await s.turn('continue the task');
        expect(asked.interruptions.map((i) => i.name)).toEqual(['write_file']);
        expect(existsSync(s.world.file('e.txt'))).toBe(false);
        const st = await statusOf<{ state: string; reason: string }>(s.world.cli, s.session);
        expect([st.state, st.reason]).toEqual(['unverified', 'pre_snapshot_missing']);
        await s.decide(true);
        expect(existsSync(s.world.file('e.txt')), 'approved, the write ran').toBe(true);
        const again = await s.turn('one more');
        expect(again.interruptions.map((i) => i.name)).toEqual(['write_file']);
        await s.decide(false);
        expect(existsSync(s.world.file('f.txt')), 'rejected, the write never ran').toBe(false);
      } finally {
        await s.close();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'server-side compaction: the compaction item records the boundary captured at the run start; the tool calls of the turn after it are held until the restatement',
    async () => {
      const values = taskValues();
      const s = await scenario(
        [
          serverCompactionThen('w-same', 'write_file', { path: 'a.txt', content: 'a' }),
          write('w-before', 'b.txt'),
          restate('r-1', values),
          write('w-after', 'b.txt'),
          'Done.',
        ],
        values,
      );
      try {
        const turn = await s.app.call<Turn>('serverSideTurn', {
          session: s.session,
          text: 'Work on the ledger service.',
        });
        expect(turn.events).toContain('compaction_item_created');
        // The SDK asked the API for server-side compaction.
        expect(s.server.requestsOf('turn')[0]!.body.context_management).toEqual([
          { type: 'compaction', compact_threshold: 1000 },
        ]);
        // Observed order: the SDK runs the tool calls of the response that carries the compaction
        // item before a stream consumer sees `compaction_item_created`, so that call ran ungated.
        expect(outputOf(s.server, 'w-same')).toContain('wrote a.txt');
        // From the next model response on, the gate holds writes until the restatement.
        expect(outputOf(s.server, 'w-before')).toContain(
          'Blocked by the continuity gate (unverified: post_observation_missing)',
        );
        expect(outputOf(s.server, 'w-before')).toContain(RESTATE);
        expect(outputOf(s.server, 'r-1')).toContain('continuity: preserved (digest_match_fresh)');
        expect(outputOf(s.server, 'w-after')).toContain('wrote b.txt');
        const records = sessionRecords(s.world.ledgerRecords(), s.session);
        expect(
          records.filter((r) => r.type === 'snapshot' && r.phase === 'pre'),
          'a pre snapshot from the run start',
        ).toHaveLength(1);
        expect(records.some((r) => r.type === 'evidence_missing')).toBe(false);
      } finally {
        await s.close();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});

/** A turn whose output is a server-side compaction item, then a function call (raw Responses stream events). */
function serverCompactionThen(callId: string, name: string, args: unknown): Step {
  const compaction = { type: 'compaction', id: 'cmp_srv', encrypted_content: 'opaque-compacted-context' };
  const call = {
    type: 'function_call',
    id: `fc_${callId}`,
    call_id: callId,
    name,
    arguments: JSON.stringify(args),
    status: 'completed',
  };
  const usage = {
    input_tokens: 1200,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 10,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 1210,
  };
  return {
    events: [
      { type: 'response.created', response: { id: 'resp_srv', status: 'in_progress' } },
      { type: 'response.output_item.added', output_index: 0, item: compaction },
      { type: 'response.output_item.done', output_index: 0, item: compaction },
      { type: 'response.output_item.added', output_index: 1, item: { ...call, status: 'in_progress' } },
      { type: 'response.output_item.done', output_index: 1, item: call },
      {
        type: 'response.completed',
        response: { id: 'resp_srv', status: 'completed', output: [compaction, call], usage },
      },
    ],
  };
}
