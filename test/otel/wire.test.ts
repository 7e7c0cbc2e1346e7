/**
 * End to end over the wire: the real OpenTelemetry OTLP/HTTP exporters (JSON and protobuf) send the
 * six cases, replayed through the SDK extension and the ContinuityProcessor, to a receiver started
 * here on 127.0.0.1, which decodes them with this project's OTLP codec. Every assertion reads what
 * arrived: the state attributes on the post spans, the post → pre span links, the metric points.
 */
import { readFileSync } from 'node:fs';
import { OTLPMetricExporter as OTLPMetricExporterJson } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as OTLPMetricExporterProto } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as OTLPTraceExporterJson } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPTraceExporterProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadReplayFixture, replayCases } from '../../src/demo/replay.js';
import { createContinuity } from '../../src/otel/extension.js';
import { ContinuityProcessor } from '../../src/otel/processor.js';
import {
  ATTR_BOUNDARY_ID,
  ATTR_CONTINUITY_ACTION,
  ATTR_CONTINUITY_PRIMARY_DECISION,
  ATTR_CONTINUITY_REASON,
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  decisionAttr,
  METRIC_ATTR_STATE,
  METRIC_BOUNDARIES,
  METRIC_REOBSERVATION_DURATION,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import { attributesToRecord, type OtlpMetric, type OtlpSpan } from '../../src/otlp/index.js';
import {
  type OtlpReceiver as Receiver,
  startOtlpReceiver as startReceiver,
} from '../support/otlp-receiver.js';

const casesPath = new URL('../../examples/six-case/cases.json', import.meta.url);
const cases = loadReplayFixture(JSON.parse(readFileSync(casesPath, 'utf8')), 'examples/six-case/cases.json');

const EXPECTED: Record<string, { state: string; decision: string }> = {
  'case-1-preserved': { state: 'preserved', decision: 'approval_boundary' },
  'case-2-preserved': { state: 'preserved', decision: 'approval_boundary' },
  'case-3-approved-test-change': { state: 'approved_change', decision: 'acceptance_test' },
  'case-4-dropped-approval-boundary': { state: 'dropped', decision: 'approval_boundary' },
  'case-5-conflicting-scope': { state: 'conflicting', decision: 'scope' },
  'case-6-stale-test-digest': { state: 'unverified', decision: 'acceptance_test' },
};

const VARIANTS = [
  {
    protocol: 'http/json',
    contentType: 'application/json',
    traces: (url: string) => new OTLPTraceExporterJson({ url }),
    metrics: (url: string) => new OTLPMetricExporterJson({ url }),
  },
  {
    protocol: 'http/protobuf',
    contentType: 'application/x-protobuf',
    traces: (url: string) => new OTLPTraceExporterProto({ url }),
    metrics: (url: string) => new OTLPMetricExporterProto({ url }),
  },
] as const;

function metricsNamed(receiver: Receiver, name: string): OtlpMetric[] {
  return receiver.metrics.flatMap((m) =>
    m.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics.filter((x) => x.name === name))),
  );
}

function bySession(spans: OtlpSpan[], name: string): Map<string, OtlpSpan> {
  const out = new Map<string, OtlpSpan>();
  for (const s of spans) {
    if (s.name === name) out.set(String(attributesToRecord(s.attributes)[ATTR_SESSION_ID]), s);
  }
  return out;
}

