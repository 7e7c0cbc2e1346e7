/**
 * A real tracing + metrics pipeline around a ContinuityProcessor: BasicTracerProvider with the
 * processor before a SimpleSpanProcessor/InMemorySpanExporter, and a MeterProvider whose
 * PeriodicExportingMetricReader exports into an InMemoryMetricExporter when flushed.
 */
import type { Attributes, Context, Span } from '@opentelemetry/api';
import {
  AggregationTemporality,
  type DataPoint,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { ContinuityProcessor } from '../../src/otel/processor.js';
import type { ContinuityProcessorOptions } from '../../src/otel/processor-types.js';

export interface Harness {
  processor: ContinuityProcessor;
  provider: BasicTracerProvider;
  exporter: InMemorySpanExporter;
  meterProvider: MeterProvider;
  /** Starts and ends a span with these attributes; returns it (ended). */
  emit(name: string, attributes: Attributes, parent?: Context): Span & ReadableSpan;
  /** Finished spans with this name. */
  spans(name: string): ReadableSpan[];
  /** The data points of one metric after a collection (cumulative). */
  points(metric: string): Promise<Array<DataPoint<unknown>>>;
  /** The clock the processor reads; advance it with `clock.now += ms`. */
  clock: { now: number };
  close(): Promise<void>;
}

export function harness(
  options: ContinuityProcessorOptions = {},
  {
    meter = true,
    tracer = true,
    withoutOnEnding = false,
  }: {
    meter?: boolean;
    tracer?: boolean;
    /** Registers the processor as an SDK before sdk-trace-base 2.3 sees it: no `onEnding`. */
    withoutOnEnding?: boolean;
  } = {},
): Harness {
  const clock = { now: 1_800_000_000_000 };
  const exporter = new InMemorySpanExporter();
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({
    exporter: metricExporter,
    exportIntervalMillis: 3_600_000,
  });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const processor = new ContinuityProcessor({
    ...(meter && { meterProvider }),
    clock: () => clock.now,
    ...options,
  });
  // The SDK calls `onEnding` only on processors that have it (MultiSpanProcessor checks each).
  const registered: SpanProcessor = withoutOnEnding
    ? {
        onStart: (span, ctx) => processor.onStart(span, ctx),
        onEnd: (span) => processor.onEnd(span),
        forceFlush: () => processor.forceFlush(),
        shutdown: () => processor.shutdown(),
      }
    : processor;
  const provider = new BasicTracerProvider({
    spanProcessors: [registered, new SimpleSpanProcessor(exporter)],
  });
  if (tracer) processor.setTracerProvider(provider);
  const agentTracer = provider.getTracer('test-agent');
  return {
    processor,
    provider,
    exporter,
    meterProvider,
    clock,
    emit(name, attributes, parent) {
      const span = agentTracer.startSpan(name, { attributes }, parent);
      span.end();
      return span as unknown as Span & ReadableSpan;
    },
    spans(name) {
      return exporter.getFinishedSpans().filter((s) => s.name === name);
    },
    async points(metric) {
      metricExporter.reset();
      await reader.forceFlush();
      const last = metricExporter.getMetrics().at(-1);
      for (const scope of last?.scopeMetrics ?? []) {
        for (const m of scope.metrics)
          if (m.descriptor.name === metric) return m.dataPoints as Array<DataPoint<unknown>>;
      }
      return [];
    },
    async close() {
      await provider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

/** Sums counter points by one attribute. */
export function sumBy(points: Array<DataPoint<unknown>>, key: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of points) {
    const k = String(p.attributes[key]);
    out[k] = (out[k] ?? 0) + (p.value as number);
  }
  return out;
}
