/**
 * LangChain JS on the real package: `langchain` 1.5.14 `createAgent` with `summarizationMiddleware`
 * (wrapped by agent-continuity/langchain), the continuity middleware and `humanInTheLoopMiddleware`,
 * its model `@langchain/openai` 1.6.0 against our scripted chat-completions server on 127.0.0.1,
 * on Node 22 (test/frameworks/harness.ts). What the real package sends and calls is what is
 * asserted: the summarization request carries our sentence, history is replaced by the message
 * tagged `lc_source: "summarization"`, the gate's answer reaches the model as the tool's result.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { SUMMARY_INSTRUCTION_PREFIX } from '../../src/adapters/core/messages.js';
import {
  ATTR_BOUNDARY_ID,
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
  type RecordedRequest,
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
/** The summarization triggers at 5 messages above this many (approximate) tokens: at the second turn, for the first turn's long brief. */
const TRIGGER_TOKENS = 1500;
const LONG_BRIEF = `Work on the ledger service. ${'Context that fills the window. '.repeat(250)}`;

interface Message {
  type: string;
  content: string;
  name?: string;
  status?: string;
  lcSource?: string;
  toolCalls: Array<{ name: string; id: string }>;
}
interface Turn {
  messages: Message[];
  interrupt: { actions: Array<{ name: string; description?: string }> } | null;
}

let peers: Peers;
beforeAll(async () => {
  peers = await ensurePeers(PEERS.langchain);
}, INSTALL_TIMEOUT_MS);

interface Scenario {
  world: World;
  server: ChatServer;
  app: App;
  values: TaskValues;
  thread: string;
  invoke(text: string): Promise<Turn>;
  resume(decision: 'approve' | 'reject'): Promise<Turn>;
  close(): Promise<void>;
}

const write = (id: string, path: string): Step => ({
  toolCalls: [{ id, name: 'write_file', args: { path, content: `${id}\n` } }],
});
const restate = (id: string, decisions: unknown): Step => ({
  toolCalls: [{ id, name: RESTATE, args: { decisions } }],
});

async function scenario(
  steps: Step[],
  options: { values?: TaskValues; world?: World } = {},
): Promise<Scenario> {
  const values = options.values ?? taskValues();
  const world = options.world ?? (await makeWorld(values));
  const server = await startChatServer({
    steps,
    summary: '## Summary\nThe brief was read; a.txt was written.',
  });
  const app = await startApp(peers, 'langchain', world.env);
  await app.call('setup', { baseURL: server.url, project: world.project, triggerTokens: TRIGGER_TOKENS });
  const thread = `lc-thread-${Math.random().toString(16).slice(2, 10)}`;
  return {
    world,
    server,
    app,
    values,
    thread,
    invoke: (text) => app.call<Turn>('invoke', { thread, text }),
    resume: (type) => app.call<Turn>('invoke', { thread, resume: { decisions: [{ type }] } }),
    close: async () => {
      await app.close();
      await server.close();
      await world.close();
    },
  };
}

/** The tool result the model read for `callId`, from the request after it. */
function resultOf(server: ChatServer, callId: string): string | undefined {
  for (const r of server.requests) {
    const t = toolResults(r).get(callId);
    if (t !== undefined) return t;
  }
  return undefined;
}

function summaryRequests(server: ChatServer): RecordedRequest[] {
  return server.requests.filter((r) => r.kind === 'summary');
}

/**
 * The first two turns every scenario shares: a long brief and a first write (allowed: no
 * compaction yet), then "continue", at whose first model call the summarization replaces history.
 */
async function compactedSession(s: Scenario): Promise<Turn> {
  const first = await s.invoke(LONG_BRIEF);
  expect(first.interrupt).toBeNull();
  expect(existsSync(s.world.file('a.txt')), 'the write before any compaction ran').toBe(true);
  expect(summaryRequests(s.server)).toHaveLength(0);
  return s.invoke('continue the task');
}