describe.each(VARIANTS)('six cases over OTLP $protocol', (variant) => {
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    const meterProvider = new MeterProvider({
      readers: [
        new PeriodicExportingMetricReader({
          exporter: variant.metrics(`${receiver.endpoint}/v1/metrics`),
          exportIntervalMillis: 60_000,
        }),
      ],
    });
    const processor = new ContinuityProcessor({ meterProvider });
    const tracerProvider = new BasicTracerProvider({
      spanProcessors: [processor, new BatchSpanProcessor(variant.traces(`${receiver.endpoint}/v1/traces`))],
    });
    processor.setTracerProvider(tracerProvider);
    const continuity = createContinuity({ tracer: tracerProvider.getTracer('wire-test'), runtime: 'sdk' });
    await replayCases(continuity, cases);
    await tracerProvider.shutdown(); // flushes the batch processor: every span is sent
    await meterProvider.shutdown(); // exports the final collection
  });

  afterAll(async () => {
    await receiver.close();
  });

  it('receives every request in the variant content type and decodes all of them', () => {
    expect(receiver.errors).toEqual([]);
    expect(receiver.requests.some((r) => r.path === '/v1/traces')).toBe(true);
    expect(receiver.requests.some((r) => r.path === '/v1/metrics')).toBe(true);
    for (const r of receiver.requests) expect(r.contentType).toContain(variant.contentType);
  });

  it('carries the continuity state the processor wrote on each post span', () => {
    const posts = bySession(
      receiver.spans.map((s) => s.span),
      SPAN_COMPACTION_POST,
    );
    expect([...posts.keys()].sort()).toEqual(Object.keys(EXPECTED).sort());
    for (const [session, expected] of Object.entries(EXPECTED)) {
      const attrs = attributesToRecord(posts.get(session)!.attributes);
      expect(attrs[ATTR_CONTINUITY_STATE]).toBe(expected.state);
      expect(attrs[ATTR_CONTINUITY_PRIMARY_DECISION]).toBe(expected.decision);
      expect(typeof attrs[ATTR_CONTINUITY_REASON]).toBe('string');
      expect(typeof attrs[ATTR_CONTINUITY_ACTION]).toBe('string');
    }
    const dropped = attributesToRecord(posts.get('case-4-dropped-approval-boundary')!.attributes);
    expect(dropped[decisionAttr('approval_boundary', 'verdict')]).toBe('dropped');
  });

  it('links each post span to its pre span', () => {
    const spans = receiver.spans.map((s) => s.span);
    const pres = bySession(spans, SPAN_COMPACTION_PRE);
    const posts = bySession(spans, SPAN_COMPACTION_POST);
    for (const session of Object.keys(EXPECTED)) {
      const pre = pres.get(session)!;
      const post = posts.get(session)!;
      expect(post.links.map((l) => `${l.traceId}/${l.spanId}`)).toContain(`${pre.traceId}/${pre.spanId}`);
      expect(attributesToRecord(post.attributes)[ATTR_BOUNDARY_ID]).toBe(
        attributesToRecord(pre.attributes)[ATTR_BOUNDARY_ID],
      );
    }
  });

  it('never carries a raw decision value', () => {
    const text = JSON.stringify(receiver.traces);
    expect(text).not.toContain('acme/payments');
    expect(text).not.toContain('npm test');
  });

  it('exports the boundaries counter with the six states', () => {
    const counts: Record<string, number> = {};
    for (const metric of metricsNamed(receiver, METRIC_BOUNDARIES)) {
      expect(metric.sum?.isMonotonic).toBe(true);
      for (const point of metric.sum!.dataPoints) {
        const state = String(attributesToRecord(point.attributes)[METRIC_ATTR_STATE]);
        counts[state] = (counts[state] ?? 0) + Number(point.asInt ?? point.asDouble);
      }
    }
    expect(counts).toEqual({ preserved: 2, approved_change: 1, dropped: 1, conflicting: 1, unverified: 1 });
  });

  it("exports the reobservation histogram: six boundaries, the fixture's pre → post times", () => {
    const expectedSeconds = cases.reduce(
      (n, c) => n + (Date.parse(c.post!.capturedAt) - Date.parse(c.pre!.capturedAt)) / 1000,
      0,
    );
    const [histogram] = metricsNamed(receiver, METRIC_REOBSERVATION_DURATION);
    expect(histogram?.unit).toBe('s');
    const points = histogram!.histogram!.dataPoints;
    expect(points.reduce((n, p) => n + Number(p.count), 0)).toBe(6);
    expect(points.reduce((n, p) => n + (p.sum ?? 0), 0)).toBeCloseTo(expectedSeconds, 3);
  });
});
