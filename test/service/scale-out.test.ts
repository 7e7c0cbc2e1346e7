/**
 * Scale-out with the Collector's default routing. The load-balancing exporter routes by trace id
 * (`routing_key: traceID`, its default), so what keeps a boundary on one instance is the property
 * proved first: every continuity span of a boundary, from every process that emits them (the SDK
 * extension, the processor's check spans, the hooks' and recording commands' spans from
 * src/export, the service's check spans), carries the boundary's trace id. Then three real
 * `continuity serve` instances, each fed only the traces the exporter's hash ring gives it from
 * interleaved batches of many sessions (test/support/load-balancing.ts, a port of the exporter's
 * split and ring), resolve every boundary to its true state: none `unverified` for lack of its
 * other half.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Correlator } from '../../src/correlate/correlator.js';
import type { Snapshot } from '../../src/decision/model.js';
import { approvalSpan, compactionSpan } from '../../src/export/ledger-spans.js';
import { buildTraceRequest, type ExportSpan, randomSpanIds } from '../../src/export/spans.js';
import { activityAttributes, readCompactionSpan } from '../../src/otel/attributes.js';
import { boundaryTraceId } from '../../src/otel/boundary-trace.js';
import { createContinuity } from '../../src/otel/extension.js';
import {
  ATTR_BOUNDARY_ID,
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  SPAN_ACTIVITY,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_CONTINUITY_CHECK,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import { decodeTraceRequest, encodeTraceRequest, recordToAttributes } from '../../src/otlp/index.js';
import type { OtlpTraceRequest } from '../../src/otlp/types.js';
import { checkResourceSpans } from '../../src/service/enrich.js';
import { SERVICE_TEST_APPROVER } from '../support/approver.js';
import { HashRing, partitionByTraceId } from '../support/load-balancing.js';
import { type Downstream, post, type ServeProcess, startDownstream, startServe, waitFor } from './harness.js';

const A = `sha256:${'a'.repeat(64)}`;
const B = `sha256:${'b'.repeat(64)}`;
const T = `sha256:${'c'.repeat(64)}`;

function snapshot(sessionId: string, at: string, scope: string): Snapshot {
  return {
    sessionId,
    capturedAt: at,
    normalizerVersion: 1,
    decisions: {
      scope: { digest: scope, revision: 1, observedAt: at },
      acceptance_test: { digest: T, revision: 1, observedAt: at },
    },
  };
}

/** Three decisions (the extension's default minimum), the scope as given. */
const three = (scope: string) => ({
  scope: { value: scope },
  target: { value: 'main' },
  acceptance_test: { value: 'npm test' },
});

