// The application of the Mastra tests (test/frameworks/mastra.test.ts), on the real `@mastra/core`
// 1.71.0 and `@mastra/memory` 1.31.0 with observational memory on a LibSQL store
// (`@mastra/libsql` 1.23.1), its models (agent, Observer, Reflector) against the scripted
// chat-completions server. Driven over the protocol of app-protocol.mjs.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Mastra } from '@mastra/core';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { LibSQLStore } from '@mastra/libsql';
import { Memory } from '@mastra/memory';
import { z } from 'zod';
import { appTracing, dist, serve } from './app-protocol.mjs';

const { createMastraContinuity } = await dist('integrations/mastra/index.js');
const tracing = await appTracing();
const warnings = [];
const pendingRuns = new Map();
let agent;
let continuity;
let projectDir;

function summarize(output) {
  return {
    text: output.text ?? null,
    finishReason: output.finishReason ?? null,
    suspended: output.suspendPayload ?? null,
    runId: output.runId ?? null,
  };
}

serve({
  setup: async ({ baseURL, project, db, messageTokens }) => {
    projectDir = project;
    continuity = createMastraContinuity({
      projectDir: project,
      tracerProvider: tracing.provider,
      describeTool: (call) =>
        call.name === 'write_file'
          ? { kind: 'file_write', filePath: String(call.input?.path ?? '') }
          : { kind: 'other' },
      onWarning: (l) => warnings.push(l),
    });
    const model = { id: 'openai/gpt-4o-mini', url: baseURL, apiKey: 'test', api: 'chat' };
    const writeFile = createTool({
      id: 'write_file',
      description: 'Write a file of the project',
      inputSchema: z.object({ path: z.string(), content: z.string() }),
      execute: async ({ path, content }) => {
        const target = join(projectDir, path);
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, content);
        return `wrote ${path}`;
      },
    });
    const restate = continuity.restateTool(
      createTool,
      z.object({ decisions: z.record(z.string(), z.unknown()) }),
    );
    const storage = new LibSQLStore({ id: 'om', url: `file:${db}` });
    const memory = new Memory({
      storage,
      options: {
        observationalMemory: continuity.observationalMemory({
          model,
          observation: { messageTokens, bufferTokens: false },
          reflection: { observationTokens: 1_000_000 },
        }),
      },
    });
    const writer = new Agent({
      id: 'writer',
      name: 'writer',
      instructions: 'You write files for the task.',
      model,
      memory,
      tools: { ...continuity.gateTools({ write_file: writeFile }), [restate.id]: restate },
    });
    // Registered with a Mastra instance whose storage keeps the snapshots of suspended runs
    // (approveToolCallGenerate finds none without it, observed).
    const mastra = new Mastra({ agents: { writer }, storage });
    agent = mastra.getAgent('writer');
    return {};
  },
  turn: async ({ thread, text }) => {
    const out = await agent.generate(text, {
      memory: { thread, resource: 'user-1' },
      maxSteps: 8,
      // An execution option in 1.71.0 (not an Agent constructor option, observed: there it is never asked).
      requireToolApproval: (ctx) => continuity.requireToolApproval(ctx),
    });
    if (out.runId) pendingRuns.set(thread, out.runId);
    return summarize(out);
  },
  decide: async ({ thread, approve }) => {
    const runId = pendingRuns.get(thread);
    const out = approve
      ? await agent.approveToolCallGenerate({ runId, memory: { thread, resource: 'user-1' } })
      : await agent.declineToolCallGenerate({ runId, memory: { thread, resource: 'user-1' } });
    return summarize(out);
  },
  spans: async () => tracing.spans(),
  warnings: async () => warnings,
});
