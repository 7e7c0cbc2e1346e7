/** Real OpenTelemetry SDK objects to feed the independent reference serializers. */
import { type Meter, ValueType } from '@opentelemetry/api';
import {
  AggregationType,
  InstrumentType,
  MeterProvider,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/** A metric reader that only collects on demand. */
export class ManualReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

/** Spans with every feature the codec has to carry: parents, events, links, status, arrays. */
export async function sampleSpans(): Promise<ReadableSpan[]> {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('codec-test', '1.2.3');
  const root = tracer.startSpan('root', {
    kind: 2,
    attributes: { 'session.id': 's-1', count: 7, ratio: 0.25, ok: true, names: ['a', 'b'], big: 2 ** 53 },
  });
  const linked = tracer.startSpan('linked');
  linked.end();
  root.addEvent('checkpoint', { step: 3 });
  root.setStatus({ code: 2, message: 'failed on purpose' });
  const { trace, context } = await import('@opentelemetry/api');
  const child = tracer.startSpan(
    'child',
    { links: [{ context: linked.spanContext(), attributes: { why: 'compaction' } }] },
    trace.setSpan(context.active(), root),
  );
  child.end();
  root.end();
  await provider.forceFlush();
  return exporter.getFinishedSpans();
}

/** Every instrument kind, collected once. */
export async function sampleMetrics(): Promise<ResourceMetrics> {
  const reader = new ManualReader();
  const provider = new MeterProvider({
    readers: [reader],
    views: [
      {
        instrumentName: 'exp.hist',
        instrumentType: InstrumentType.HISTOGRAM,
        aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM },
      },
    ],
  });
  const meter: Meter = provider.getMeter('codec-test', '1.2.3');
  meter
    .createCounter('c.int', { valueType: ValueType.INT, unit: '{x}', description: 'ints' })
    .add(5, { k: 'v' });
  meter.createCounter('c.double').add(1.5);
  meter.createUpDownCounter('udc').add(-3);
  const h = meter.createHistogram('h', { unit: 's', advice: { explicitBucketBoundaries: [0.1, 1, 10] } });
  h.record(0.5, { state: 'preserved' });
  h.record(20);
  const e = meter.createHistogram('exp.hist');
  e.record(3);
  e.record(0.001);
  const g = meter.createGauge('g', { valueType: ValueType.INT });
  g.record(42, { a: true });
  const { resourceMetrics } = await reader.collect();
  await provider.shutdown();
  return resourceMetrics;
}

/** A seeded PRNG (mulberry32), so corrupted-input tests are reproducible. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
