// @ts-check
// Shared by the span benchmarks: the same tracing pipeline (a batch processor in front of an
// exporter that only counts), so "with the processor" and "without it" differ in nothing else.
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

let exported = 0;

/** Spans the null exporter received; read it so the work cannot be optimized away. */
export function exportedSpans() {
  return exported;
}

/** @type {import('@opentelemetry/sdk-trace-base').SpanExporter} */
const nullExporter = {
  export(spans, done) {
    exported += spans.length;
    done({ code: 0 });
  },
  shutdown: () => Promise.resolve(),
  forceFlush: () => Promise.resolve(),
};

/**
 * A tracer provider whose processors are `first`, then a batch processor to the null exporter.
 * @param {import('@opentelemetry/sdk-trace-base').SpanProcessor[]} first
 */
export function pipeline(first) {
  const batch = new BatchSpanProcessor(nullExporter, {
    maxQueueSize: 8192,
    maxExportBatchSize: 512,
    scheduledDelayMillis: 100,
  });
  const provider = new BasicTracerProvider({ spanProcessors: [...first, batch] });
  return { tracer: provider.getTracer('bench-agent'), provider };
}
