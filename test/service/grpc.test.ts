/**
 * OTLP/gRPC and the signals a Collector forwards. The real OpenTelemetry JS gRPC exporters
 * (traces, metrics, logs, 0.223) and the OTLP/HTTP ones (metrics protobuf, logs JSON) send through
 * `continuity serve` to a downstream: spans arrive with the continuity state on the post span,
 * metrics and logs arrive as they were sent (byte for byte), and over a gRPC downstream too; gzip
 * from the real exporter; a refused compaction span is a partial success. A full queue is
 * `RESOURCE_EXHAUSTED` with a RetryInfo, and `UNAVAILABLE` with one when the downstream is failing
 * too, as the OTLP specification asks.
 */
import { Client, credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { OTLPLogExporter as GrpcLogExporter } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPLogExporter as HttpJsonLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPMetricExporter as GrpcMetricExporter } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Reader, Writer } from 'protobufjs/light.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { snapshotAttributes } from '../../src/otel/attributes.js';
import { createContinuity } from '../../src/otel/extension.js';
import {
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  ATTR_TRIGGER,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import { encodeTraceRequest, recordToAttributes } from '../../src/otlp/index.js';
import { GRPC_PATHS, retryInfoMs } from '../../src/service/transport.js';
import { snap } from '../correlate/helpers.js';
import { type GrpcReceiver, startGrpcReceiver } from '../support/grpc-receiver.js';
import { LOGS_PATH } from '../support/otlp-receiver.js';
import { type Downstream, post, type ServeProcess, startDownstream, startServe, waitFor } from './harness.js';

const three = (scope: string) => ({
  scope: { value: scope },
  target: { value: 'main' },
  acceptance_test: { value: 'npm test' },
});

/** A raw unary call to the service's gRPC listener; resolves with the error (or null). */
async function call(address: string, path: string, body: Buffer): Promise<ServiceError | null> {
  return (await exchange(address, path, body)).err;
}

/** A raw unary call; resolves with the error (or null) and the response bytes. */
function exchange(
  address: string,
  path: string,
  body: Buffer,
): Promise<{ err: ServiceError | null; response?: Buffer }> {
  const client = new Client(address, credentials.createInsecure());
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      body,
      new Metadata(),
      (err, response) => {
        client.close();
        resolve(response === undefined ? { err } : { err, response });
      },
    );
  });
}

/** A request of `n` ordinary spans named `<prefix>-<i>`, ids from `seed + 1`. */
function ordinaryRequest(prefix: string, n: number, seed: number): Buffer {
  const spans = Array.from({ length: n }, (_, i) => ({
    traceId: (seed + i + 1).toString(16).padStart(32, '0'),
    spanId: (seed + i + 1).toString(16).padStart(16, '0'),
    name: `${prefix}-${i}`,
    kind: 1,
    startTimeUnixNano: '1',
    endTimeUnixNano: '2',
  }));
  return Buffer.from(encodeTraceRequest({ resourceSpans: [{ scopeSpans: [{ spans }] }] }, 'protobuf'));
}

/** The gRPC listener a serve logged at start. */
function grpcAddress(serve: ServeProcess): string {
  return JSON.parse(
    serve
      .stderr()
      .split('\n')
      .find((l) => l.includes('"continuity serve listening"'))!,
  ).grpc as string;
}

/** `partial_success { rejected_spans, error_message }` of an ExportTraceServiceResponse. */
function readPartialSuccess(response: Buffer): { rejected: number; message: string } | undefined {
  const outer = Reader.create(response);
  while (outer.pos < outer.len) {
    const tag = outer.uint32();
    if (tag !== 10) {
      outer.skipType(tag & 7);
      continue;
    }
    const inner = Reader.create(outer.bytes());
    const out = { rejected: 0, message: '' };
    while (inner.pos < inner.len) {
      const t = inner.uint32();
      if (t === 8) out.rejected = Number(inner.int64());
      else if (t === 18) out.message = inner.string();
      else inner.skipType(t & 7);
    }
    return out;
  }
  return undefined;
}

/** A protobuf message of one field nobody defines (field 99): passed through, it must arrive as is. */
const opaque = (text: string) =>
  Buffer.from(
    Writer.create()
      .uint32((99 << 3) | 2)
      .string(text)
      .finish(),
  );

