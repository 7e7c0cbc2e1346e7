import { type Attributes, trace } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { approvalAttributes, snapshotAttributes } from '../../src/otel/attributes.js';
import { ContinuityProcessor } from '../../src/otel/processor.js';
import {
  ATTR_CONTINUITY_STATE,
  METRIC_ATTR_STATE,
  METRIC_BOUNDARIES,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_CONTINUITY_CHECK,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import { sixCases, snap } from '../correlate/helpers.js';
import { sumBy } from './harness.js';

describe('ContinuityProcessor in a NodeSDK', () => {
  it('works when built before sdk.start(), beside a batch processor, with the global providers', async () => {
    const clock = { now: 1_800_000_000_000 };
    // Built before the SDK exists: no meter or tracer provider is looked up yet.
    const processor = new ContinuityProcessor({ clock: () => clock.now });
    const spanExporter = new InMemorySpanExporter();
    const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({
      exporter: metricExporter,
      exportIntervalMillis: 3_600_000,
    });
    const batch = new BatchSpanProcessor(spanExporter);
    const sdk = new NodeSDK({
      serviceName: 'continuity-test',
      // The continuity processor goes first, so the check spans it emits reach the batch processor.
      spanProcessors: [processor, batch],
      metricReaders: [reader],
      instrumentations: [],
    });
    sdk.start();
    try {
      const tracer = trace.getTracer('agent');
      const end = (name: string, attributes: Attributes) => tracer.startSpan(name, { attributes }).end();
      for (const c of sixCases()) {
        end(
          SPAN_COMPACTION_PRE,
          snapshotAttributes('pre', { ...c.pre!, sessionId: c.id }, { runtime: 'sdk' }),
        );
        for (const a of c.approvals) end(SPAN_DECISION_APPROVAL, approvalAttributes(c.id, a));
        end(
          SPAN_COMPACTION_POST,
          snapshotAttributes('post', { ...c.post!, sessionId: c.id }, { runtime: 'sdk' }),
        );
      }
      // One boundary that never gets its post: it resolves through a check span.
      end(
        SPAN_COMPACTION_PRE,
        snapshotAttributes('pre', snap('lonely', '2026-11-30T10:00:00Z'), { runtime: 'sdk' }),
      );
      clock.now += 120_000;
      await processor.forceFlush();
      await batch.forceFlush();

      const spans = spanExporter.getFinishedSpans();
      const posted = spans
        .filter((s) => s.name === SPAN_COMPACTION_POST)
        .map((s) => s.attributes[ATTR_CONTINUITY_STATE]);
      expect(posted).toEqual([
        'preserved',
        'preserved',
        'approved_change',
        'dropped',
        'conflicting',
        'unverified',
      ]);
      const checks = spans.filter((s) => s.name === SPAN_CONTINUITY_CHECK);
      expect(checks.map((s) => s.attributes[ATTR_CONTINUITY_STATE])).toEqual(['unverified']);

      await reader.forceFlush();
      const points =
        metricExporter
          .getMetrics()
          .at(-1)
          ?.scopeMetrics.flatMap((s) => s.metrics)
          .find((m) => m.descriptor.name === METRIC_BOUNDARIES)?.dataPoints ?? [];
      expect(sumBy(points, METRIC_ATTR_STATE)).toEqual({
        preserved: 2,
        approved_change: 1,
        dropped: 1,
        conflicting: 1,
        unverified: 2,
      });
    } finally {
      await sdk.shutdown();
    }
  });
});
