// The application of the Vercel AI SDK tests (test/frameworks/ai-sdk.test.ts), on the real `ai`
// 7.0.185 with `@ai-sdk/openai` (chat completions) against the scripted server and `@ai-sdk/otel`
// 1.0.185 for its spans, through the application's tracer provider (with an async-hooks context
// manager, as NodeSDK registers one). It keeps a conversation per session and shortens it in
// `prepareStep` with the recipe's `compact`. Driven over the protocol of app-protocol.mjs.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createOpenAI } from '@ai-sdk/openai';
import { OpenTelemetry } from '@ai-sdk/otel';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { appTracing, dist, repoPackage, serve } from './app-protocol.mjs';

const { createAiSdkContinuity } = await dist('integrations/ai-sdk/index.js');
const api = await repoPackage('@opentelemetry/api');
const { AsyncLocalStorageContextManager } = await repoPackage('@opentelemetry/context-async-hooks');
api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const tracing = await appTracing();
const warnings = [];
const histories = new Map();
let model;
let continuity;
let telemetry;
let projectDir;
let compactAbove;

/** A long conversation is shortened at the start of a turn: the recipe around our summarizer. */
async function maybeCompact(sessionId, messages) {
  if (messages.length < 3 || JSON.stringify(messages).length < compactAbove) return undefined;
  const compacted = await continuity.compact(sessionId, async (instruction) => {
    const { text } = await generateText({
      model,
      runtimeContext: { sessionId },
      experimental_telemetry: { includeRuntimeContext: { sessionId: true }, integrations: [telemetry] },
      prompt: `Summarize this conversation for the agent that continues it.\n${instruction}\n<conversation>\n${JSON.stringify(messages)}\n</conversation>`,
    });
    return [{ role: 'user', content: `Summary of the conversation so far:\n${text}` }];
  });
  histories.set(sessionId, compacted);
  return { messages: compacted };
}

async function run(sessionId) {
  const result = await generateText({
    model,
    messages: histories.get(sessionId),
    runtimeContext: { sessionId },
    tools: {
      write_file: tool({
        description: 'Write a file of the project',
        inputSchema: jsonSchema({
          type: 'object',
          properties: { path: { type: 'string' }, content: { type: 'string' } },
          required: ['path', 'content'],
        }),
        execute: async ({ path, content }) => {
          const target = join(projectDir, path);
          mkdirSync(dirname(target), { recursive: true });
          writeFileSync(target, content);
          return `wrote ${path}`;
        },
      }),
      ...continuity.tools({ tool, jsonSchema }, sessionId),
    },
    toolApproval: (o) => continuity.toolApproval(o),
    prepareStep: ({ stepNumber, messages }) =>
      stepNumber === 0 ? maybeCompact(sessionId, messages) : undefined,
    stopWhen: stepCountIs(8),
    experimental_telemetry: { includeRuntimeContext: { sessionId: true }, integrations: [telemetry] },
  });
  histories.set(sessionId, [...histories.get(sessionId), ...result.responseMessages]);
  const approvals = result.content
    .filter((p) => p.type === 'tool-approval-request')
    .map((p) => ({ approvalId: p.approvalId, toolName: p.toolCall.toolName, reason: p.reason }));
  return { text: result.text, approvals, steps: result.steps.length };
}

serve({
  setup: async ({ baseURL, project, compactAboveChars }) => {
    projectDir = project;
    compactAbove = compactAboveChars;
    continuity = createAiSdkContinuity({
      projectDir: project,
      tracerProvider: tracing.provider,
      describeTool: (call) =>
        call.name === 'write_file'
          ? { kind: 'file_write', filePath: String(call.input?.path ?? '') }
          : { kind: 'other' },
      onWarning: (l) => warnings.push(l),
    });
    model = createOpenAI({ baseURL, apiKey: 'test' }).chat('gpt-4o-mini');
    telemetry = new OpenTelemetry({
      tracer: tracing.provider.getTracer('ai-sdk-app'),
      enrichSpan: (o) => continuity.enrichSpan(o),
    });
    return {};
  },
  turn: async ({ session, text }) => {
    histories.set(session, [...(histories.get(session) ?? []), { role: 'user', content: text }]);
    return run(session);
  },
  respond: async ({ session, approvalId, approved }) => {
    histories.set(session, [
      ...histories.get(session),
      { role: 'tool', content: [{ type: 'tool-approval-response', approvalId, approved }] },
    ]);
    return run(session);
  },
  spans: async () => tracing.spans(),
  warnings: async () => warnings,
});
