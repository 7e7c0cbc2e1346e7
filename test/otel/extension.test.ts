import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { classify } from '../../src/classify/classify.js';
import { createDigestKey, digestValue } from '../../src/digest/digest.js';
import { readCompactionSpan } from '../../src/otel/attributes.js';
import { createContinuity } from '../../src/otel/extension.js';
import { ContinuityProcessor } from '../../src/otel/processor.js';
import {
  ATTR_BOUNDARY_ID,
  ATTR_CONTINUITY_STATE,
  ATTR_EVIDENCE_MISSING,
  ATTR_GEN_AI_CONVERSATION_COMPACTED,
  ATTR_RUNTIME,
  ATTR_SESSION_ID,
  ATTR_TRIGGER,
  SPAN_ACTIVITY,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_CONTINUITY_CHECK,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import type { ContinuityLedgerRecord, ContinuityProblem, DecisionInput } from '../../src/otel/types.js';

const SECRET = 'do-not-leak-this-value';

const decisions = (scope = 'acme/payments'): Record<string, DecisionInput> => ({
  scope: { value: { repository: scope, note: SECRET }, source: 'task-record' },
  approval_boundary: { value: { requires_human: ['deploy'] }, revision: 2 },
  acceptance_test: { value: 'npm test -- ledger' },
});

/** An in-memory ledger sink: keeps what the extension appends, as a ledger file would. */
class MemoryLedger {
  records: ContinuityLedgerRecord[] = [];
  async append(record: ContinuityLedgerRecord): Promise<void> {
    this.records.push(structuredClone(record));
  }
}

let exporter: InMemorySpanExporter;
let provider: BasicTracerProvider;

beforeEach(() => {
  exporter = new InMemorySpanExporter();
  provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
});

afterEach(async () => {
  await provider.shutdown();
});

function spans(name: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.name === name);
}

function read(span: ReadableSpan) {
  return readCompactionSpan(span.name, span.attributes, span.startTime);
}

