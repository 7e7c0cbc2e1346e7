import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Attributes, DiagLogLevel, diag, metrics, trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { classify } from '../../src/classify/classify.js';
import type { Resolution } from '../../src/correlate/types.js';
import {
  activityAttributes,
  approvalAttributes,
  evidenceMissingAttributes,
  snapshotAttributes,
} from '../../src/otel/attributes.js';
import { MIN_SDK_WITH_ON_ENDING } from '../../src/otel/processor.js';
import {
  ATTR_ACTIVITY_STATE,
  ATTR_CONTINUITY_ACTION,
  ATTR_CONTINUITY_PRIMARY_DECISION,
  ATTR_CONTINUITY_REASON,
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  decisionAttr,
  METRIC_ATTR_ACTIVITY,
  METRIC_ATTR_PRIMARY_DECISION,
  METRIC_ATTR_REASON,
  METRIC_ATTR_RUNTIME,
  METRIC_ATTR_SESSION_ID,
  METRIC_ATTR_STATE,
  METRIC_ATTR_TRIGGER,
  METRIC_BOUNDARIES,
  METRIC_EVICTIONS,
  METRIC_NEEDS_HUMAN,
  METRIC_PENDING,
  METRIC_REOBSERVATION_DURATION,
  METRIC_SESSIONS,
  SPAN_ACTIVITY,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_CONTINUITY_CHECK,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import { A, approval, B, sixCases, snap } from '../correlate/helpers.js';
import { type Harness, harness, sumBy } from './harness.js';

const PRE_AT = '2026-11-30T10:00:00Z';
const POST_AT = '2026-11-30T10:05:00Z';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  diag.disable();
});

/** Collects what reaches the diagnostic logger at `level` and above (the SDK's error handler logs there too). */
function captureDiag(level = DiagLogLevel.ERROR): { errors: unknown[][]; warnings: unknown[][] } {
  const seen = { errors: [] as unknown[][], warnings: [] as unknown[][] };
  const ignore = () => {};
  diag.setLogger(
    {
      error: (...args) => seen.errors.push(args),
      warn: (...args) => seen.warnings.push(args),
      info: ignore,
      debug: ignore,
      verbose: ignore,
    },
    { logLevel: level, suppressOverrideMessage: true },
  );
  return seen;
}

