/**
 * Test support: the six cases of examples/six-case/cases.json as one OTLP/JSON trace export
 * request, the way an instrumented agent sends them: per case an activity span, the
 * `continuity.compaction.pre` span, the approval spans, the `continuity.compaction.post` span (attributes
 * from the project's attribute codec, digests only), plus two ordinary agent spans (one failing)
 * so span latency has something to show. Each call ("wave") uses new session and boundary ids.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Attributes } from '@opentelemetry/api';
import type { ActivityState, Snapshot } from '../../src/decision/model.js';
import { type FixtureBoundary, parseFixture } from '../../src/fixture/cases.js';
import {
  activityAttributes,
  approvalAttributes,
  evidenceMissingAttributes,
  snapshotAttributes,
} from '../../src/otel/attributes.js';
import {
  ATTR_RUNTIME,
  SPAN_ACTIVITY,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import { recordToAttributes } from '../../src/otlp/index.js';
import { SERVICE_TEST_APPROVER } from '../support/approver.js';

const CASES_FILE = new URL('../../examples/six-case/cases.json', import.meta.url);

/** The service.name of the simulated agent (the spanmetrics `service_name`). */
export const AGENT_SERVICE_NAME = 'six-case-agent';

/** Runtime and activity per case index: two runtimes and mixed activity, so no panel is flat. */
const RUNTIMES = ['claude-code', 'codex-cli'] as const;
const ACTIVITIES: readonly ActivityState[] = [
  'working',
  'idle',
  'waiting_human',
  'working',
  'working',
  'working',
];

export function loadSixCases(): FixtureBoundary[] {
  return parseFixture(JSON.parse(readFileSync(CASES_FILE, 'utf8')), 'examples/six-case/cases.json');
}

/** Where each case of a wave went: session, boundary, runtime. */
export interface SentCase {
  caseId: string;
  sessionId: string;
  boundaryId: string;
  runtime: string;
}

interface SpanInput {
  name: string;
  attributes: Attributes;
  durationMs: number;
  error?: boolean;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** An OTLP/JSON ExportTraceServiceRequest for `spans`, one resource (the agent), one trace. */
export function otlpJsonRequest(spans: SpanInput[], serviceName = AGENT_SERVICE_NAME): string {
  const traceId = hex(16);
  let t = BigInt(Date.now()) * 1_000_000n;
  const out = spans.map((s) => {
    const start = t;
    const end = start + BigInt(Math.round(s.durationMs * 1e6));
    t = end + 1_000_000n;
    return {
      traceId,
      spanId: hex(8),
      name: s.name,
      kind: 1,
      startTimeUnixNano: start.toString(),
      endTimeUnixNano: end.toString(),
      attributes: recordToAttributes(s.attributes),
      status: s.error ? { code: 2, message: 'tool failed' } : { code: 0 },
    };
  });
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: recordToAttributes({ 'service.name': serviceName }) },
        scopeSpans: [{ scope: { name: 'six-case-test' }, spans: out }],
      },
    ],
  });
}

