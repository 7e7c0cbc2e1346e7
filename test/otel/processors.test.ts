/**
 * `continuityProcessors({ exporter })` and the warning of a processor left alone, on the SDK this
 * repository pins (the compatibility suite runs the same on every OpenTelemetry line and Node).
 */
import { type DiagLogger, DiagLogLevel, diag } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { ALONE_WARNING, ContinuityProcessor } from '../../src/otel/processor.js';
import { continuityProcessors } from '../../src/otel/processors.js';

function recordDiag(): string[] {
  const warnings: string[] = [];
  const ignore = () => {};
  const logger: DiagLogger = {
    warn: (m) => warnings.push(m),
    error: ignore,
    info: ignore,
    debug: ignore,
    verbose: ignore,
  };
  diag.setLogger(logger, DiagLogLevel.WARN);
  return warnings;
}

afterEach(() => diag.disable());

describe('continuityProcessors', () => {
  it("returns the continuity processor, then the SDK's batch processor around the exporter, which exports", async () => {
    const exporter = new InMemorySpanExporter();
    const processors = continuityProcessors({ exporter, batch: { scheduledDelayMillis: 10 } });
    expect(processors).toHaveLength(2);
    expect(processors[0]).toBeInstanceOf(ContinuityProcessor);
    expect(processors[1]!.constructor.name).toBe('BatchSpanProcessor');
    const warnings = recordDiag();
    const provider = new BasicTracerProvider({ spanProcessors: processors });
    provider.getTracer('t').startSpan('agent.turn').end();
    await provider.forceFlush();
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['agent.turn']);
    expect(warnings).toEqual([]);
    await provider.shutdown();
  });

  it('refuses a call without an exporter, at set-up, saying what to pass', () => {
    expect(() => continuityProcessors({} as never)).toThrow(/expected \{ exporter \}/);
    expect(() => continuityProcessors(undefined as never)).toThrow(TypeError);
  });
});

describe('a ContinuityProcessor alone in its provider', () => {
  it('says once, with diag.warn, that no span is exported, and how to fix it', async () => {
    const warnings = recordDiag();
    const provider = new BasicTracerProvider({ spanProcessors: [new ContinuityProcessor()] });
    const tracer = provider.getTracer('t');
    expect(warnings).toEqual([]);
    tracer.startSpan('a').end();
    tracer.startSpan('b').end();
    expect(warnings).toEqual([ALONE_WARNING]);
    expect(ALONE_WARNING).toContain('continuityProcessors({ exporter })');
    await provider.shutdown();
  });

  it('says nothing beside an exporting processor', async () => {
    const warnings = recordDiag();
    const provider = new BasicTracerProvider({
      spanProcessors: [new ContinuityProcessor(), new SimpleSpanProcessor(new InMemorySpanExporter())],
    });
    provider.getTracer('t').startSpan('a').end();
    expect(warnings).toEqual([]);
    await provider.shutdown();
  });
});
