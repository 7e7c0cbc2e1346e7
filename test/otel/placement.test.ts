/**
 * Where the SDK extension's spans go (src/otel/placement.ts), on the real SDK: one trace per
 * boundary whose root is a span that exists (the agent's span or the pre span itself), the
 * boundary's later spans under the pre span, links to and from the agent's active span, and the
 * sampler never costing the evidence.
 */
import { context, type DiagLogger, diag, type Span, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AlwaysOffSampler,
  BasicTracerProvider,
  InMemorySpanExporter,
  ParentBasedSampler,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tracerSink } from '../../src/adapters/core/tracer-sink.js';
import { compactionSpan } from '../../src/export/ledger-spans.js';
import { boundarySpanId, boundaryTraceId } from '../../src/otel/boundary-trace.js';
import { createContinuity } from '../../src/otel/extension.js';
import {
  SPAN_ACTIVITY,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import type { DecisionInput } from '../../src/otel/types.js';

const three = (scope: string): Record<string, DecisionInput> => ({
  scope: { value: scope },
  target: { value: 'main' },
  acceptance_test: { value: 'npm test' },
});

let exporter: InMemorySpanExporter;
let provider: BasicTracerProvider;

beforeEach(() => {
  exporter = new InMemorySpanExporter();
  provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});

afterEach(async () => {
  context.disable();
  diag.disable();
  await provider.shutdown();
});

const named = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === name);

/** Spans whose parent is set but is no span of the same trace: a trace viewer's missing root. */
function orphans(spans: readonly ReadableSpan[]): string[] {
  return spans
    .filter((s) => {
      const p = s.parentSpanContext;
      return (
        p !== undefined &&
        !spans.some((q) => q.spanContext().spanId === p.spanId && q.spanContext().traceId === p.traceId)
      );
    })
    .map((s) => s.name);
}

/** Runs `f` with `span` active. */
const within = <T>(span: Span, f: () => Promise<T>): Promise<T> =>
  context.with(trace.setSpan(context.active(), span), f);