/** One wave of the six cases: the request body and where each case went. */
export function sixCaseWave(wave: number, cases = loadSixCases()): { body: string; sent: SentCase[] } {
  const spans: SpanInput[] = [];
  const sent: SentCase[] = [];
  cases.forEach((c, i) => {
    const sessionId = `w${wave}-${c.id}`;
    const boundaryId = `w${wave}-b${i + 1}`;
    const runtime = RUNTIMES[i % RUNTIMES.length]!;
    const boundary = { boundaryId, runtime, trigger: 'auto' as const };
    const withSession = (s: Snapshot): Snapshot => ({ ...s, sessionId });
    sent.push({ caseId: c.id, sessionId, boundaryId, runtime });
    spans.push({
      name: SPAN_ACTIVITY,
      attributes: activityAttributes(sessionId, ACTIVITIES[i]!),
      durationMs: 1,
    });
    spans.push({
      name: SPAN_COMPACTION_PRE,
      attributes: c.pre
        ? snapshotAttributes('pre', withSession(c.pre), boundary)
        : evidenceMissingAttributes('pre', sessionId, 'capture_failed', boundary),
      durationMs: 3,
    });
    for (const a of c.approvals) {
      spans.push({
        name: SPAN_DECISION_APPROVAL,
        // Signed by the approver `startServe` trusts, as a human's approval is.
        attributes: approvalAttributes(sessionId, SERVICE_TEST_APPROVER.sign(a, sessionId, boundaryId)),
        durationMs: 1,
      });
    }
    spans.push({
      name: SPAN_COMPACTION_POST,
      attributes: c.post
        ? snapshotAttributes('post', withSession(c.post), {
            ...boundary,
            ...(c.compactedAt !== undefined && { compactedAt: c.compactedAt }),
          })
        : evidenceMissingAttributes('post', sessionId, 'capture_failed', boundary),
      durationMs: 4,
    });
  });
  // Ordinary agent work, so span latency and errors have data: a model call and a failing tool.
  spans.push({ name: 'chat', attributes: { 'gen_ai.operation.name': 'chat' }, durationMs: 850 });
  spans.push({
    name: 'execute_tool',
    attributes: { 'gen_ai.operation.name': 'execute_tool' },
    durationMs: 45,
    error: true,
  });
  return { body: otlpJsonRequest(spans), sent };
}

/** Pre spans with no post: each waits for its post window, or is evicted at the pending limit. */
export function lonePreSpans(sessionIds: string[], runtime: string, cases = loadSixCases()): string {
  const pre = cases[0]!.pre!;
  return otlpJsonRequest(
    sessionIds.map((sessionId, i) => ({
      name: SPAN_COMPACTION_PRE,
      attributes: snapshotAttributes(
        'pre',
        { ...pre, sessionId },
        {
          boundaryId: `lone-${i + 1}`,
          runtime,
          trigger: 'manual',
        },
      ),
      durationMs: 2,
    })),
  );
}

/** A compaction span without a session key: the service refuses it (partial success). */
export function spanWithoutSession(runtime: string): string {
  return otlpJsonRequest([
    { name: SPAN_COMPACTION_PRE, attributes: { [ATTR_RUNTIME]: runtime }, durationMs: 1 },
  ]);
}

/**
 * A human approves a sent `conflicting` case's change and the agent re-observes its decisions
 * afterwards: the approval span, then a fresh post span of the same boundary (captured and observed
 * at 10:07, after the approval at 10:06). The service resolves the boundary again, as
 * `approved_change`.
 */
export function approveAndReobserve(sentCase: SentCase, cases = loadSixCases()): string {
  const c = cases.find((x) => x.id === sentCase.caseId);
  if (!c?.pre || !c.post) throw new Error(`${sentCase.caseId}: needs a pre and a post snapshot`);
  const decision = Object.keys(c.pre.decisions).find(
    (n) => c.post!.decisions[n] && c.post!.decisions[n].digest !== c.pre!.decisions[n]!.digest,
  );
  if (decision === undefined) throw new Error(`${sentCase.caseId}: no changed decision to approve`);
  const at = '2026-11-30T10:07:00Z';
  const post: Snapshot = {
    ...c.post,
    sessionId: sentCase.sessionId,
    capturedAt: at,
    decisions: Object.fromEntries(
      Object.entries(c.post.decisions).map(([n, d]) => [n, { ...d, observedAt: at }]),
    ),
  };
  const boundary = { boundaryId: sentCase.boundaryId, runtime: sentCase.runtime, trigger: 'auto' as const };
  return otlpJsonRequest([
    {
      name: SPAN_DECISION_APPROVAL,
      attributes: approvalAttributes(
        sentCase.sessionId,
        SERVICE_TEST_APPROVER.sign(
          {
            decision,
            fromDigest: c.pre.decisions[decision]!.digest,
            toDigest: c.post.decisions[decision]!.digest,
            approvalRef: 'CHG-7',
            approvedBy: 'reviewer-1',
            approvedAt: '2026-11-30T10:06:00Z',
          },
          sentCase.sessionId,
          sentCase.boundaryId,
        ),
      ),
      durationMs: 1,
    },
    { name: SPAN_COMPACTION_POST, attributes: snapshotAttributes('post', post, boundary), durationMs: 4 },
  ]);
}