function compactionRequest(sessionId: string, seed: number): Buffer {
  const span = (name: string, phase: 'pre' | 'post', n: number) => ({
    traceId: n.toString(16).padStart(32, '0'),
    spanId: n.toString(16).padStart(16, '0'),
    name,
    kind: 1,
    startTimeUnixNano: '1764500000000000000',
    endTimeUnixNano: '1764500000000000000',
    attributes: recordToAttributes(
      snapshotAttributes(
        phase,
        snap(sessionId, phase === 'pre' ? '2026-11-30T10:00:00Z' : '2026-11-30T10:05:00Z'),
        {
          boundaryId: `${sessionId}-b`,
        },
      ),
    ),
  });
  return Buffer.from(
    encodeTraceRequest(
      {
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [span(SPAN_COMPACTION_PRE, 'pre', seed), span(SPAN_COMPACTION_POST, 'post', seed + 1)],
              },
            ],
          },
        ],
      },
      'protobuf',
    ),
  );
}

describe('continuity serve over OTLP/gRPC, with an OTLP/HTTP downstream', () => {
  let downstream: Downstream;
  let serve: ServeProcess;
  let grpc: string;

  beforeAll(async () => {
    downstream = await startDownstream();
    serve = await startServe({ config: { downstream: { endpoint: `${downstream.base}/v1/traces` } } });
    grpc = grpcAddress(serve);
    expect(grpc).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  afterAll(async () => {
    await serve?.stop();
    await downstream?.close();
  });

  it('takes traces, metrics and logs from the real gRPC exporters and forwards them', async () => {
    const url = `http://${grpc}`;
    // Traces: an agent span with what an LLM span carries, and a boundary from the extension.
    const traceExporter = new GrpcTraceExporter({ url });
    const provider = new BasicTracerProvider({
      spanLimits: { attributeCountLimit: 2000, attributeValueLengthLimit: 100_000 },
      spanProcessors: [new SimpleSpanProcessor(traceExporter)],
    });
    const tracer = provider.getTracer('agent');
    const big = tracer.startSpan('chat model');
    for (let i = 0; i < 1500; i++) big.setAttribute(`k${i}`, i);
    big.setAttribute('gen_ai.input.messages', 'm'.repeat(20_000));
    big.end();
    const continuity = createContinuity({ tracer: provider.getTracer('continuity'), runtime: 'sdk' });
    await continuity.capturePre('grpc-session', three('a'), { trigger: 'auto' });
    // Exported (answered) before the post goes: the span processor exports each span in its own
    // unary call, and two calls in flight may reach the service in either order (a post first is
    // held and answered later with a check span, not enriched).
    await provider.forceFlush();
    await continuity.observePost('grpc-session', three('a'));
    await provider.forceFlush();
    // Metrics and logs over gRPC.
    const reader = new PeriodicExportingMetricReader({
      exporter: new GrpcMetricExporter({ url }),
      exportIntervalMillis: 3_600_000,
    });
    const meters = new MeterProvider({ readers: [reader] });
    meters.getMeter('m').createCounter('grpc.test.counter').add(3);
    await reader.forceFlush();
    const logs = new LoggerProvider({
      processors: [new SimpleLogRecordProcessor({ exporter: new GrpcLogExporter({ url }) })],
    });
    logs.getLogger('l').emit({ body: 'hello-from-grpc-logs', severityText: 'INFO' });
    await logs.forceFlush();

    await waitFor('the post span enriched', () =>
      downstream.spans.find(
        (s) => s.span.name === SPAN_COMPACTION_POST && s.attributes[ATTR_CONTINUITY_STATE] === 'preserved',
      ),
    );
    const chat = downstream.spans.find((s) => s.span.name === 'chat model')!;
    expect(chat.span.attributes).toHaveLength(1501);
    expect(String(chat.attributes['gen_ai.input.messages'])).toHaveLength(20_000);
    await waitFor('the metrics', () =>
      downstream.metrics.some((m) =>
        m.resourceMetrics.some((rm) =>
          rm.scopeMetrics.some((sm) => sm.metrics.some((x) => x.name === 'grpc.test.counter')),
        ),
      ),
    );
    await waitFor('the logs', () =>
      downstream.raw.some((r) => r.path === LOGS_PATH && r.body.includes('hello-from-grpc-logs')),
    );
    await Promise.all([provider.shutdown(), meters.shutdown(), logs.shutdown()]);
  });

  it('takes metrics and logs from the real OTLP/HTTP exporters (protobuf and JSON)', async () => {
    const reader = new PeriodicExportingMetricReader({
      exporter: new ProtoMetricExporter({ url: `${serve.base}/v1/metrics` }),
      exportIntervalMillis: 3_600_000,
    });
    const meters = new MeterProvider({ readers: [reader] });
    meters.getMeter('m').createCounter('http.test.counter').add(1);
    await reader.forceFlush();
    const logs = new LoggerProvider({
      processors: [
        new SimpleLogRecordProcessor({ exporter: new HttpJsonLogExporter({ url: `${serve.base}/v1/logs` }) }),
      ],
    });
    logs.getLogger('l').emit({ body: 'hello-from-http-logs' });
    await logs.forceFlush();
    await waitFor('the metrics', () =>
      downstream.metrics.some((m) =>
        m.resourceMetrics.some((rm) =>
          rm.scopeMetrics.some((sm) => sm.metrics.some((x) => x.name === 'http.test.counter')),
        ),
      ),
    );
    const log = await waitFor('the JSON logs', () =>
      downstream.raw.find((r) => r.path === LOGS_PATH && r.body.includes('hello-from-http-logs')),
    );
    expect(log.contentType).toMatch(/^application\/json/);
    await Promise.all([meters.shutdown(), logs.shutdown()]);
  });

  it('passes metrics and logs byte for byte, over gRPC and HTTP', async () => {
    const viaGrpc = opaque('metrics-over-grpc');
    expect(await call(grpc, GRPC_PATHS.metrics, viaGrpc)).toBeNull();
    const viaHttp = opaque('logs-over-http');
    expect(
      (await post(`${serve.base}/v1/logs`, viaHttp, { 'content-type': 'application/x-protobuf' })).status,
    ).toBe(200);
    await waitFor('both arrived', () => downstream.raw.filter((r) => r.body.includes('-over-')).length === 2);
    expect(downstream.raw.find((r) => r.body.includes('metrics-over-grpc'))!.body.equals(viaGrpc)).toBe(true);
    expect(downstream.raw.find((r) => r.body.includes('logs-over-http'))!.body.equals(viaHttp)).toBe(true);
  });

  it('takes gzip-compressed exports from the real gRPC trace exporter', async () => {
    type Compression = NonNullable<ConstructorParameters<typeof GrpcTraceExporter>[0]>['compression'];
    const provider = new BasicTracerProvider({
      spanProcessors: [
        new SimpleSpanProcessor(
          new GrpcTraceExporter({ url: `http://${grpc}`, compression: 'gzip' as Compression }),
        ),
      ],
    });
    const continuity = createContinuity({ tracer: provider.getTracer('continuity'), runtime: 'sdk' });
    await continuity.capturePre('gzip-session', three('a'), { trigger: 'auto' });
    // Exported (answered) before the post goes: the span processor exports each span in its own
    // unary call, and two calls in flight may reach the service in either order (a post first is
    // held and answered later with a check span, not enriched).
    await provider.forceFlush();
    await continuity.observePost('gzip-session', three('b'));
    await provider.forceFlush();
    await waitFor('the gzip post span enriched', () =>
      downstream.spans.find(
        (s) =>
          s.span.name === SPAN_COMPACTION_POST &&
          s.attributes[ATTR_SESSION_ID] === 'gzip-session' &&
          s.attributes[ATTR_CONTINUITY_STATE] === 'conflicting',
      ),
    );
    await provider.shutdown();
  });

  it('answers OK with a partial success naming the compaction span it refused, and forwards the rest', async () => {
    const spans = [
      // A compaction span with no session key cannot be correlated: refused.
      {
        traceId: 'a1'.padStart(32, '0'),
        spanId: 'a1'.padStart(16, '0'),
        name: SPAN_COMPACTION_PRE,
        kind: 1,
        startTimeUnixNano: '1764500000000000000',
        endTimeUnixNano: '1764500000000000000',
        attributes: recordToAttributes({ [ATTR_TRIGGER]: 'auto' }),
      },
      {
        traceId: 'a2'.padStart(32, '0'),
        spanId: 'a2'.padStart(16, '0'),
        name: 'neighbour-of-refused',
        kind: 1,
        startTimeUnixNano: '1',
        endTimeUnixNano: '2',
      },
    ];
    const body = Buffer.from(
      encodeTraceRequest({ resourceSpans: [{ scopeSpans: [{ spans }] }] }, 'protobuf'),
    );
    const { err, response } = await exchange(grpc, GRPC_PATHS.traces, body);
    expect(err).toBeNull();
    const partial = readPartialSuccess(response!);
    expect(partial?.rejected).toBe(1);
    expect(partial?.message).toMatch(/compaction span needs a session key: set session\.id/);
    await waitFor('the neighbour', () =>
      downstream.spans.find((s) => s.span.name === 'neighbour-of-refused'),
    );
    expect(downstream.spans.filter((s) => s.span.spanId === spans[0]!.spanId)).toEqual([]);
  });

  it('answers INVALID_ARGUMENT for a trace message that is not a request', async () => {
    const err = await call(grpc, GRPC_PATHS.traces, Buffer.from([0x0a, 0x7f]));
    expect(err?.code).toBe(status.INVALID_ARGUMENT);
    expect(err?.details).toMatch(/not a valid protobuf ExportTraceServiceRequest/);
  });
});

describe('continuity serve with a gRPC downstream', () => {
  let receiver: GrpcReceiver;
  let serve: ServeProcess;

  beforeAll(async () => {
    receiver = await startGrpcReceiver();
    serve = await startServe({
      config: { downstream: { endpoint: receiver.endpoint, protocol: 'grpc', queueMaxSpans: 5 } },
    });
  });

  afterAll(async () => {
    await serve?.stop();
    await receiver?.close();
  });

  it('forwards enriched spans and passed-through metrics over gRPC', async () => {
    expect(
      (
        await post(serve.otlp, compactionRequest('to-grpc', 0x10), {
          'content-type': 'application/x-protobuf',
        })
      ).status,
    ).toBe(200);
    const metrics = opaque('metrics-to-grpc');
    expect(
      (await post(`${serve.base}/v1/metrics`, metrics, { 'content-type': 'application/x-protobuf' })).status,
    ).toBe(200);
    await waitFor('the post span over gRPC', () =>
      receiver.spans.find(
        (s) =>
          s.span.name === SPAN_COMPACTION_POST &&
          s.attributes[ATTR_SESSION_ID] === 'to-grpc' &&
          s.attributes[ATTR_CONTINUITY_STATE] === 'preserved',
      ),
    );
    await waitFor('the metrics over gRPC', () =>
      receiver.messages.find((m) => m.signal === 'metrics' && m.body.equals(metrics)),
    );
  });

  it('answers RESOURCE_EXHAUSTED with a RetryInfo when the queue cannot take the request', async () => {
    const err = await call(grpcAddress(serve), GRPC_PATHS.traces, ordinaryRequest('s', 10, 0));
    expect(err?.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(retryInfoMs(err?.metadata)).toBe(1000);
  });
});

describe('continuity serve with a gRPC downstream that is down', () => {
  let serve: ServeProcess;

  beforeAll(async () => {
    // A port nobody listens on: every export fails with UNAVAILABLE and the forwarder backs off.
    const gone = await startGrpcReceiver();
    await gone.close();
    serve = await startServe({
      config: {
        downstream: {
          endpoint: gone.endpoint,
          protocol: 'grpc',
          queueMaxSpans: 40,
          maxBatchSpans: 10,
          concurrency: 1,
          retry: { initialInterval: '50ms', maxInterval: '200ms', multiplier: 2, maxElapsedTime: '5m' },
        },
      },
    });
  });

  afterAll(async () => {
    await serve?.stop();
  });

  it('answers UNAVAILABLE with a RetryInfo once the queue is full of what it cannot deliver', async () => {
    const grpc = grpcAddress(serve);
    const codes: number[] = [];
    let retryMs: number | undefined;
    for (let i = 0; i < 15 && !codes.includes(status.UNAVAILABLE); i++) {
      const err = await call(grpc, GRPC_PATHS.traces, ordinaryRequest(`down-${i}`, 10, i * 100));
      codes.push(err?.code ?? status.OK);
      if (err?.code === status.UNAVAILABLE) {
        retryMs = retryInfoMs(err.metadata);
        expect(err.details).toMatch(/the downstream is failing and the forward queue is full/);
      }
    }
    expect(codes.slice(0, 4)).toEqual([status.OK, status.OK, status.OK, status.OK]);
    expect(codes).toContain(status.UNAVAILABLE);
    expect(retryMs).toBe(5000);
  });
});
