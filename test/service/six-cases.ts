/**
 * The six cases of examples/six-case/cases.json as real OpenTelemetry JS spans: per case a root
 * `agent.run` span, and under it `continuity.compaction.pre`, the approvals, `continuity.compaction.post`,
 * with attributes from the project's attribute codec (digests only). Exported by whatever
 * exporter the test gives (the OTLP/HTTP protobuf or JSON exporter).
 */
import { readFileSync } from 'node:fs';
import { context, trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { classifyFixture, type FixtureBoundary, parseFixture } from '../../src/fixture/cases.js';
import { approvalAttributes, snapshotAttributes } from '../../src/otel/attributes.js';
import { SPAN_COMPACTION_POST, SPAN_COMPACTION_PRE, SPAN_DECISION_APPROVAL } from '../../src/otel/semconv.js';
import { SERVICE_TEST_APPROVER } from '../support/approver.js';

const CASES_FILE = new URL('../../examples/six-case/cases.json', import.meta.url);

/** The six boundaries, digested. */
export function loadSixCases(): FixtureBoundary[] {
  return parseFixture(JSON.parse(readFileSync(CASES_FILE, 'utf8')), 'examples/six-case/cases.json');
}

/** The state the core classifier gives each case (what the service must agree with). */
export function expectedStates(): Map<string, string> {
  return new Map(classifyFixture(loadSixCases()).map((r) => [r.id, r.classification.state]));
}

/** What was sent for one case. */
export interface SentCase {
  caseId: string;
  sessionId: string;
  boundaryId: string;
}

/** Which sides of each boundary to send: the pre span and approvals, the post span, or both. */
export interface SendPhases {
  pre: boolean;
  post: boolean;
}

/**
 * Emits the six cases through a tracer provider whose only processor batches into `exporter`,
 * flushes and shuts it down. Session ids are `<prefix>-<case id>`.
 */
export async function sendSixCases(
  exporter: SpanExporter,
  prefix: string,
  phases: SendPhases = { pre: true, post: true },
): Promise<SentCase[]> {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'six-case-agent' }),
    spanProcessors: [new BatchSpanProcessor(exporter, { maxExportBatchSize: 512, scheduledDelayMillis: 50 })],
  });
  const tracer = provider.getTracer('six-case-test');
  const sent: SentCase[] = [];
  for (const b of loadSixCases()) {
    const sessionId = `${prefix}-${b.id}`;
    const boundaryId = `${sessionId}-b1`;
    const boundary = { boundaryId, runtime: 'sdk', trigger: 'auto' as const };
    const root = tracer.startSpan('agent.run', { attributes: { 'session.id': sessionId } });
    const ctx = trace.setSpan(context.active(), root);
    if (b.pre && phases.pre) {
      tracer
        .startSpan(
          SPAN_COMPACTION_PRE,
          { attributes: snapshotAttributes('pre', { ...b.pre, sessionId }, boundary) },
          ctx,
        )
        .end();
    }
    for (const a of phases.pre ? b.approvals : []) {
      // Signed by the approver `startServe` configures, as a human's approval is.
      const signed = SERVICE_TEST_APPROVER.sign(a, sessionId, boundaryId);
      tracer
        .startSpan(SPAN_DECISION_APPROVAL, { attributes: approvalAttributes(sessionId, signed) }, ctx)
        .end();
    }
    if (b.post && phases.post) {
      const postBoundary = b.compactedAt ? { ...boundary, compactedAt: b.compactedAt } : boundary;
      tracer
        .startSpan(
          SPAN_COMPACTION_POST,
          { attributes: snapshotAttributes('post', { ...b.post, sessionId }, postBoundary) },
          ctx,
        )
        .end();
    }
    root.end();
    sent.push({ caseId: b.id, sessionId, boundaryId });
  }
  await provider.forceFlush();
  await provider.shutdown();
  return sent;
}