/** The summarization request carried our sentence naming the decisions, and none of their values. */
function expectSummaryInstruction(s: Scenario): void {
  const [req] = summaryRequests(s.server);
  expect(req, 'LangChain asked the model for a summary').toBeDefined();
  const text = (req!.body?.messages ?? []).map(messageText).join('\n');
  const line = text.split('\n').find((l) => l.startsWith(SUMMARY_INSTRUCTION_PREFIX));
  expect(line, 'the sentence reached the summarizer').toBeDefined();
  for (const n of DECISION_NAMES) expect(line).toContain(`"${n}"`);
  for (const v of rawStrings(s.values)) expect(line!.includes(v)).toBe(false);
}

function spansOf(spans: AppSpan[], sessionId: string): AppSpan[] {
  return spans.filter((x) => x.attributes[ATTR_SESSION_ID] === sessionId);
}

describe('LangChain JS (langchain 1.5.14, createAgent + summarizationMiddleware)', () => {
  it(
    'preserved: captured before the summary replaced history, the gate holds the write until the agent restates, then it runs',
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
        { values },
      );
      try {
        const turn = await compactedSession(s);
        expectSummaryInstruction(s);
        // History replaced by LangChain's summary message, then our request to restate.
        expect(turn.messages[0]?.lcSource).toBe('summarization');
        const ask = turn.messages.find(
          (m) => m.type === 'human' && m.content.startsWith('[continuity] This session was just compacted'),
        );
        expect(ask, 'the restatement request is in the history').toBeDefined();
        expect(ask!.content).toContain(RESTATE);
        // The agent's model read it right after the summary.
        const afterSummary = s.server.requests.find((r) => r.kind === 'step' && r.step === 2)!;
        expect(afterSummary.body!.messages.map(messageText).join('\n')).toContain(
          '[continuity] This session was just compacted',
        );
        // The write before the restatement was refused, with the words; the one after ran.
        expect(resultOf(s.server, 'w-before')).toContain(
          'Blocked by the continuity gate (unverified: post_observation_missing)',
        );
        expect(resultOf(s.server, 'r-1')).toContain('continuity: preserved (digest_match_fresh)');
        expect(resultOf(s.server, 'w-after')).toBe('wrote b.txt');
        expect(existsSync(s.world.file('b.txt'))).toBe(true);
        const st = await statusOf<{ state: string; reason: string }>(s.world.cli, s.thread);
        expect([st.state, st.reason]).toEqual(['preserved', 'digest_match_fresh']);
        // One boundary: one pre snapshot taken before the summary, one post, runtime langchain.
        const records = sessionRecords(s.world.ledgerRecords(), s.thread);
        const shape = records
          .filter((r) => r.type !== 'classification')
          .map((r) => `${r.type}${r.phase ? `:${r.phase}` : ''}`);
        expect(shape.filter((t) => t === 'snapshot:pre')).toHaveLength(1);
        expect(shape.filter((t) => t === 'snapshot:post')).toHaveLength(1);
        for (const r of records) if (r.runtime !== undefined) expect(r.runtime).toBe('langchain');
        // Spans through the application's provider, the post one classified by its processor.
        const spans = spansOf(await s.app.call<AppSpan[]>('spans'), s.thread);
        const pre = spans.find((x) => x.name === SPAN_COMPACTION_PRE);
        const post = spans.find((x) => x.name === SPAN_COMPACTION_POST);
        expect(pre?.attributes[ATTR_RUNTIME]).toBe('langchain');
        expect(post?.attributes[ATTR_CONTINUITY_STATE]).toBe('preserved');
        expect(post?.attributes[ATTR_BOUNDARY_ID]).toBe(pre?.attributes[ATTR_BOUNDARY_ID]);
        expect(post!.links.map((l) => l.spanId)).toContain(pre!.spanId);
        // No raw value anywhere continuity wrote.
        const written = `${s.world.stateBytes().toString('utf8')}${JSON.stringify(spans)}${(await s.app.call<string[]>('warnings')).join('\n')}`;
        for (const v of rawStrings(values)) expect(written.includes(v), `"${v}" leaked`).toBe(false);
      } finally {
        await s.close();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});

describe('LangChain JS: the other states and the human', () => {
  it(
    'conflicting: the changed decision blocks writes; a human approval in their own terminal releases the next one',
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
        { values },
      );
      try {
        await compactedSession(s);
        expect(resultOf(s.server, 'r-1')).toContain('continuity: conflicting (unapproved_change)');
        const reason = resultOf(s.server, 'w-conflict');
        expect(reason).toContain('Blocked by the continuity gate (conflicting: unapproved_change)');
        expect(reason).toContain('only a human can approve it');
        expect(existsSync(s.world.file('c.txt'))).toBe(false);
        await humanApproves(s.world.cli, s.thread, {
          decision: 'scope',
          from: values.scope,
          to: changed.scope,
          ref: 'CHG-1042',
        });
        await s.invoke('approved: continue');
        expect(resultOf(s.server, 'w-approved')).toBe('wrote c.txt');
        const st = await statusOf<{ state: string; reason: string }>(s.world.cli, s.thread);
        expect([st.state, st.reason]).toEqual(['approved_change', 'approved_chain']);
      } finally {
        await s.close();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'dropped: a decision left out of the restatement keeps writes blocked',
    async () => {
      const values = taskValues();
      const { approval_boundary: _left, ...partial } = values;
      const s = await scenario(
        [
          write('w-a', 'a.txt'),
          { text: 'Wrote a.txt.' },
          restate('r-1', partial),
          write('w-after', 'd.txt'),
          { text: 'Stopped.' },
        ],
        { values },
      );
      try {
        await compactedSession(s);
        expect(resultOf(s.server, 'r-1')).toContain('continuity: dropped');
        expect(resultOf(s.server, 'w-after')).toContain('Blocked by the continuity gate (dropped:');
        expect(resultOf(s.server, 'w-after')).toContain('ask the human for "approval_boundary"');
        expect(existsSync(s.world.file('d.txt'))).toBe(false);
        const st = await statusOf<{ state: string }>(s.world.cli, s.thread);
        expect(st.state).toBe('dropped');
      } finally {
        await s.close();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'ask: with no snapshot before the summary, humanInTheLoopMiddleware interrupts each write; approved it runs, rejected it does not',
    async () => {
      const values = taskValues();
      const s = await scenario(
        [
          write('w-a', 'a.txt'),
          { text: 'Wrote a.txt.' },
          write('w-asked', 'e.txt'),
          { text: 'Written.' },
          write('w-rejected', 'f.txt'),
          { text: 'Not written.' },
        ],
        { values },
      );
      try {
        const first = await s.invoke(LONG_BRIEF);
        expect(first.interrupt).toBeNull();
        // The task record cannot be read when the summary replaces history: no pre snapshot.
        writeFileSync(s.world.file('.continuity/task.json'), '{ not json');
        const turn = await s.invoke('continue the task');
        expect(turn.messages[0]?.lcSource).toBe('summarization');
        expect(turn.interrupt?.actions.map((a) => a.name)).toEqual(['write_file']);
        expect(existsSync(s.world.file('e.txt'))).toBe(false);
        const st = await statusOf<{ state: string; reason: string }>(s.world.cli, s.thread);
        expect([st.state, st.reason]).toEqual(['unverified', 'pre_snapshot_missing']);
        // A human approves in LangChain's own human-in-the-loop step: the write runs.
        await s.resume('approve');
        expect(resultOf(s.server, 'w-asked')).toBe('wrote e.txt');
        expect(existsSync(s.world.file('e.txt'))).toBe(true);
        // The next write is asked again; rejected, it never runs.
        const again = await s.invoke('one more');
        expect(again.interrupt?.actions.map((a) => a.name)).toEqual(['write_file']);
        await s.resume('reject');
        expect(existsSync(s.world.file('f.txt'))).toBe(false);
      } finally {
        await s.close();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