describe('every continuity span of a boundary carries the boundary trace id', () => {
  it('from the SDK extension (pre, approval, post, activity): the pre under the agent span, the rest under the pre', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    const agent = provider.getTracer('agent').startSpan('agent.turn');
    try {
      const continuity = createContinuity({ tracer: provider.getTracer('continuity'), runtime: 'sdk' });
      await context.with(trace.setSpan(context.active(), agent), async () => {
        await continuity.capturePre('sess-x', three('a'), { trigger: 'auto' });
        await continuity.recordApproval('sess-x', {
          decision: 'scope',
          from: 'a',
          to: 'b',
          approvalRef: 'CHG-1',
          approvedBy: 'alice',
        });
        await continuity.observePost('sess-x', three('b'));
        await continuity.reportActivity('sess-x', 'working');
      });
    } finally {
      agent.end();
      context.disable();
    }
    const spans = exporter.getFinishedSpans().filter((s) => s.name !== 'agent.turn');
    expect(spans.map((s) => s.name).sort()).toEqual(
      [SPAN_ACTIVITY, SPAN_COMPACTION_POST, SPAN_COMPACTION_PRE, SPAN_DECISION_APPROVAL].sort(),
    );
    const pre = spans.find((s) => s.name === SPAN_COMPACTION_PRE)!;
    expect(pre.parentSpanContext?.spanId).toBe(agent.spanContext().spanId);
    expect(pre.links).toEqual([]);
    for (const s of spans) {
      expect(s.spanContext().traceId, s.name).toBe(agent.spanContext().traceId);
      if (s === pre) continue;
      expect(s.parentSpanContext?.spanId, s.name).toBe(pre.spanContext().spanId);
      expect(
        s.links.map((l) => l.context.spanId),
        s.name,
      ).toEqual([agent.spanContext().spanId]);
    }
  });

  it('from the hooks and recording commands (src/export): the pre the root, the rest its children', () => {
    const boundary = { boundaryId: 'b-1', runtime: 'claude-code', trigger: 'auto' as const };
    const spans: ExportSpan[] = [
      compactionSpan('pre', snapshot('sess-y', '2026-11-30T10:00:00Z', A), boundary, {
        startNs: 1n,
        endNs: 2n,
      }),
      approvalSpan(
        'sess-y',
        {
          decision: 'scope',
          fromDigest: A,
          toDigest: B,
          approvalRef: 'CHG-2',
          approvedBy: 'bob',
          approvedAt: '2026-11-30T10:01:00Z',
        },
        7,
        'b-1',
      ),
      compactionSpan('post', snapshot('sess-y', '2026-11-30T10:02:00Z', B), boundary, {
        startNs: 3n,
        endNs: 4n,
      }),
      // The Claude Code activity span belongs to no boundary: a trace of its own.
      {
        name: SPAN_ACTIVITY,
        ids: randomSpanIds(),
        startNs: 5n,
        endNs: 5n,
        attributes: activityAttributes('sess-y', 'idle'),
      },
    ];
    const request = buildTraceRequest(spans, 'claude-code');
    const out = request.resourceSpans[0]!.scopeSpans[0]!.spans;
    expect(out).toHaveLength(4);
    const [boundarySpans, activity] = [out.slice(0, 3), out[3]!];
    for (const s of boundarySpans) expect(s.traceId, s.name).toBe(boundaryTraceId('sess-y', 'b-1'));
    expect(activity.traceId).not.toBe(boundaryTraceId('sess-y', 'b-1'));
    expect(activity.parentSpanId).toBe('');
    // The pre is the root; the approval and the post are its children; the post links to it.
    const pre = out.find((s) => s.name === SPAN_COMPACTION_PRE)!;
    expect(pre.parentSpanId).toBe('');
    const postSpan = out.find((s) => s.name === SPAN_COMPACTION_POST)!;
    const approval = out.find((s) => s.name === SPAN_DECISION_APPROVAL)!;
    expect([postSpan.parentSpanId, approval.parentSpanId]).toEqual([pre.spanId, pre.spanId]);
    expect(postSpan.links.map((l) => [l.traceId, l.spanId])).toEqual([[pre.traceId, pre.spanId]]);
  });

  it('from the service check spans, children of the pre span', () => {
    const correlator = new Correlator({ postWindowsMs: { default: 1000 } });
    const preSpan = { traceId: boundaryTraceId('sess-z', 'b'), spanId: '1'.repeat(16) };
    const attrs = recordToAttributes({});
    expect(attrs).toEqual([]);
    const event = readCompactionSpan(
      SPAN_COMPACTION_PRE,
      {
        ...Object.fromEntries(
          Object.entries(
            compactionSpan(
              'pre',
              snapshot('sess-z', '2026-11-30T10:00:00Z', A),
              { boundaryId: 'b' },
              {
                startNs: 1n,
                endNs: 1n,
              },
            ).attributes,
          ),
        ),
      },
      1764500000000000000n,
      preSpan,
    );
    correlator.observe(event!, 0);
    const resolutions = correlator.expire(10_000);
    expect(resolutions).toHaveLength(1);
    const checks = checkResourceSpans(resolutions, 10_000, {
      resource: {},
      scopeName: 's',
      scopeVersion: '1',
    });
    const [check] = checks!.scopeSpans[0]!.spans;
    expect(check!.name).toBe(SPAN_CONTINUITY_CHECK);
    expect(check!.traceId).toBe(preSpan.traceId);
    expect(check!.parentSpanId).toBe(preSpan.spanId);
  });
});

