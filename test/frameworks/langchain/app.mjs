// The application of the LangChain JS tests (test/frameworks/langchain.test.ts), on the real
// `langchain` 1.5.14 with `@langchain/openai` against the scripted chat-completions server:
// `createAgent` with a write tool, a checkpointer (a thread per session), the summarization
// wrapped by the integration, the continuity middleware, and `humanInTheLoopMiddleware` whose
// `when` is the integration's. Driven over the protocol of app-protocol.mjs.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Command, MemorySaver } from '@langchain/langgraph';
import { ChatOpenAI } from '@langchain/openai';
import {
  createAgent,
  createMiddleware,
  humanInTheLoopMiddleware,
  summarizationMiddleware,
  ToolMessage,
  tool,
} from 'langchain';
import { appTracing, dist, serve } from './app-protocol.mjs';

const { createLangChainContinuity } = await dist('integrations/langchain/index.js');
const tracing = await appTracing();
const warnings = [];
let agent;
let continuity;
let projectDir;

function plain(m) {
  return {
    type: m.getType?.() ?? m.type,
    content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content),
    name: m.name,
    status: m.status,
    lcSource: m.additional_kwargs?.lc_source,
    toolCalls: (m.tool_calls ?? []).map((c) => ({ name: c.name, id: c.id })),
  };
}

serve({
  setup: async ({ baseURL, project, triggerTokens }) => {
    projectDir = project;
    continuity = createLangChainContinuity({
      projectDir: project,
      langchain: { createMiddleware, tool, ToolMessage },
      tracerProvider: tracing.provider,
      describeTool: (call) =>
        call.name === 'write_file'
          ? { kind: 'file_write', filePath: String(call.input?.path ?? '') }
          : { kind: 'other' },
      onWarning: (l) => warnings.push(l),
    });
    const model = new ChatOpenAI({
      model: 'gpt-4o-mini',
      apiKey: 'test',
      maxRetries: 0,
      configuration: { baseURL },
    });
    const writeFile = tool(
      async ({ path, content }) => {
        const target = join(projectDir, path);
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, content);
        return `wrote ${path}`;
      },
      {
        name: 'write_file',
        description: 'Write a file of the project',
        schema: {
          type: 'object',
          properties: { path: { type: 'string' }, content: { type: 'string' } },
          required: ['path', 'content'],
        },
      },
    );
    agent = createAgent({
      model,
      tools: [writeFile],
      checkpointer: new MemorySaver(),
      middleware: [
        continuity.summarization(summarizationMiddleware, {
          model,
          trigger: { tokens: triggerTokens, messages: 5 },
          keep: { messages: 2 },
        }),
        continuity.middleware,
        humanInTheLoopMiddleware({
          interruptOn: {
            write_file: { allowedDecisions: ['approve', 'reject'], when: (r) => continuity.interruptWhen(r) },
          },
        }),
      ],
    });
    return { tools: ['write_file'] };
  },
  invoke: async ({ thread, text, resume }) => {
    const input = resume ? new Command({ resume }) : { messages: [{ role: 'user', content: text }] };
    const out = await agent.invoke(input, { configurable: { thread_id: thread } });
    const interrupt = out.__interrupt__?.[0]?.value;
    return {
      messages: out.messages.map(plain),
      interrupt: interrupt
        ? { actions: interrupt.actionRequests.map((a) => ({ name: a.name, description: a.description })) }
        : null,
    };
  },
  spans: async () => tracing.spans(),
  warnings: async () => warnings,
});