describe('ContinuityProcessor', () => {
  describe('on the post span', () => {
    it('writes state, action, reason, primary decision, verdicts and activity while the span ends', () => {
      h = harness();
      const pre = h.emit(
        SPAN_COMPACTION_PRE,
        snapshotAttributes('pre', snap('s', PRE_AT), { runtime: 'sdk' }),
      );
      h.emit(SPAN_ACTIVITY, activityAttributes('s', 'working'));
      const attrs = snapshotAttributes('post', snap('s', POST_AT, B), { runtime: 'sdk' });
      const post = h.emit(SPAN_COMPACTION_POST, attrs);
      expect(attrs[ATTR_CONTINUITY_STATE]).toBeUndefined();
      expect(post.attributes).toMatchObject({
        [ATTR_CONTINUITY_STATE]: 'conflicting',
        [ATTR_CONTINUITY_ACTION]: 'stop_and_ask_human',
        [ATTR_CONTINUITY_REASON]: 'unapproved_change',
        [ATTR_CONTINUITY_PRIMARY_DECISION]: 'scope',
        [decisionAttr('scope', 'verdict')]: 'conflicting',
        [decisionAttr('acceptance_test', 'verdict')]: 'preserved',
        [ATTR_ACTIVITY_STATE]: 'working',
      });
      expect(post.links.map((l) => l.context.spanId)).toEqual([pre.spanContext().spanId]);
      // The exported span carries the same: the attributes were written before export.
      expect(h.spans(SPAN_COMPACTION_POST)[0]?.attributes[ATTR_CONTINUITY_STATE]).toBe('conflicting');
      expect(h.spans(SPAN_CONTINUITY_CHECK)).toEqual([]);
    });

    it('leaves ordinary spans exactly as they were', () => {
      h = harness();
      const attrs: Attributes = { 'http.method': 'GET', [ATTR_SESSION_ID]: 's' };
      const span = h.emit('GET /users', attrs);
      expect(span.attributes).toEqual(attrs);
      expect(span.links).toEqual([]);
      expect(h.processor.pendingCount).toBe(0);
    });

    it('classifies the six cases through real spans as 2/1/1/1/1, as the library does', async () => {
      h = harness();
      for (const c of sixCases()) {
        h.emit(
          SPAN_COMPACTION_PRE,
          snapshotAttributes('pre', { ...c.pre!, sessionId: c.id }, { runtime: 'sdk', trigger: 'auto' }),
        );
        for (const a of c.approvals) h.emit(SPAN_DECISION_APPROVAL, approvalAttributes(c.id, a));
        const post = h.emit(
          SPAN_COMPACTION_POST,
          snapshotAttributes('post', { ...c.post!, sessionId: c.id }, { runtime: 'sdk', trigger: 'auto' }),
        );
        expect(post.attributes[ATTR_CONTINUITY_STATE]).toBe(
          classify({ pre: c.pre, post: c.post, approvals: c.approvals }).state,
        );
      }
      const boundaries = await h.points(METRIC_BOUNDARIES);
      expect(sumBy(boundaries, METRIC_ATTR_STATE)).toEqual({
        preserved: 2,
        approved_change: 1,
        dropped: 1,
        conflicting: 1,
        unverified: 1,
      });
      expect(
        boundaries.every(
          (p) => p.attributes[METRIC_ATTR_RUNTIME] === 'sdk' && p.attributes[METRIC_ATTR_TRIGGER] === 'auto',
        ),
      ).toBe(true);
      const needsHuman = await h.points(METRIC_NEEDS_HUMAN);
      expect(
        needsHuman.map((p) => [
          p.attributes[METRIC_ATTR_SESSION_ID],
          p.attributes[METRIC_ATTR_STATE],
          p.attributes[METRIC_ATTR_PRIMARY_DECISION],
        ]),
      ).toEqual([
        ['case-4-dropped-approval-boundary', 'dropped', 'approval_boundary'],
        ['case-5-conflicting-scope', 'conflicting', 'scope'],
      ]);
    });

    it('writes pre_snapshot_missing on a post with no pre', () => {
      h = harness();
      const post = h.emit(SPAN_COMPACTION_POST, snapshotAttributes('post', snap('s', POST_AT)));
      expect(post.attributes).toMatchObject({
        [ATTR_CONTINUITY_STATE]: 'unverified',
        [ATTR_CONTINUITY_REASON]: 'pre_snapshot_missing',
      });
    });

    it('resolves a failed pre capture to unverified, never a match', () => {
      h = harness();
      h.emit(SPAN_COMPACTION_PRE, evidenceMissingAttributes('pre', 's', 'capture_failed'));
      const post = h.emit(SPAN_COMPACTION_POST, snapshotAttributes('post', snap('s', POST_AT)));
      expect(post.attributes[ATTR_CONTINUITY_STATE]).toBe('unverified');
    });

    it('counts approvals seen between pre and post', () => {
      h = harness();
      h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('s', PRE_AT)));
      h.emit(SPAN_DECISION_APPROVAL, approvalAttributes('s', approval(A, B)));
      const post = h.emit(SPAN_COMPACTION_POST, snapshotAttributes('post', snap('s', POST_AT, B)));
      expect(post.attributes[ATTR_CONTINUITY_STATE]).toBe('approved_change');
    });
  });

  describe('boundaries that resolve without a post span', () => {
    it('emits continuity.check under the pre span when the post window passes', async () => {
      h = harness({ postWindowsMs: { sdk: 60_000 } });
      const pre = h.emit(
        SPAN_COMPACTION_PRE,
        snapshotAttributes('pre', snap('s', PRE_AT), { runtime: 'sdk', boundaryId: 'b1' }),
      );
      await h.processor.forceFlush();
      expect(h.spans(SPAN_CONTINUITY_CHECK)).toEqual([]);
      expect(sumBy(await h.points(METRIC_PENDING), 'x')).toEqual({ undefined: 1 });
      h.clock.now += 60_000;
      await h.processor.forceFlush();
      const [check, ...more] = h.spans(SPAN_CONTINUITY_CHECK);
      expect(more).toEqual([]);
      expect(check?.attributes).toMatchObject({
        [ATTR_SESSION_ID]: 's',
        'continuity.boundary.id': 'b1',
        [ATTR_CONTINUITY_STATE]: 'unverified',
        [ATTR_CONTINUITY_REASON]: 'post_observation_missing',
      });
      // In the pre span's trace, its child (a span that exists), linked to it.
      expect(check?.spanContext().traceId).toBe(pre.spanContext().traceId);
      expect(check?.parentSpanContext?.spanId).toBe(pre.spanContext().spanId);
      expect(check?.links.map((l) => l.context.spanId)).toEqual([pre.spanContext().spanId]);
      const counted = await h.points(METRIC_BOUNDARIES);
      expect(
        counted.map((p) => [p.attributes[METRIC_ATTR_STATE], p.attributes[METRIC_ATTR_REASON], p.value]),
      ).toEqual([['unverified', 'post_observation_missing', 1]]);
      expect(sumBy(await h.points(METRIC_PENDING), 'x')).toEqual({ undefined: 0 });
    });

    it('holds a post that ends inside an enclosing pre span when a grace is set, then reports on a check span', () => {
      h = harness({ reorderGraceMs: 2_000 });
      // The pre span starts first and ends last: it encloses the post span.
      const pre = h.provider
        .getTracer('agent')
        .startSpan(SPAN_COMPACTION_PRE, { attributes: snapshotAttributes('pre', snap('s', PRE_AT)) });
      const post = h.emit(SPAN_COMPACTION_POST, snapshotAttributes('post', snap('s', POST_AT)));
      expect(post.attributes[ATTR_CONTINUITY_STATE]).toBeUndefined();
      pre.end();
      const [check] = h.spans(SPAN_CONTINUITY_CHECK);
      expect(check?.attributes[ATTR_CONTINUITY_STATE]).toBe('preserved');
      expect(check?.links.map((l) => l.context.spanId)).toEqual([
        pre.spanContext().spanId,
        post.spanContext().spanId,
      ]);
    });

    it('does not pair a held post with a pre that started after it: that pre opens the next boundary', async () => {
      h = harness({ reorderGraceMs: 2_000 });
      h.emit(SPAN_COMPACTION_POST, snapshotAttributes('post', snap('s', POST_AT)));
      await new Promise((r) => setTimeout(r, 2)); // a later start time, whatever the clock resolution
      h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('s', '2026-11-30T10:30:00Z')));
      expect(h.spans(SPAN_CONTINUITY_CHECK).map((s) => s.attributes[ATTR_CONTINUITY_REASON])).toEqual([
        'pre_snapshot_missing',
      ]);
      expect(h.processor.pendingCount).toBe(1);
    });

    it('evicts the oldest pending boundary above the limit and counts it', async () => {
      h = harness({ maxPendingBoundaries: 2 });
      for (const id of ['a', 'b', 'c'])
        h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap(id, PRE_AT)));
      expect(h.processor.pendingCount).toBe(2);
      expect(h.spans(SPAN_CONTINUITY_CHECK).map((s) => s.attributes[ATTR_SESSION_ID])).toEqual(['a']);
      expect((await h.points(METRIC_EVICTIONS)).map((p) => p.value)).toEqual([1]);
    });

    it('resolves what is pending at shutdown, once, and is safe to call twice', async () => {
      h = harness();
      h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('s', PRE_AT)));
      const first = h.processor.shutdown();
      const second = h.processor.shutdown();
      expect(second).toBe(first);
      await Promise.all([first, second]);
      expect(h.spans(SPAN_CONTINUITY_CHECK).map((s) => s.attributes[ATTR_CONTINUITY_REASON])).toEqual([
        'post_observation_missing',
      ]);
      expect(h.processor.pendingCount).toBe(0);
      await h.processor.forceFlush();
      // After shutdown, compaction spans are ignored rather than half-processed.
      const post = h.emit(SPAN_COMPACTION_POST, snapshotAttributes('post', snap('s', POST_AT)));
      expect(post.attributes[ATTR_CONTINUITY_STATE]).toBeUndefined();
    });
  });

  describe('on an SDK without onEnding (sdk-trace-base < 2.3)', () => {
    it('warns once, naming the minimum version, and puts the state on a check span linked to both spans', () => {
      const { warnings } = captureDiag(DiagLogLevel.WARN);
      h = harness({}, { withoutOnEnding: true });
      const pre = h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('s', PRE_AT)));
      const post = h.emit(SPAN_COMPACTION_POST, snapshotAttributes('post', snap('s', POST_AT, B)));
      h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('t', PRE_AT)));
      h.emit(SPAN_COMPACTION_POST, snapshotAttributes('post', snap('t', POST_AT)));
      // The post span had ended when the processor saw it: nothing was written on it.
      expect(post.attributes[ATTR_CONTINUITY_STATE]).toBeUndefined();
      expect(post.links).toEqual([]);
      const checks = h.spans(SPAN_CONTINUITY_CHECK);
      expect(checks.map((c) => [c.attributes[ATTR_SESSION_ID], c.attributes[ATTR_CONTINUITY_STATE]])).toEqual(
        [
          ['s', 'conflicting'],
          ['t', 'preserved'],
        ],
      );
      expect(checks[0]?.attributes).toMatchObject({
        [ATTR_CONTINUITY_ACTION]: 'stop_and_ask_human',
        [ATTR_CONTINUITY_REASON]: 'unapproved_change',
        [ATTR_CONTINUITY_PRIMARY_DECISION]: 'scope',
        [decisionAttr('scope', 'verdict')]: 'conflicting',
      });
      expect(checks[0]?.links.map((l) => l.context.spanId)).toEqual([
        pre.spanContext().spanId,
        post.spanContext().spanId,
      ]);
      expect(warnings).toHaveLength(1);
      expect(String(warnings[0]?.[0])).toContain('does not call SpanProcessor.onEnding');
      expect(String(warnings[0]?.[0])).toContain(`sdk-trace-base >= ${MIN_SDK_WITH_ON_ENDING.sdkTraceBase}`);
    });

    it('still records the metrics', async () => {
      h = harness({}, { withoutOnEnding: true });
      h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('s', PRE_AT)));
      h.emit(SPAN_COMPACTION_POST, snapshotAttributes('post', snap('s', POST_AT)));
      expect(sumBy(await h.points(METRIC_BOUNDARIES), METRIC_ATTR_STATE)).toEqual({ preserved: 1 });
    });

    it('says nothing on an SDK that calls onEnding', () => {
      const { warnings } = captureDiag(DiagLogLevel.WARN);
      h = harness();
      h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('s', PRE_AT)));
      h.emit(SPAN_COMPACTION_POST, snapshotAttributes('post', snap('s', POST_AT)));
      expect(h.spans(SPAN_CONTINUITY_CHECK)).toEqual([]);
      expect(warnings).toEqual([]);
    });
  });

  describe('shutdown and flush with nothing observed', () => {
    it('create no instruments, so a metric reader has nothing to export', async () => {
      h = harness();
      h.emit('chat model', {});
      await h.processor.forceFlush();
      await h.processor.shutdown();
      for (const m of [METRIC_BOUNDARIES, METRIC_PENDING, METRIC_SESSIONS, METRIC_NEEDS_HUMAN]) {
        expect(await h.points(m), m).toEqual([]);
      }
    });

    it('still record what a shutdown resolves', async () => {
      h = harness();
      h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('s', PRE_AT)));
      await h.processor.shutdown();
      expect(sumBy(await h.points(METRIC_BOUNDARIES), METRIC_ATTR_REASON)).toEqual({
        post_observation_missing: 1,
      });
    });
  });

  describe('timer', () => {
    it('resolves expired boundaries on its own interval, with no call from the application', async () => {
      h = harness({ postWindowsMs: { sdk: 1 }, checkIntervalMs: 10, clock: Date.now });
      h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('s', PRE_AT), { runtime: 'sdk' }));
      await vi.waitFor(() => expect(h!.spans(SPAN_CONTINUITY_CHECK)).toHaveLength(1), {
        timeout: 10_000,
        interval: 20,
      });
      expect(h.processor.pendingCount).toBe(0);
    });

    it('never keeps the process alive: a process with a pending boundary exits on its own', () => {
      // Uses the build (npm test builds first), like the CLI tests.
      const dist = (p: string) => new URL(`../../dist/${p}`, import.meta.url).href;
      const script = `
        import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
        import { ContinuityProcessor } from ${JSON.stringify(dist('otel/processor.js'))};
        import { snapshotAttributes } from ${JSON.stringify(dist('otel/attributes.js'))};
        const processor = new ContinuityProcessor({ checkIntervalMs: 10 });
        const provider = new BasicTracerProvider({ spanProcessors: [processor] });
        const snapshot = { sessionId: 's', capturedAt: '2026-11-30T10:00:00Z', normalizerVersion: 1, decisions: {} };
        provider.getTracer('t').startSpan('continuity.compaction.pre', { attributes: snapshotAttributes('pre', snapshot) }).end();
        process.stdout.write(String(processor.pendingCount));
      `;
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: fileURLToPath(new URL('../..', import.meta.url)),
        timeout: 30_000,
        encoding: 'utf8',
      });
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe('1');
      expect([r.status, r.signal]).toEqual([0, null]);
    });
  });

  describe('metrics', () => {
    it('records the sessions gauge by state × activity and the re-observation histogram in seconds', async () => {
      h = harness();
      h.emit(SPAN_ACTIVITY, activityAttributes('w', 'waiting_human'));
      h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('w', PRE_AT)));
      h.emit(SPAN_COMPACTION_POST, snapshotAttributes('post', snap('w', POST_AT)));
      const sessions = await h.points(METRIC_SESSIONS);
      expect(
        sessions.map((p) => [p.attributes[METRIC_ATTR_STATE], p.attributes[METRIC_ATTR_ACTIVITY], p.value]),
      ).toEqual([['preserved', 'waiting_human', 1]]);
      const [hist] = await h.points(METRIC_REOBSERVATION_DURATION);
      expect(hist?.value).toMatchObject({ count: 1, sum: 300 });
    });

    it('creates instruments lazily, so a processor built before the global meter provider still records', async () => {
      h = harness({}, { meter: false });
      try {
        metrics.setGlobalMeterProvider(h.meterProvider);
        h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('s', PRE_AT)));
        h.emit(SPAN_COMPACTION_POST, snapshotAttributes('post', snap('s', POST_AT)));
        expect(sumBy(await h.points(METRIC_BOUNDARIES), METRIC_ATTR_STATE)).toEqual({ preserved: 1 });
      } finally {
        metrics.disable();
      }
    });
  });

  describe('never throws', () => {
    it.each([
      ['numbers everywhere', { [ATTR_SESSION_ID]: 7, 'continuity.decision.names': 3 }],
      ['a path as session id', { [ATTR_SESSION_ID]: '/home/me/.claude/session.jsonl' }],
      ['mixed arrays', { [ATTR_SESSION_ID]: 's', 'continuity.decision.names': ['scope', 'x y'] }],
      ['a huge name list', { [ATTR_SESSION_ID]: 's', 'continuity.decision.names': Array(500).fill('scope') }],
      ['bad times', { [ATTR_SESSION_ID]: 's', 'continuity.captured_at': 'yesterday' }],
    ])('with %s on compaction spans', (_label, attrs) => {
      h = harness();
      const { errors } = captureDiag();
      for (const name of [SPAN_COMPACTION_PRE, SPAN_DECISION_APPROVAL, SPAN_ACTIVITY, SPAN_COMPACTION_POST]) {
        expect(() => h!.emit(name, attrs as Attributes)).not.toThrow();
      }
      const post = h.spans(SPAN_COMPACTION_POST)[0];
      // Whatever was read, it is never a match.
      expect(post?.attributes[ATTR_CONTINUITY_STATE] ?? 'unverified').toBe('unverified');
      expect(errors).toEqual([]);
    });

    it('routes an onResolution failure to diag.error', () => {
      const { errors } = captureDiag();
      const seen: Resolution[] = [];
      h = harness({
        onResolution: (r) => {
          seen.push(r);
          throw new Error('ledger down');
        },
      });
      h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('s', PRE_AT)));
      const post = h.emit(SPAN_COMPACTION_POST, snapshotAttributes('post', snap('s', POST_AT)));
      expect(post.attributes[ATTR_CONTINUITY_STATE]).toBe('preserved');
      expect(seen).toHaveLength(1);
      expect(errors).toHaveLength(1);
    });

    it('clamps bad options instead of throwing', () => {
      expect(() => harness({ checkIntervalMs: -1, maxPendingBoundaries: Number.NaN }).close()).not.toThrow();
    });
  });

  it('uses the global tracer provider for check spans when none is given', async () => {
    h = harness({}, { tracer: false });
    trace.setGlobalTracerProvider(h.provider);
    try {
      h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('s', PRE_AT)));
      await h.processor.shutdown();
      expect(h.spans(SPAN_CONTINUITY_CHECK)).toHaveLength(1);
    } finally {
      trace.disable();
    }
  });
});