describe('three continuity serve instances behind trace-id routing', () => {
  const INSTANCES = 3;
  const SESSIONS = 60;
  let downstream: Downstream;
  const serves: ServeProcess[] = [];

  beforeAll(async () => {
    downstream = await startDownstream();
    for (let i = 0; i < INSTANCES; i++) {
      serves.push(
        await startServe({
          config: {
            downstream: { endpoint: `${downstream.base}/v1/traces` },
            correlation: { postWindows: { default: '10m' } },
          },
        }),
      );
    }
  }, 60_000);

  afterAll(async () => {
    for (const s of serves) await s.stop();
    await downstream?.close();
  });

  it('resolves every boundary of interleaved sessions to its true state, none unverified', async () => {
    // Sessions of three kinds: preserved, approved_change (an approval between), conflicting;
    // each hook session has two boundaries, whose traces may go to different instances.
    const expected = new Map<string, string>(); // `${session} ${boundary}` → state
    const pres: ExportSpan[] = [];
    const middles: ExportSpan[] = [];
    const posts: ExportSpan[] = [];
    const pres2: ExportSpan[] = [];
    const middles2: ExportSpan[] = [];
    const posts2: ExportSpan[] = [];
    for (let k = 0; k < SESSIONS * 2; k++) {
      const i = k % SESSIONS;
      const second = k >= SESSIONS;
      const sid = `lb-session-${i}`;
      const kind = ['preserved', 'approved_change', 'conflicting'][(i + (second ? 1 : 0)) % 3]!;
      const boundary = {
        boundaryId: `${sid}-b${second ? 2 : 1}`,
        runtime: 'claude-code',
        trigger: 'auto' as const,
      };
      expected.set(`${sid} ${boundary.boundaryId}`, kind);
      const [preRound, middleRound, postRound] = second ? [pres2, middles2, posts2] : [pres, middles, posts];
      preRound.push(
        compactionSpan('pre', snapshot(sid, '2026-11-30T10:00:00Z', A), boundary, { startNs: 1n, endNs: 2n }),
      );
      if (kind === 'approved_change') {
        middleRound.push(
          approvalSpan(
            sid,
            // Signed by the test approver every startServe trusts by default.
            SERVICE_TEST_APPROVER.sign(
              {
                decision: 'scope',
                fromDigest: A,
                toDigest: B,
                approvalRef: `CHG-${i}`,
                approvedBy: 'alice',
                approvedAt: '2026-11-30T10:01:00Z',
              },
              sid,
              boundary.boundaryId,
            ),
            k + 1,
            boundary.boundaryId,
          ),
        );
      }
      postRound.push(
        compactionSpan(
          'post',
          snapshot(sid, '2026-11-30T10:02:00Z', kind === 'preserved' ? A : B),
          boundary,
          {
            startNs: 3n,
            endNs: 4n,
          },
        ),
      );
    }
    // Sessions traced by the SDK extension, each boundary's pre and post recorded in different
    // agent turns (different agent traces), as an agent's compaction ends one turn and the next
    // turn observes: the post goes under the pre, so the boundary's trace keeps them on one instance.
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const continuity = createContinuity({ tracer: provider.getTracer('continuity'), runtime: 'sdk' });
      const agent = provider.getTracer('agent');
      const inTurn = async (name: string, f: () => Promise<unknown>) => {
        const turn = agent.startSpan(name);
        await context.with(trace.setSpan(context.active(), turn), f);
        turn.end();
      };
      for (let i = 0; i < SESSIONS / 2; i++) {
        const sid = `sdk-session-${i}`;
        const preserved = i % 2 === 0;
        let boundaryId = '';
        await inTurn(`turn-${i}-1`, async () => {
          boundaryId = (await continuity.capturePre(sid, three('a'), { trigger: 'auto' })).boundaryId;
        });
        expected.set(`${sid} ${boundaryId}`, preserved ? 'preserved' : 'conflicting');
        await inTurn(`turn-${i}-2`, () => continuity.observePost(sid, three(preserved ? 'a' : 'b')));
      }
    } finally {
      context.disable();
    }
    const finished = exporter.getFinishedSpans();
    const sdkPres = finished.filter((sp) => sp.name === SPAN_COMPACTION_PRE);
    const sdkPosts = finished.filter((sp) => sp.name === SPAN_COMPACTION_POST);
    // The pre and post of a boundary sit in different agent turns (the pre under the first, the
    // post linked to the second): one trace.
    expect(sdkPres[0]!.parentSpanContext!.traceId).not.toBe(sdkPosts[0]!.links[0]!.context.traceId);
    expect(sdkPosts[0]!.spanContext().traceId).toBe(sdkPres[0]!.spanContext().traceId);
    const sdkRequest = (spans: ReadableSpan[]): OtlpTraceRequest =>
      decodeTraceRequest(ProtobufTraceSerializer.serializeRequest(spans)!, 'protobuf');
    // Agent spans of many traces around them, as a gateway sees them.
    const agentSpans = (n: number, seed: number): ExportSpan[] =>
      Array.from({ length: n }, (_, k) => ({
        name: `agent.step-${seed}-${k}`,
        ids: {
          traceId: (seed * 1000 + k + 1).toString(16).padStart(32, '0'),
          spanId: (seed * 1000 + k + 1).toString(16).padStart(16, '0'),
        },
        startNs: 1n,
        endNs: 2n,
        attributes: {},
      }));
    const shuffle = <T>(xs: T[], seed: number): T[] => {
      let s = seed;
      const out = [...xs];
      for (let i = out.length - 1; i > 0; i--) {
        s = (s * 1103515245 + 12345) & 0x7fffffff;
        const j = s % (i + 1);
        [out[i], out[j]] = [out[j]!, out[i]!];
      }
      return out;
    };
    // Three rounds, each a few batches mixing sessions and agent spans: pres, then approvals, then posts.
    const batches: OtlpTraceRequest[] = [];
    [pres, middles, posts, pres2, middles2, posts2].forEach((round, r) => {
      const mixed = shuffle([...round, ...agentSpans(40, r + 1)], r + 7);
      for (let k = 0; k < mixed.length; k += 25)
        batches.push(buildTraceRequest(mixed.slice(k, k + 25), 'agents'));
      if (r === 0) batches.push(sdkRequest(sdkPres));
      if (r === 2) batches.push(sdkRequest(sdkPosts));
    });

    const endpoints = serves.map((s) => s.otlp);
    const ring = new HashRing(endpoints);
    const received = new Map<string, Set<string>>();
    for (const batch of batches) {
      for (const [endpoint, traces] of partitionByTraceId(batch, ring)) {
        for (const t of traces) {
          for (const s of t.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans))) {
            const sid = s.attributes.find((a) => a.key === ATTR_SESSION_ID)?.value?.stringValue;
            if (sid) (received.get(sid) ?? received.set(sid, new Set()).get(sid)!).add(endpoint);
          }
          const answer = await post(endpoint, Buffer.from(encodeTraceRequest(t, 'protobuf')), {
            'content-type': 'application/x-protobuf',
          });
          expect(answer.status).toBe(200);
        }
      }
    }
    // The boundaries are spread over every instance, and one session's two boundaries often over
    // two: a boundary, not a session, is what stays together.
    expect(new Set([...received.values()].flatMap((w) => [...w])).size).toBe(INSTANCES);
    expect([...received.values()].some((w) => w.size > 1)).toBe(true);

    const stateOf = (key: string) => {
      const [sid, boundaryId] = key.split(' ');
      return downstream.spans.find(
        (s) =>
          s.span.name === SPAN_COMPACTION_POST &&
          s.attributes[ATTR_SESSION_ID] === sid &&
          s.attributes[ATTR_BOUNDARY_ID] === boundaryId &&
          s.attributes[ATTR_CONTINUITY_STATE],
      )?.attributes[ATTR_CONTINUITY_STATE];
    };
    await waitFor('every post span enriched', () =>
      [...expected.keys()].every((key) => stateOf(key) !== undefined),
    );
    const got = new Map([...expected.keys()].map((key) => [key, stateOf(key)]));
    expect(Object.fromEntries(got)).toEqual(Object.fromEntries(expected));
    expect(downstream.spans.filter((s) => s.span.name === SPAN_CONTINUITY_CHECK)).toEqual([]);
  });
});
