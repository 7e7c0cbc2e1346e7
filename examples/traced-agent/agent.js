// @ts-check
/**
 * A small agent loop that is already traced with OpenTelemetry: a span per turn, per model call
 * and per tool call, and a summarization step that compacts the context when it grows too long.
 * The lines marked `+ continuity` are all it takes to check that the task decisions survive
 * that compaction.
 *
 *   node examples/traced-agent/agent.js                       # the summary keeps the decisions
 *   node examples/traced-agent/agent.js --lossy-summary       # the summary drops the approval boundary
 *   node examples/traced-agent/agent.js --stop-during-summary # stopped mid-compaction, then shut down
 *
 * The model and the tools are deterministic stand-ins, so the example runs offline.
 */
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { createContinuity } from 'agent-continuity'; // + continuity
import { startTelemetry } from './telemetry.js';

const sdk = startTelemetry();
const tracer = trace.getTracer('traced-agent', '1.0.0');
const continuity = createContinuity({ runtime: 'traced-agent' }); // + continuity

const SESSION = 'session-0001';
const CONTEXT_LIMIT = 1_200; // tokens before the agent summarizes its context
const lossySummary = process.argv.includes('--lossy-summary');
const stopDuringSummary = process.argv.includes('--stop-during-summary');

/** The task's decisions, as the agent holds them in its context. */
const task = {
  scope: { repository: 'acme/payments', paths: ['services/ledger'] },
  approval_boundary: { requires_human: ['deploy', 'schema_migration'] },
  acceptance_test: { command: 'npm test -- ledger', must_pass: true },
};

/** A deterministic stand-in for a chat model: which tool to call next, and token counts. */
function fakeModel(turn) {
  const tools = ['read_file', 'search_code', 'edit_file', 'run_tests'];
  return { tool: tools[turn % tools.length], inputTokens: 300 + 40 * turn, outputTokens: 120 };
}

/** A deterministic stand-in for the tools. */
function fakeTool(name) {
  return { ok: true, bytes: name.length * 100 };
}

/**
 * Compacts the context into a summary. A good summary carries the decisions over; a lossy one
 * forgets the approval boundary, which is exactly what continuity is there to notice.
 */
function summarize(context) {
  const decisions = { ...context.decisions };
  if (lossySummary) delete decisions.approval_boundary;
  return { tokens: 200, decisions };
}

/** + continuity: the decisions as the extension takes them (values are digested at once, never exported). */
function asDecisions(decisions) {
  return Object.fromEntries(
    Object.entries(decisions).map(([name, value]) => [name, { value, source: 'task-record' }]),
  );
}

async function runAgent() {
  let context = { tokens: 0, decisions: task };
  for (let turn = 1; turn <= 6; turn++) {
    const paused = await tracer.startActiveSpan(
      'agent.turn',
      { attributes: { 'session.id': SESSION } },
      async (turnSpan) => {
        const reply = await tracer.startActiveSpan('chat fake-model', async (span) => {
          span.setAttributes({
            'gen_ai.operation.name': 'chat',
            'gen_ai.request.model': 'fake-model',
            'gen_ai.conversation.id': SESSION,
          });
          const r = fakeModel(turn);
          span.setAttributes({
            'gen_ai.usage.input_tokens': r.inputTokens,
            'gen_ai.usage.output_tokens': r.outputTokens,
          });
          span.end();
          return r;
        });
        await tracer.startActiveSpan(`execute_tool ${reply.tool}`, async (span) => {
          span.setAttributes({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': reply.tool });
          const result = fakeTool(reply.tool);
          if (!result.ok) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        });
        context.tokens += reply.inputTokens + reply.outputTokens;
        process.stdout.write(`turn ${turn}: ${reply.tool} (context ${context.tokens} tokens)\n`);

        if (context.tokens > CONTEXT_LIMIT) {
          await continuity.capturePre(SESSION, asDecisions(context.decisions), { trigger: 'auto' }); // + continuity
          if (stopDuringSummary) {
            // The agent is stopped before the summary comes back: no post observation will come.
            // sdk.shutdown() resolves the boundary (unverified) on a continuity.check span.
            process.stdout.write('stopped during the summary\n');
            turnSpan.end();
            return true;
          }
          context = await tracer.startActiveSpan('summarize', async (span) => {
            span.setAttributes({ 'gen_ai.operation.name': 'chat', 'gen_ai.conversation.id': SESSION });
            const summary = summarize(context);
            span.end();
            return summary;
          });
          const { state } = await continuity.observePost(SESSION, asDecisions(context.decisions)); // + continuity
          process.stdout.write(`compacted: continuity ${state}\n`);
          if (state !== 'preserved' && state !== 'approved_change') {
            // + continuity: stop before the next consequential step and ask a human.
            process.stdout.write('pausing consequential work until a human restores the decisions\n');
            turnSpan.end();
            return true;
          }
        }
        turnSpan.end();
        return false;
      },
    );
    if (paused) return stopDuringSummary ? 'stopped' : 'paused';
  }
  return 'done';
}

const outcome = await runAgent();
process.stdout.write(`agent ${outcome}\n`);
await sdk.shutdown(); // flushes spans and metrics
