// The application of the OpenAI Agents JS tests (test/frameworks/openai-agents.test.ts), on the
// real `@openai/agents` 0.20.0 against the scripted Responses server (streamed turns, and
// `POST /responses/compact` for the compaction session): an agent with a write tool (gated by the
// integration's `needsApproval` and input guardrail) and the restatement tool, a watched
// `OpenAIResponsesCompactionSession` per session. Driven over the protocol of app-protocol.mjs.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  Agent,
  OpenAIResponsesCompactionSession,
  run,
  setDefaultOpenAIClient,
  setTracingDisabled,
  tool,
} from '@openai/agents';
import OpenAI from 'openai';
import { appTracing, dist, serve } from './app-protocol.mjs';

const { createOpenAIAgentsContinuity } = await dist('integrations/openai-agents/index.js');
const tracing = await appTracing();
const warnings = [];
const sessions = new Map();
const pending = new Map();
let agent;
let serverSideAgent;
let continuity;
let client;
let projectDir;
let compactNext = false;

function sessionFor(sessionId) {
  if (!sessions.has(sessionId)) {
    const inner = new OpenAIResponsesCompactionSession({
      client,
      model: 'gpt-4o-mini',
      compactionMode: 'input',
      // The test decides when: the next decision after it asked.
      shouldTriggerCompaction: () => {
        const now = compactNext;
        compactNext = false;
        return now;
      },
    });
    sessions.set(sessionId, continuity.watchSession(inner, sessionId));
  }
  return sessions.get(sessionId);
}

async function drive(sessionId, input, serverSide = false) {
  const result = await run(serverSide ? serverSideAgent : agent, input, {
    ...(serverSide ? {} : { session: sessionFor(sessionId) }),
    context: { sessionId },
    stream: true,
  });
  const events = [];
  for await (const e of continuity.watchRun(sessionId, result))
    if (e.type === 'run_item_stream_event') events.push(e.name);
  await result.completed;
  const interruptions = (result.interruptions ?? []).map((i) => ({
    name: i.name ?? i.rawItem?.name,
    callId: i.rawItem?.callId,
  }));
  if (interruptions.length > 0) pending.set(sessionId, result);
  return { output: result.finalOutput ?? null, events, interruptions };
}

serve({
  setup: async ({ baseURL, project }) => {
    projectDir = project;
    setTracingDisabled(true);
    client = new OpenAI({ baseURL, apiKey: 'test', maxRetries: 0 });
    setDefaultOpenAIClient(client);
    continuity = createOpenAIAgentsContinuity({
      projectDir: project,
      tracerProvider: tracing.provider,
      describeTool: (call) =>
        call.name === 'write_file'
          ? { kind: 'file_write', filePath: String(call.input?.path ?? '') }
          : { kind: 'other' },
      onWarning: (l) => warnings.push(l),
    });
    const writeFile = tool({
      name: 'write_file',
      description: 'Write a file of the project',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string' }, content: { type: 'string' } },
        required: ['path', 'content'],
        additionalProperties: false,
      },
      strict: true,
      needsApproval: continuity.needsApproval('write_file'),
      inputGuardrails: [continuity.inputGuardrail],
      execute: async ({ path, content }) => {
        const target = join(projectDir, path);
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, content);
        return `wrote ${path}`;
      },
    });
    agent = new Agent({
      name: 'writer',
      instructions: 'You write files for the task.',
      model: 'gpt-4o-mini',
      tools: [writeFile, continuity.restateTool(tool)],
    });
    // Server-side compaction: the Responses API compacts past a rendered-token threshold.
    serverSideAgent = agent.clone({
      modelSettings: { contextManagement: [{ type: 'compaction', compactThreshold: 1000 }] },
    });
    return {};
  },
  serverSideTurn: async ({ session, text }) => drive(session, text, true),
  turn: async ({ session, text, compactAfter }) => {
    compactNext = compactAfter === true;
    return drive(session, text);
  },
  decide: async ({ session, approve }) => {
    const result = pending.get(session);
    pending.delete(session);
    const state = result.state;
    for (const i of result.interruptions) approve ? state.approve(i) : state.reject(i);
    return drive(session, state);
  },
  items: async ({ session }) =>
    (await sessionFor(session).getItems()).map((i) => ({ type: i.type, role: i.role })),
  spans: async () => tracing.spans(),
  warnings: async () => warnings,
});
