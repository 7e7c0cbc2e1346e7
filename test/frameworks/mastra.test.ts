/**
 * Mastra on the real packages: `@mastra/core` 1.71.0 and `@mastra/memory` 1.31.0 with
 * observational memory on a LibSQL store, its models against our scripted chat-completions server
 * on 127.0.0.1, on Node 22 (test/frameworks/harness.ts). What the real packages send and call is
 * what is asserted: the Observer's request carries our sentence, its observations replace the
 * history the agent's model reads, the gate's answers reach the model or suspend the call.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SUMMARY_INSTRUCTION_PREFIX } from '../../src/adapters/core/messages.js';
import {
  ATTR_CONTINUITY_STATE,
  ATTR_RUNTIME,
  ATTR_SESSION_ID,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import { humanApproves, sessionRecords, statusOf } from '../support/evidence.js';
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
const LONG_BRIEF = `Work on the ledger service. ${'Context that fills the window. '.repeat(200)}`;
const OBSERVATIONS =
  '<observations>\n* The user asked to work on the ledger service; a.txt was written.\n</observations>';

interface Turn {
  text: string | null;
  finishReason: string | null;
  suspended: unknown;
  runId: string | null;
}

let peers: Peers;
beforeAll(async () => {
  peers = await ensurePeers(PEERS.mastra);
}, INSTALL_TIMEOUT_MS);

interface Scenario {
  world: World;
  server: ChatServer;
  app: App;
  thread: string;
  turn(text: string): Promise<Turn>;
  decide(approve: boolean): Promise<Turn>;
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
    summary: OBSERVATIONS.replaceAll('\\\n', '\n'),
    jsonUnlessStreamed: true,
  });
  const app = await startApp(peers, 'mastra', world.env);
  await app.call('setup', {
    baseURL: server.url,
    project: world.project,
    db: join(world.root, 'om.db'),
    messageTokens: 1000,
  });
  const thread = `mastra-thread-${Math.random().toString(16).slice(2, 10)}`;
  return {
    world,
    server,
    app,
    thread,
    turn: (text) => app.call<Turn>('turn', { thread, text }),
    decide: (approve) => app.call<Turn>('decide', { thread, approve }),
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

/** Turn 1 writes a.txt (no observation yet); turn 2's long message makes the Observer run at its start. */
async function observedSession(s: Scenario): Promise<Turn> {
  await s.turn('Work on the ledger service: write a.txt.');
  expect(resultOf(s.server, 'w-a'), 'the write before any observation ran').toBe('wrote a.txt');
  expect(s.server.requests.filter((r) => r.kind === 'summary')).toHaveLength(0);
  const t = await s.turn(`continue the task. ${LONG_BRIEF}`);
  expect(
    s.server.requests.filter((r) => r.kind === 'summary'),
    'the Observer ran once',
  ).toHaveLength(1);
  return t;
}

describe('Mastra (@mastra/core 1.71.0, @mastra/memory 1.31.0 observational memory)', () => {
  it(
    'preserved: captured at onObservationStart, the Observer asked to keep the decisions, the request to restate in the observations; the write held until the restatement',
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
        await observedSession(s);
        const observer = s.server.requests.find((r) => r.kind === 'summary')!;
        const prompt = messageText(observer.body!.messages[0]);
        const line = prompt.split('\n').find((l) => l.startsWith(SUMMARY_INSTRUCTION_PREFIX));
        expect(line, "our sentence in the Observer's system prompt (observation.instruction)").toBeDefined();
        for (const v of rawStrings(values)) expect(prompt.includes(v)).toBe(false);
        // The agent's next model call reads the observations (with our request) instead of the history.
        const next = s.server.requests.find((r) => r.kind === 'step' && r.step === 2)!;
        const seen = next.body!.messages.map(messageText).join('\n');
        expect(seen).toContain('a.txt was written');
        expect(seen).toContain(`with the tool ${RESTATE}`);
        expect(seen).not.toContain('Work on the ledger service: write a.txt.');
        expect(resultOf(s.server, 'w-before')).toContain(
          'Blocked by the continuity gate (unverified: post_observation_missing)',
        );
        expect(resultOf(s.server, 'r-1')).toContain('continuity: preserved (digest_match_fresh)');
        expect(resultOf(s.server, 'w-after')).toBe('wrote b.txt');
        const st = await statusOf<{ state: string; reason: string }>(s.world.cli, s.thread);
        expect([st.state, st.reason]).toEqual(['preserved', 'digest_match_fresh']);
        const records = sessionRecords(s.world.ledgerRecords(), s.thread);
        expect(records.filter((r) => r.type === 'snapshot' && r.phase === 'pre')).toHaveLength(1);
        expect(
          records.filter((r) => r.type === 'snapshot' && r.phase === 'post'),
          'one restatement, one post snapshot',
        ).toHaveLength(1);
        const spans = (await s.app.call<AppSpan[]>('spans')).filter(
          (x) => x.attributes[ATTR_SESSION_ID] === s.thread,
        );
        const pre = spans.find((x) => x.name === SPAN_COMPACTION_PRE);
        const post = spans.filter((x) => x.name === SPAN_COMPACTION_POST).at(-1);
        expect(pre?.attributes[ATTR_RUNTIME]).toBe('mastra');
        expect(post?.attributes[ATTR_CONTINUITY_STATE]).toBe('preserved');
        expect(post!.links.map((l) => l.spanId)).toContain(pre!.spanId);
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
        await observedSession(s);
        expect(resultOf(s.server, 'r-1')).toContain('continuity: conflicting (unapproved_change)');
        expect(resultOf(s.server, 'w-conflict')).toContain(
          'Blocked by the continuity gate (conflicting: unapproved_change)',
        );
        expect(existsSync(s.world.file('c.txt'))).toBe(false);
        await humanApproves(s.world.cli, s.thread, {
          decision: 'scope',
          from: values.scope,
          to: changed.scope,
          ref: 'CHG-3',
        });
        await s.turn('approved: continue');
        expect(resultOf(s.server, 'w-approved')).toBe('wrote c.txt');
        const st = await statusOf<{ state: string; reason: string }>(s.world.cli, s.thread);
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
        await observedSession(d);
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
    'ask: with no snapshot at the observation, requireToolApproval suspends the write; approved it runs, declined it does not',
    async () => {
      const values = taskValues();
      const s = await scenario(
        [
          write('w-a', 'a.txt'),
          { text: 'Wrote a.txt.' },
          write('w-asked', 'e.txt'),
          { text: 'Written.' },
          write('w-declined', 'f.txt'),
          { text: 'Not written.' },
        ],
        values,
      );
      try {
        await s.turn('Work on the ledger service: write a.txt.');
        writeFileSync(s.world.file('.continuity/task.json'), '{ not json');
        const asked = await s.turn(`continue the task. ${LONG_BRIEF}`);
        expect(asked.finishReason).toBe('suspended');
        expect(existsSync(s.world.file('e.txt'))).toBe(false);
        const st = await statusOf<{ state: string; reason: string }>(s.world.cli, s.thread);
        expect([st.state, st.reason]).toEqual(['unverified', 'pre_snapshot_missing']);
        await s.decide(true);
        expect(existsSync(s.world.file('e.txt')), 'approved, the write ran').toBe(true);
        const again = await s.turn('one more');
        expect(again.finishReason).toBe('suspended');
        await s.decide(false);
        expect(existsSync(s.world.file('f.txt')), 'declined, the write never ran').toBe(false);
      } finally {
        await s.close();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
