/**
 * `continuity serve` end to end: the OpenTelemetry JS OTLP/HTTP exporters (protobuf and JSON)
 * send the six cases to the real command running as a child process; a real downstream receiver
 * gets the enriched spans; `/metrics` shows the counts; metrics also arrive over OTLP.
 */
import { OTLPTraceExporter as OtlpJsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTINUITY_STATES } from '../../src/classify/states.js';
import {
  ATTR_CONTINUITY_ACTION,
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  METRIC_ATTR_ERROR_TYPE,
  METRIC_ATTR_STATE,
  METRIC_BOUNDARIES,
  METRIC_SERVICE_PENDING_WRITE_DURATION,
  METRIC_SERVICE_QUEUE_SIZE,
  METRIC_SERVICE_REQUESTS,
  METRIC_SERVICE_SPANS_FORWARDED,
  METRIC_SERVICE_SPANS_RECEIVED,
  PROMETHEUS_NAMES,
  prometheusLabel,
  SERVICE_PROMETHEUS_NAMES,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import {
  type Downstream,
  httpGet,
  post,
  type ServeProcess,
  scrape,
  startDownstream,
  startServe,
  total,
  waitFor,
} from './harness.js';
import { expectedStates, type SentCase, sendSixCases } from './six-cases.js';

const expected = expectedStates();

function checkEnriched(downstream: Downstream, sent: SentCase[]): void {
  for (const c of sent) {
    const posts = downstream.spans.filter(
      (s) => s.span.name === SPAN_COMPACTION_POST && s.attributes[ATTR_SESSION_ID] === c.sessionId,
    );
    const pre = downstream.spans.find(
      (s) => s.span.name === SPAN_COMPACTION_PRE && s.attributes[ATTR_SESSION_ID] === c.sessionId,
    );
    expect(posts, c.caseId).toHaveLength(1);
    expect(posts[0]!.attributes[ATTR_CONTINUITY_STATE], c.caseId).toBe(expected.get(c.caseId));
    expect(typeof posts[0]!.attributes[ATTR_CONTINUITY_ACTION]).toBe('string');
    // The post span links to its pre span.
    expect(posts[0]!.span.links.map((l) => l.spanId)).toContain(pre!.span.spanId);
    // The pre span itself is forwarded unchanged: no state on it.
    expect(pre!.attributes[ATTR_CONTINUITY_STATE]).toBeUndefined();
  }
}

describe('continuity serve', () => {
  let downstream: Downstream;
  let serve: ServeProcess;

  beforeAll(async () => {
    downstream = await startDownstream();
    serve = await startServe({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: downstream.base, OTEL_METRIC_EXPORT_INTERVAL: '300' },
    });
  });

  afterAll(async () => {
    await serve?.stop();
    await downstream?.close();
  });

  it('answers /healthz and /readyz', async () => {
    expect(await httpGet(`${serve.base}/healthz`)).toMatchObject({ status: 200 });
    expect(await httpGet(serve.ready)).toMatchObject({ status: 200, body: 'ready\n' });
    expect((await httpGet(`${serve.base}/nothing-here`)).status).toBe(404);
  });

  it('enriches the six cases sent by the OTLP/HTTP protobuf exporter', async () => {
    const sent = await sendSixCases(new OtlpProtoTraceExporter({ url: serve.otlp }), 'proto');
    await waitFor('six enriched post spans', () =>
      sent.every((c) =>
        downstream.spans.some(
          (s) => s.span.name === SPAN_COMPACTION_POST && s.attributes[ATTR_SESSION_ID] === c.sessionId,
        ),
      ),
    );
    checkEnriched(downstream, sent);
    expect(downstream.contentTypes).toContain('application/x-protobuf');
  });

  it('enriches the six cases sent by the OTLP/HTTP JSON exporter', async () => {
    const sent = await sendSixCases(new OtlpJsonTraceExporter({ url: serve.otlp }), 'json');
    await waitFor('six enriched post spans', () =>
      sent.every((c) =>
        downstream.spans.some(
          (s) => s.span.name === SPAN_COMPACTION_POST && s.attributes[ATTR_SESSION_ID] === c.sessionId,
        ),
      ),
    );
    checkEnriched(downstream, sent);
  });

  it('shows the continuity counts and its own health on /metrics', async () => {
    const counts = new Map<string, number>();
    for (const s of expected.values()) counts.set(s, (counts.get(s) ?? 0) + 1);
    const samples = await waitFor('forwarded = received', async () => {
      const s = await scrape(serve.metrics);
      const received = total(s, SERVICE_PROMETHEUS_NAMES[METRIC_SERVICE_SPANS_RECEIVED]);
      return received > 0 && total(s, SERVICE_PROMETHEUS_NAMES[METRIC_SERVICE_SPANS_FORWARDED]) === received
        ? s
        : undefined;
    });
    for (const state of CONTINUITY_STATES) {
      // Two transports, six cases each.
      expect(total(samples, PROMETHEUS_NAMES[METRIC_BOUNDARIES], { [METRIC_ATTR_STATE]: state }), state).toBe(
        2 * (counts.get(state) ?? 0),
      );
    }
    // Every span the exporters sent was received and forwarded, nothing queued.
    expect(total(samples, SERVICE_PROMETHEUS_NAMES[METRIC_SERVICE_SPANS_RECEIVED])).toBe(
      downstream.spans.length,
    );
    expect(total(samples, SERVICE_PROMETHEUS_NAMES[METRIC_SERVICE_QUEUE_SIZE])).toBe(0);
    // Each request with compaction spans waited for its journal once: the wait is measured.
    const writes = total(samples, `${SERVICE_PROMETHEUS_NAMES[METRIC_SERVICE_PENDING_WRITE_DURATION]}_count`);
    expect(writes).toBeGreaterThan(0);
    expect(writes).toBeLessThanOrEqual(total(samples, SERVICE_PROMETHEUS_NAMES[METRIC_SERVICE_REQUESTS]));
    // Every documented Prometheus name is served (the histogram as _bucket/_sum/_count).
    const names = new Set(samples.map((s) => s.name.replace(/_(bucket|sum|count)$/, '')));
    for (const name of [...Object.values(PROMETHEUS_NAMES), ...Object.values(SERVICE_PROMETHEUS_NAMES)]) {
      if (name === 'continuity_needs_human' || name.endsWith('_evictions_total')) continue;
      if (
        name.startsWith('continuity_service_spans_dropped') ||
        name.startsWith('continuity_service_spans_rejected') ||
        name.startsWith('continuity_service_passthrough_dropped')
      )
        continue;
      expect(names, name).toContain(name);
    }
    // The needs_human gauge lists the dropped and conflicting sessions.
    const needsHuman = samples.filter((s) => s.name === PROMETHEUS_NAMES['continuity.needs_human']);
    expect(needsHuman.map((s) => s.labels[prometheusLabel(METRIC_ATTR_STATE)]).sort()).toEqual([
      'conflicting',
      'conflicting',
      'dropped',
      'dropped',
    ]);
  });

  it('exports the same metrics over OTLP', async () => {
    await waitFor('an OTLP metrics export carrying the boundaries counter', () =>
      downstream.metrics.some((m) =>
        m.resourceMetrics.some((rm) =>
          rm.scopeMetrics.some((sm) => sm.metrics.some((x) => x.name === METRIC_BOUNDARIES)),
        ),
      ),
    );
  });

  it('exits 0 on SIGTERM after a graceful shutdown', async () => {
    const code = await serve.stop();
    expect(code).toBe(0);
    expect(serve.stderr()).toContain('continuity serve stopped');
  });
});