describe('the SDK extension places a boundary in one trace', () => {
  it('links the boundary and the agent both ways when the post comes in a later turn', async () => {
    const agent = provider.getTracer('agent');
    const continuity = createContinuity({ tracer: provider.getTracer('continuity') });
    const turn1 = agent.startSpan('turn-1');
    await within(turn1, () => continuity.capturePre('s1', three('a'), { trigger: 'auto' }));
    turn1.end();
    const turn2 = agent.startSpan('turn-2');
    await within(turn2, async () => {
      await continuity.recordApproval('s1', {
        decision: 'scope',
        from: 'a',
        to: 'b',
        approvalRef: 'CHG-1',
        approvedBy: 'alice',
      });
      await continuity.observePost('s1', three('b'));
    });
    turn2.end();

    const [pre] = named(SPAN_COMPACTION_PRE);
    const [approval] = named(SPAN_DECISION_APPROVAL);
    const [post] = named(SPAN_COMPACTION_POST);
    // The pre joins the agent's trace under turn 1; the approval and the post go under the pre.
    expect(pre!.parentSpanContext?.spanId).toBe(turn1.spanContext().spanId);
    for (const s of [approval!, post!]) {
      expect(s.spanContext().traceId, s.name).toBe(turn1.spanContext().traceId);
      expect(s.parentSpanContext?.spanId, s.name).toBe(pre!.spanContext().spanId);
      // Continuity → agent: a link to the turn the call was made in.
      expect(
        s.links.map((l) => l.context.spanId),
        s.name,
      ).toEqual([turn2.spanContext().spanId]);
    }
    // Agent → continuity: turn 2, still recording at the calls, links to both (Span.addLink).
    const [t2] = named('turn-2');
    expect(t2!.links.map((l) => l.context.spanId)).toEqual([
      approval!.spanContext().spanId,
      post!.spanContext().spanId,
    ]);
    expect(t2!.spanContext().traceId).not.toBe(pre!.spanContext().traceId);
    expect(orphans(exporter.getFinishedSpans())).toEqual([]);
  });

  it('links to an agent span that has ended, which can take no link back', async () => {
    const continuity = createContinuity({ tracer: provider.getTracer('continuity') });
    await continuity.capturePre('s2', three('a'));
    const ended = provider.getTracer('agent').startSpan('turn');
    ended.end();
    await within(ended, () => continuity.observePost('s2', three('a')));
    const [post] = named(SPAN_COMPACTION_POST);
    expect(post!.links.map((l) => l.context.spanId)).toEqual([ended.spanContext().spanId]);
    expect(named('turn')[0]!.links).toEqual([]);
  });

  it('gives two boundaries of one session two traces, each rooted at its pre span', async () => {
    const continuity = createContinuity({ tracer: provider.getTracer('continuity') });
    for (const scope of ['a', 'b']) {
      await continuity.capturePre('s3', three(scope));
      await continuity.observePost('s3', three(scope));
    }
    const pres = named(SPAN_COMPACTION_PRE);
    const posts = named(SPAN_COMPACTION_POST);
    expect(pres.map((s) => s.parentSpanContext)).toEqual([undefined, undefined]);
    expect(pres[0]!.spanContext().traceId).not.toBe(pres[1]!.spanContext().traceId);
    posts.forEach((post, i) => {
      expect(post.spanContext().traceId).toBe(pres[i]!.spanContext().traceId);
      expect(post.parentSpanContext?.spanId).toBe(pres[i]!.spanContext().spanId);
    });
    expect(orphans(exporter.getFinishedSpans())).toEqual([]);
  });

  it('puts session spans under the last boundary only within twice its post window', async () => {
    const clock = { now: 1_800_000_000_000 };
    const continuity = createContinuity({ tracer: provider.getTracer('continuity'), now: () => clock.now });
    await continuity.capturePre('s4', three('a'));
    await continuity.observePost('s4', three('a'));
    clock.now += 2 * 120_000; // the `sdk` runtime's post window is 120 s
    await continuity.reportActivity('s4', 'working');
    clock.now += 1;
    await continuity.reportActivity('s4', 'idle');
    const [pre] = named(SPAN_COMPACTION_PRE);
    const [inWindow, after] = named(SPAN_ACTIVITY);
    expect(inWindow!.parentSpanContext?.spanId).toBe(pre!.spanContext().spanId);
    // Later, a trace of its own: the boundary's trace ends with its windows.
    expect(after!.parentSpanContext).toBeUndefined();
    expect(after!.spanContext().traceId).not.toBe(pre!.spanContext().traceId);
  });

  it('keeps the evidence when the sampler refuses roots: a remote parent, one warning', async () => {
    const warnings: string[] = [];
    const logger = { warn: (m: string) => warnings.push(m) } as unknown as DiagLogger;
    diag.setLogger({ ...logger, error() {}, info() {}, debug() {}, verbose() {} });
    const refusing = new BasicTracerProvider({
      sampler: new ParentBasedSampler({ root: new AlwaysOffSampler() }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const continuity = createContinuity({ tracer: refusing.getTracer('continuity') });
    const pre = await continuity.capturePre('s5', three('a'), { boundaryId: 'b-5' });
    await continuity.capturePre('s6', three('a'), { boundaryId: 'b-6' });
    await continuity.observePost('s5', three('a'));
    const [preSpan] = named(SPAN_COMPACTION_PRE);
    expect(preSpan!.spanContext().spanId).toBe(pre.spanContext!.spanId);
    expect(preSpan!.spanContext().traceId).toBe(boundaryTraceId('s5', 'b-5'));
    expect(preSpan!.parentSpanContext?.spanId).toBe(boundarySpanId('s5', 'b-5', 'pre'));
    expect(named(SPAN_COMPACTION_PRE)).toHaveLength(2);
    // The post under the recorded pre span, sampled as its child.
    const [post] = named(SPAN_COMPACTION_POST);
    expect(post!.parentSpanContext?.spanId).toBe(preSpan!.spanContext().spanId);
    expect(warnings.filter((w) => w.includes('sampler refused'))).toHaveLength(1);
    await refusing.shutdown();
  });

  it('records nothing and warns nothing without a tracer provider', async () => {
    const warnings: string[] = [];
    diag.setLogger({
      warn: (m: string) => warnings.push(m),
      error() {},
      info() {},
      debug() {},
      verbose() {},
    });
    const r = await createContinuity().capturePre('s7', three('a'));
    expect(r.ok).toBe(true);
    expect(exporter.getFinishedSpans()).toEqual([]);
    expect(warnings).toEqual([]);
  });
});

describe("the Claude Agent SDK adapter's spans through the application's provider", () => {
  it('put the post under the pre it made, the pre under the active span', async () => {
    const sink = tracerSink(provider);
    const snapshot = (at: string) => ({
      sessionId: 's8',
      capturedAt: at,
      normalizerVersion: 1,
      decisions: { scope: { digest: `sha256:${'a'.repeat(64)}`, revision: 1, observedAt: at } },
    });
    const boundary = { boundaryId: 'b-8', runtime: 'claude-agent-sdk' };
    const turn = provider.getTracer('agent').startSpan('query');
    await within(turn, async () =>
      sink([compactionSpan('pre', snapshot('2026-11-30T10:00:00Z'), boundary, { startNs: 1n, endNs: 1n })]),
    );
    await sink([
      compactionSpan('post', snapshot('2026-11-30T10:01:00Z'), boundary, { startNs: 2n, endNs: 2n }),
    ]);
    turn.end();
    const [pre] = named(SPAN_COMPACTION_PRE);
    const [post] = named(SPAN_COMPACTION_POST);
    expect(pre!.parentSpanContext?.spanId).toBe(turn.spanContext().spanId);
    expect(post!.spanContext().traceId).toBe(pre!.spanContext().traceId);
    expect(post!.parentSpanContext?.spanId).toBe(pre!.spanContext().spanId);
    expect(post!.links.map((l) => l.context.spanId)).toEqual([pre!.spanContext().spanId]);
    expect(orphans(exporter.getFinishedSpans())).toEqual([]);
  });
});