describe('createContinuity', () => {
  describe('capturePre and observePost', () => {
    it('emits pre and post spans with digests, the session key and one boundary id', async () => {
      const continuity = createContinuity({ tracer: provider.getTracer('t'), runtime: 'sdk' });
      expect(exporter.getFinishedSpans()).toEqual([]);
      const pre = await continuity.capturePre('session-1', decisions(), { trigger: 'auto' });
      const post = await continuity.observePost('session-1', decisions(), {
        compactedAt: '2026-11-30T10:01:00Z',
      });
      expect(pre.ok).toBe(true);
      expect(post.ok).toBe(true);
      expect(post.boundaryId).toBe(pre.boundaryId);
      expect(pre.digests.scope).toBe(digestValue({ repository: 'acme/payments', note: SECRET }));

      const [preSpan] = spans(SPAN_COMPACTION_PRE);
      const [postSpan] = spans(SPAN_COMPACTION_POST);
      expect(preSpan!.attributes[ATTR_SESSION_ID]).toBe('session-1');
      expect(preSpan!.attributes[ATTR_BOUNDARY_ID]).toBe(pre.boundaryId);
      expect(preSpan!.attributes[ATTR_RUNTIME]).toBe('sdk');
      expect(preSpan!.attributes[ATTR_TRIGGER]).toBe('auto');
      expect(postSpan!.attributes[ATTR_TRIGGER]).toBe('auto');
      expect(postSpan!.attributes[ATTR_GEN_AI_CONVERSATION_COMPACTED]).toBe(true);

      const preEvent = read(preSpan!);
      expect(preEvent?.kind).toBe('pre');
      if (preEvent?.kind !== 'pre' || !preEvent.snapshot) throw new Error('expected a pre snapshot');
      expect(preEvent.snapshot.decisions.scope!.digest).toBe(pre.digests.scope);
      expect(preEvent.snapshot.decisions.scope!.source).toBe('task-record');
      expect(preEvent.snapshot.decisions.approval_boundary!.revision).toBe(2);
      const postEvent = read(postSpan!);
      if (postEvent?.kind !== 'post') throw new Error('expected a post event');
      expect(postEvent.compactedAt).toBe('2026-11-30T10:01:00Z');
      expect(postEvent.boundaryId).toBe(pre.boundaryId);
    });

    it('returns the state the processor wrote on the post span', async () => {
      const withProcessor = new BasicTracerProvider({
        spanProcessors: [new ContinuityProcessor(), new SimpleSpanProcessor(exporter)],
      });
      const continuity = createContinuity({ tracer: withProcessor.getTracer('t'), runtime: 'sdk' });
      await continuity.capturePre('session-1', decisions(), { trigger: 'auto' });
      const post = await continuity.observePost('session-1', decisions('acme/other'));
      expect(post.state).toBe('conflicting');
      await withProcessor.shutdown();
    });

    it('returns the state on an SDK without onEnding too, where it travels on a check span', async () => {
      const processor = new ContinuityProcessor();
      const withoutOnEnding = new BasicTracerProvider({
        spanProcessors: [
          {
            onStart: (span, ctx) => processor.onStart(span, ctx),
            onEnd: (span) => processor.onEnd(span),
            forceFlush: () => processor.forceFlush(),
            shutdown: () => processor.shutdown(),
          },
          new SimpleSpanProcessor(exporter),
        ],
      });
      processor.setTracerProvider(withoutOnEnding);
      const continuity = createContinuity({ tracer: withoutOnEnding.getTracer('t'), runtime: 'sdk' });
      await continuity.capturePre('session-1', decisions(), { trigger: 'auto' });
      const post = await continuity.observePost('session-1', decisions('acme/other'));
      expect(post.state).toBe('conflicting');
      expect(spans(SPAN_CONTINUITY_CHECK).map((s) => s.attributes[ATTR_CONTINUITY_STATE])).toEqual([
        'conflicting',
      ]);
      await withoutOnEnding.shutdown();
    });

    it("puts the processor's check span for a boundary with no post under the extension's pre span", async () => {
      const clock = { now: 1_800_000_000_000 };
      const processor = new ContinuityProcessor({ postWindowsMs: { sdk: 60_000 }, clock: () => clock.now });
      const withProcessor = new BasicTracerProvider({
        spanProcessors: [processor, new SimpleSpanProcessor(exporter)],
      });
      processor.setTracerProvider(withProcessor);
      const continuity = createContinuity({ tracer: withProcessor.getTracer('t'), runtime: 'sdk' });
      await continuity.capturePre('session-1', decisions(), { trigger: 'auto' });
      clock.now += 60_000;
      await processor.forceFlush();
      const [preSpan] = spans(SPAN_COMPACTION_PRE);
      const [check, ...more] = spans(SPAN_CONTINUITY_CHECK);
      expect(more).toEqual([]);
      expect(check!.spanContext().traceId).toBe(preSpan!.spanContext().traceId);
      expect(check!.parentSpanContext?.spanId).toBe(preSpan!.spanContext().spanId);
      await withProcessor.shutdown();
    });

    it('never puts a raw value on a span', async () => {
      const continuity = createContinuity({ tracer: provider.getTracer('t') });
      await continuity.capturePre('session-1', decisions());
      await continuity.observePost('session-1', decisions('other/repo'));
      const text = JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes));
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain('acme/payments');
      expect(text).not.toContain('npm test');
    });

    it('puts the pre span under the span active at the call, which links to nothing more', async () => {
      const tracer = provider.getTracer('agent');
      const continuity = createContinuity({ tracer });
      const manager = new AsyncLocalStorageContextManager().enable();
      context.setGlobalContextManager(manager);
      const parent = tracer.startSpan('agent.turn');
      try {
        await context.with(trace.setSpan(context.active(), parent), async () => {
          await Promise.resolve();
          await continuity.capturePre('session-1', decisions());
        });
      } finally {
        parent.end();
        context.disable();
      }
      const [preSpan] = spans(SPAN_COMPACTION_PRE);
      // A child of the agent's span, in the agent's trace: the agent's view shows it in place.
      expect(preSpan!.spanContext().traceId).toBe(parent.spanContext().traceId);
      expect(preSpan!.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
      expect(preSpan!.links).toEqual([]);
      const [turn] = exporter.getFinishedSpans().filter((s) => s.name === 'agent.turn');
      expect(turn!.links).toEqual([]);
    });

    it('uses the global tracer provider when no tracer is given', async () => {
      trace.setGlobalTracerProvider(provider);
      try {
        await createContinuity().capturePre('session-1', decisions());
        expect(spans(SPAN_COMPACTION_PRE)).toHaveLength(1);
        expect(spans(SPAN_COMPACTION_PRE)[0]!.instrumentationScope.name).toBe('agent-continuity');
      } finally {
        trace.disable();
      }
    });

    it('digests with the key when one is given', async () => {
      const key = createDigestKey(Buffer.alloc(32, 7));
      const continuity = createContinuity({ tracer: provider.getTracer('t'), digestKey: key });
      const pre = await continuity.capturePre('session-1', decisions());
      expect(pre.digests.scope).toMatch(new RegExp(`^hmac-sha256:${key.keyId}:[0-9a-f]{64}$`));
    });

    it('replays explicit capture and observation times', async () => {
      const continuity = createContinuity({ tracer: provider.getTracer('t') });
      await continuity.capturePre(
        'session-1',
        { a: { value: 1, observedAt: '2026-11-30T10:00:00Z' }, b: { value: 2 }, c: { value: 3 } },
        { capturedAt: '2026-11-30T10:00:00Z' },
      );
      const [preSpan] = spans(SPAN_COMPACTION_PRE);
      expect(preSpan!.startTime).toEqual([Date.parse('2026-11-30T10:00:00Z') / 1000, 0]);
      const event = read(preSpan!);
      if (event?.kind !== 'pre' || !event.snapshot) throw new Error('expected a pre snapshot');
      expect(event.snapshot.capturedAt).toBe('2026-11-30T10:00:00Z');
      expect(event.snapshot.decisions.b!.observedAt).toBe('2026-11-30T10:00:00Z');
    });

    it('accepts digests computed elsewhere', async () => {
      const digest = digestValue('main');
      const continuity = createContinuity({ tracer: provider.getTracer('t') });
      const pre = await continuity.capturePre('session-1', {
        target: { digest },
        scope: { value: 'x' },
        constraint: { value: 'y' },
      });
      expect(pre.digests.target).toBe(digest);
    });

    it('keeps capture times strictly increasing, so a post in the same millisecond is still fresh', async () => {
      const continuity = createContinuity({ tracer: provider.getTracer('t'), now: () => 1_796_000_000_000 });
      await continuity.capturePre('session-1', decisions());
      await continuity.observePost('session-1', decisions());
      const pre = read(spans(SPAN_COMPACTION_PRE)[0]!);
      const post = read(spans(SPAN_COMPACTION_POST)[0]!);
      if (pre?.kind !== 'pre' || post?.kind !== 'post' || !pre.snapshot || !post.snapshot) {
        throw new Error('expected two snapshots');
      }
      expect(post.snapshot.capturedAt > pre.snapshot.capturedAt).toBe(true);
      expect(classify({ pre: pre.snapshot, post: post.snapshot }).state).toBe('preserved');
    });

    it('binds a session with forSession', async () => {
      const session = createContinuity({ tracer: provider.getTracer('t') }).forSession('session-9');
      const pre = await session.capturePre(decisions());
      const post = await session.observePost(decisions());
      expect(post.boundaryId).toBe(pre.boundaryId);
      expect(spans(SPAN_COMPACTION_POST)[0]!.attributes[ATTR_SESSION_ID]).toBe('session-9');
    });
  });

  describe('a capture that cannot produce evidence', () => {
    it('marks the span evidence-missing when the normalizer refuses a value, without the value', async () => {
      const problems: ContinuityProblem[] = [];
      const ledger = new MemoryLedger();
      const continuity = createContinuity({
        tracer: provider.getTracer('t'),
        ledger,
        onProblem: (p) => problems.push(p),
      });
      const bad = { ...decisions(), target: { value: { secret: SECRET, f: () => 1 } } };
      const pre = await continuity.capturePre('session-1', bad as Record<string, DecisionInput>);
      expect(pre.ok).toBe(false);
      expect(pre.evidenceMissing).toBe('invalid_decision');
      const [preSpan] = spans(SPAN_COMPACTION_PRE);
      expect(preSpan!.attributes[ATTR_EVIDENCE_MISSING]).toBe('invalid_decision');
      const event = read(preSpan!);
      expect(event?.kind === 'pre' && event.evidenceMissing).toBe('invalid_decision');
      expect(problems).toHaveLength(1);
      expect(problems[0]!.decision).toBe('target');
      expect(JSON.stringify(problems)).not.toContain(SECRET);
      expect(ledger.records).toEqual([
        expect.objectContaining({ type: 'evidence_missing', phase: 'pre', reason: 'invalid_decision' }),
      ]);
      expect(JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes))).not.toContain(SECRET);
    });

    it('refuses a pre capture outside the decision bounds', async () => {
      const continuity = createContinuity({ tracer: provider.getTracer('t'), onProblem: () => {} });
      const pre = await continuity.capturePre('session-1', { scope: { value: 1 } });
      expect(pre.evidenceMissing).toBe('invalid_decision');
      const post = await continuity.observePost('session-1', { scope: { value: 1 } });
      expect(post.ok).toBe(true);
    });

    it('marks the span when the ledger write fails', async () => {
      const continuity = createContinuity({
        tracer: provider.getTracer('t'),
        ledger: {
          append: async () => {
            throw new Error('disk full');
          },
        },
        onProblem: () => {},
      });
      const pre = await continuity.capturePre('session-1', decisions());
      expect(pre).toMatchObject({ ok: false, evidenceMissing: 'ledger_write_failed', digests: {} });
      const event = read(spans(SPAN_COMPACTION_PRE)[0]!);
      expect(event?.kind === 'pre' && event.evidenceMissing).toBe('ledger_write_failed');
    });

    it('does not wait for a hung ledger beyond the timeout', async () => {
      const continuity = createContinuity({
        tracer: provider.getTracer('t'),
        ledger: { append: () => new Promise(() => {}) },
        ledgerTimeoutMs: 30,
        onProblem: () => {},
      });
      const pre = await continuity.capturePre('session-1', decisions());
      expect(pre.evidenceMissing).toBe('ledger_write_failed');
      expect(spans(SPAN_COMPACTION_PRE)).toHaveLength(1);
    });

    it('never throws on input of the wrong shape, nor when the problem callback throws', async () => {
      const continuity = createContinuity({
        tracer: provider.getTracer('t'),
        onProblem: () => {
          throw new Error('agent callback bug');
        },
      });
      const odd = [
        null,
        [],
        'x',
        { scope: null },
        { scope: { value: 1, revision: 0 } },
        { 'Bad Name': { value: 1 } },
      ];
      for (const input of odd) {
        const r = await continuity.capturePre('session-1', input as unknown as Record<string, DecisionInput>);
        expect(r.ok).toBe(false);
      }
      expect(spans(SPAN_COMPACTION_PRE)).toHaveLength(odd.length);
      for (const s of spans(SPAN_COMPACTION_PRE)) expect(s.attributes[ATTR_EVIDENCE_MISSING]).toBeDefined();
    });

    it('emits no span for a session id that is not an opaque identifier', async () => {
      const continuity = createContinuity({ tracer: provider.getTracer('t'), onProblem: () => {} });
      const r = await continuity.capturePre('/home/user/.claude/transcript.jsonl', decisions());
      expect(r.ok).toBe(false);
      expect(exporter.getFinishedSpans()).toEqual([]);
    });
  });

  describe('the ledger', () => {
    it('receives the boundary, the snapshots, approvals and activity', async () => {
      const ledger = new MemoryLedger();
      const continuity = createContinuity({ tracer: provider.getTracer('t'), ledger, runtime: 'my-agent' });
      const pre = await continuity.capturePre('s-1', decisions(), { trigger: 'manual' });
      await continuity.recordApproval('s-1', {
        decision: 'acceptance_test',
        from: 'npm test -- ledger',
        to: 'npm test -- ledger payments',
        approvalRef: 'PR-17',
        approvedBy: 'reviewer-1',
        approvedAt: '2026-11-30T10:02:00Z',
      });
      await continuity.observePost('s-1', decisions(), { compactedAt: '2026-11-30T10:01:00Z' });
      await continuity.reportActivity('s-1', 'waiting_human', { at: '2026-11-30T10:03:00Z' });
      expect(ledger.records.map((r) => r.type)).toEqual([
        'snapshot',
        'approval',
        'boundary',
        'snapshot',
        'activity',
      ]);
      expect(ledger.records[0]).toMatchObject({
        type: 'snapshot',
        phase: 'pre',
        sessionId: 's-1',
        boundaryId: pre.boundaryId,
        runtime: 'my-agent',
        trigger: 'manual',
      });
      expect(ledger.records[2]).toMatchObject({ type: 'boundary', boundaryId: pre.boundaryId });
      expect(ledger.records[1]).toMatchObject({
        fromDigest: digestValue('npm test -- ledger'),
        toDigest: digestValue('npm test -- ledger payments'),
      });
      expect(JSON.stringify(ledger.records)).not.toContain(SECRET);
    });
  });

  describe('approvals and activity', () => {
    it('emits an approval span with digests and opaque ids only', async () => {
      const continuity = createContinuity({ tracer: provider.getTracer('t') });
      const r = await continuity.recordApproval('s-1', {
        decision: 'scope',
        from: { repository: SECRET },
        to: { repository: 'b' },
        approvalRef: 'CHG-1',
        approvedBy: 'alice',
      });
      expect(r).toEqual({ ok: true });
      const [span] = spans(SPAN_DECISION_APPROVAL);
      const event = read(span!);
      if (event?.kind !== 'approval' || !event.approval) throw new Error('expected an approval');
      expect(event.approval.fromDigest).toBe(digestValue({ repository: SECRET }));
      expect(JSON.stringify(span!.attributes)).not.toContain(SECRET);
    });

    it('marks a malformed approval instead of throwing', async () => {
      const continuity = createContinuity({ tracer: provider.getTracer('t'), onProblem: () => {} });
      const r = await continuity.recordApproval('s-1', {
        decision: 'scope',
        from: 1,
        to: 2,
        approvalRef: 'has spaces',
        approvedBy: 'alice',
      });
      expect(r).toEqual({ ok: false, problem: 'invalid_decision' });
      const event = read(spans(SPAN_DECISION_APPROVAL)[0]!);
      expect(event?.kind === 'approval' && event.approval).toBeNull();
    });

    it('reports activity as its own span and refuses unknown states', async () => {
      const continuity = createContinuity({ tracer: provider.getTracer('t'), onProblem: () => {} });
      expect(await continuity.reportActivity('s-1', 'working')).toEqual({ ok: true });
      expect(await continuity.reportActivity('s-1', 'sleeping' as 'idle')).toEqual({
        ok: false,
        problem: 'invalid_input',
      });
      const activity = spans(SPAN_ACTIVITY);
      expect(activity).toHaveLength(1);
      expect(read(activity[0]!)).toMatchObject({ kind: 'activity', sessionId: 's-1', state: 'working' });
    });
  });
});