describe('continuity serve with a bearer token and a gzip JSON downstream', () => {
  it('refuses requests without the token and forwards gzip-compressed JSON to the downstream', async () => {
    const downstream = await startDownstream();
    const token = 'test-token-0123456789abcdef';
    const serve = await startServe({
      config: {
        downstream: { endpoint: `${downstream.base}/v1/traces`, protocol: 'http/json', compression: 'gzip' },
      },
      env: { CONTINUITY_SERVE_BEARER_TOKEN: token },
    });
    try {
      const refused = await post(serve.otlp, '{"resourceSpans":[]}', { 'content-type': 'application/json' });
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toBe('Bearer');
      expect(JSON.parse(refused.body.toString()).message).toMatch(/bearer token/);
      const wrong = await post(serve.otlp, '{"resourceSpans":[]}', {
        'content-type': 'application/json',
        authorization: 'Bearer not-the-token-at-all',
      });
      expect(wrong.status).toBe(401);
      const sent = await sendSixCases(
        new OtlpProtoTraceExporter({ url: serve.otlp, headers: { authorization: `Bearer ${token}` } }),
        'token',
      );
      await waitFor('six post spans downstream', () =>
        sent.every((c) =>
          downstream.spans.some(
            (s) => s.span.name === SPAN_COMPACTION_POST && s.attributes[ATTR_SESSION_ID] === c.sessionId,
          ),
        ),
      );
      checkEnriched(downstream, sent);
      expect([...downstream.contentTypes]).toEqual(['application/json']);
      expect([...downstream.contentEncodings]).toEqual(['gzip']);
    } finally {
      await serve.stop();
      await downstream.close();
    }
  });
});

describe('continuity serve with metrics on their own port', () => {
  it('serves /metrics on metrics.port and not on the OTLP listener', async () => {
    const serve = await startServe({ config: { metrics: { port: 0 } } });
    try {
      expect(serve.metrics).not.toContain(serve.base);
      expect((await httpGet(serve.metrics)).status).toBe(200);
      expect((await httpGet(`${serve.base}/metrics`)).status).toBe(404);
      expect((await httpGet(`${serve.base}/healthz`)).status).toBe(200);
      // Metrics-only mode: no downstream, the spans are counted dropped with their reason.
      const body =
        '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"00112233445566778899aabbccddeeff","spanId":"0011223344556677","name":"x"}]}]}]}';
      expect((await post(serve.otlp, body, { 'content-type': 'application/json' })).status).toBe(200);
      await waitFor(
        'the span counted dropped (no_downstream)',
        async () =>
          total(await scrape(serve.metrics), 'continuity_service_spans_dropped_total', {
            [METRIC_ATTR_ERROR_TYPE]: 'no_downstream',
          }) === 1,
      );
    } finally {
      await serve.stop();
    }
  });
});
