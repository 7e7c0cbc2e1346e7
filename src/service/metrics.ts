/**
 * The service's metrics: one `MeterProvider` (sdk-metrics) with a Prometheus reader served on
 * `/metrics` and, when configured, a periodic OTLP/HTTP exporter. It carries the continuity
 * metrics (recorded by the correlator's resolutions) and the service's own health: spans
 * received, forwarded, dropped and rejected, requests by status, queue size and capacity, export
 * failures, recovery, resident memory.
 *
 * Prometheus names follow the collector's translation (unit suffixes `_seconds`, `_bytes`;
 * counters `_total`), so `/metrics` and a collector's Prometheus exporter give the same names
 * (`PROMETHEUS_NAMES` / `SERVICE_PROMETHEUS_NAMES` in semconv.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Attributes, Counter, Histogram } from '@opentelemetry/api';
import { OTLPMetricExporter as OtlpHttpJsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as OtlpProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import type { Resource } from '@opentelemetry/resources';
import {
  MeterProvider,
  type MetricData,
  type MetricReader,
  PeriodicExportingMetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  METRIC_ATTR_ERROR_TYPE,
  METRIC_ATTR_HTTP_STATUS_CODE,
  METRIC_ATTR_SIGNAL,
  METRIC_PROCESS_MEMORY_USAGE,
  METRIC_SERVICE_EXPORT_FAILURES,
  METRIC_SERVICE_PASSTHROUGH_DROPPED,
  METRIC_SERVICE_PASSTHROUGH_FORWARDED,
  METRIC_SERVICE_PENDING_WRITE_DURATION,
  METRIC_SERVICE_QUEUE_CAPACITY,
  METRIC_SERVICE_QUEUE_SIZE,
  METRIC_SERVICE_RECOVERED,
  METRIC_SERVICE_RECOVERY_PROBLEMS,
  METRIC_SERVICE_REQUESTS,
  METRIC_SERVICE_SPANS_DROPPED,
  METRIC_SERVICE_SPANS_FORWARDED,
  METRIC_SERVICE_SPANS_RECEIVED,
  METRIC_SERVICE_SPANS_REJECTED,
  PASSTHROUGH_SIGNALS,
  PENDING_WRITE_BUCKETS_S,
  SERVICE_DROP_REASONS,
  SERVICE_METRIC_DEFINITIONS,
  SERVICE_REJECT_REASONS,
} from '../otel/semconv.js';
import type { OtlpHttpProtocol } from './config.js';

/** The instrumentation scope of everything the service records and emits. */
export const SERVICE_SCOPE = { name: 'agent-continuity/serve', version: '0.1.0' } as const;

/** Where OTLP metrics go, when they go anywhere. */
export interface OtlpMetricsOptions {
  endpoint: string;
  protocol: OtlpHttpProtocol;
  headers: Readonly<Record<string, string>>;
  intervalMs: number;
  timeoutMs: number;
}

/** Options of {@link ServiceMetrics}. */
export interface ServiceMetricsOptions {
  resource: Resource;
  /** Read on each collection for the queue gauges. */
  queue: { readonly size: number; readonly capacity: number };
  /** OTLP metric export. Default none (Prometheus only). */
  otlp?: OtlpMetricsOptions;
}

/** OpenTelemetry unit → Prometheus suffix, as the collector's Prometheus translation adds them. */
const UNIT_SUFFIXES: Readonly<Record<string, string>> = { s: 'seconds', ms: 'milliseconds', By: 'bytes' };

/** The metric name a Prometheus scrape shows, before `_total` (the serializer adds that). */
export function withUnitSuffix(name: string, unit: string): string {
  const suffix = UNIT_SUFFIXES[unit];
  if (suffix === undefined) return name;
  return name.endsWith(`.${suffix}`) || name.endsWith(`_${suffix}`) ? name : `${name}_${suffix}`;
}

function renamed(resourceMetrics: ResourceMetrics): ResourceMetrics {
  return {
    resource: resourceMetrics.resource,
    scopeMetrics: resourceMetrics.scopeMetrics.map((sm) => ({
      scope: sm.scope,
      metrics: sm.metrics.map(
        (m) =>
          ({
            ...m,
            descriptor: { ...m.descriptor, name: withUnitSuffix(m.descriptor.name, m.descriptor.unit) },
          }) as MetricData,
      ),
    })),
  };
}

/** The service's meter provider, readers and self-observability instruments. */
export class ServiceMetrics {
  /** Give this to the continuity metrics so they share the readers. */
  readonly meterProvider: MeterProvider;
  private readonly _prometheus: PrometheusExporter;
  private readonly _serializer = new PrometheusSerializer();
  private readonly _received: Counter;
  private readonly _forwarded: Counter;
  private readonly _dropped: Counter;
  private readonly _rejected: Counter;
  private readonly _requests: Counter;
  private readonly _exportFailures: Counter;
  private readonly _recovered: Counter;
  private readonly _recoveryProblems: Counter;
  private readonly _passForwarded: Counter;
  private readonly _passDropped: Counter;
  private readonly _pendingWrite: Histogram;
  private _shutdown: Promise<void> | undefined;

  constructor(options: ServiceMetricsOptions) {
    this._prometheus = new PrometheusExporter({ preventServerStart: true });
    const readers: MetricReader[] = [this._prometheus];
    if (options.otlp) {
      const o = options.otlp;
      const exporterOptions = { url: o.endpoint, headers: { ...o.headers }, timeoutMillis: o.timeoutMs };
      const exporter =
        o.protocol === 'http/json'
          ? new OtlpHttpJsonMetricExporter(exporterOptions)
          : new OtlpProtoMetricExporter(exporterOptions);
      readers.push(
        new PeriodicExportingMetricReader({
          exporter,
          exportIntervalMillis: o.intervalMs,
          exportTimeoutMillis: Math.min(o.timeoutMs, o.intervalMs),
        }),
      );
    }
    this.meterProvider = new MeterProvider({ resource: options.resource, readers });
    const meter = this.meterProvider.getMeter(SERVICE_SCOPE.name, SERVICE_SCOPE.version);
    const counter = (name: keyof typeof SERVICE_METRIC_DEFINITIONS) => {
      const d = SERVICE_METRIC_DEFINITIONS[name];
      return meter.createCounter(name, { unit: d.unit, description: d.description });
    };
    this._received = counter(METRIC_SERVICE_SPANS_RECEIVED);
    this._forwarded = counter(METRIC_SERVICE_SPANS_FORWARDED);
    this._dropped = counter(METRIC_SERVICE_SPANS_DROPPED);
    this._rejected = counter(METRIC_SERVICE_SPANS_REJECTED);
    this._requests = counter(METRIC_SERVICE_REQUESTS);
    this._exportFailures = counter(METRIC_SERVICE_EXPORT_FAILURES);
    this._recovered = counter(METRIC_SERVICE_RECOVERED);
    this._recoveryProblems = counter(METRIC_SERVICE_RECOVERY_PROBLEMS);
    this._passForwarded = counter(METRIC_SERVICE_PASSTHROUGH_FORWARDED);
    this._passDropped = counter(METRIC_SERVICE_PASSTHROUGH_DROPPED);
    {
      const d = SERVICE_METRIC_DEFINITIONS[METRIC_SERVICE_PENDING_WRITE_DURATION];
      this._pendingWrite = meter.createHistogram(METRIC_SERVICE_PENDING_WRITE_DURATION, {
        unit: d.unit,
        description: d.description,
        advice: { explicitBucketBoundaries: [...PENDING_WRITE_BUCKETS_S] },
      });
    }
    const gauge = (name: keyof typeof SERVICE_METRIC_DEFINITIONS, read: () => number) => {
      const d = SERVICE_METRIC_DEFINITIONS[name];
      meter
        .createObservableGauge(name, { unit: d.unit, description: d.description })
        .addCallback((result) => result.observe(read()));
    };
    gauge(METRIC_SERVICE_QUEUE_SIZE, () => options.queue.size);
    gauge(METRIC_SERVICE_QUEUE_CAPACITY, () => options.queue.capacity);
    gauge(METRIC_PROCESS_MEMORY_USAGE, () => process.memoryUsage.rss());
    // Zero-valued series from the start, so rate() and alerts have a baseline before the first event.
    this._received.add(0);
    this._forwarded.add(0);
    this._exportFailures.add(0);
    for (const signal of PASSTHROUGH_SIGNALS) this._passForwarded.add(0, { [METRIC_ATTR_SIGNAL]: signal });
    // The dropped and refused counters too, one zero series per reason (bounded lists): a dashboard
    // panel over them shows 0, not "no data", until the first drop (seen in the real stack).
    for (const reason of Object.values(SERVICE_DROP_REASONS)) {
      this._dropped.add(0, { [METRIC_ATTR_ERROR_TYPE]: reason });
    }
    for (const reason of Object.values(SERVICE_REJECT_REASONS)) {
      this._rejected.add(0, { [METRIC_ATTR_ERROR_TYPE]: reason });
    }
  }

  /** Spans accepted by the receiver. */
  received(spans: number): void {
    if (spans > 0) this._received.add(spans);
  }

  /** Spans the downstream accepted. */
  forwarded(spans: number): void {
    if (spans > 0) this._forwarded.add(spans);
  }

  /** Spans given up on, by reason. */
  dropped(spans: number, reason: string): void {
    if (spans > 0) this._dropped.add(spans, { [METRIC_ATTR_ERROR_TYPE]: reason });
  }

  /** Spans refused in a partial success, by reason. */
  rejected(spans: number, reason: string): void {
    if (spans > 0) this._rejected.add(spans, { [METRIC_ATTR_ERROR_TYPE]: reason });
  }

  /** One OTLP request answered with `status`. */
  request(status: number): void {
    const attrs: Attributes = { [METRIC_ATTR_HTTP_STATUS_CODE]: status };
    this._requests.add(1, attrs);
  }

  /** One failed export attempt. */
  exportFailed(reason: string): void {
    this._exportFailures.add(1, { [METRIC_ATTR_ERROR_TYPE]: reason });
  }

  /** Pass-through requests (metrics, logs) the downstream accepted. */
  passthroughForwarded(signal: string, requests: number): void {
    if (requests > 0) this._passForwarded.add(requests, { [METRIC_ATTR_SIGNAL]: signal });
  }

  /** Pass-through requests given up on, by reason. */
  passthroughDropped(signal: string, requests: number, reason: string): void {
    if (requests > 0) {
      this._passDropped.add(requests, { [METRIC_ATTR_SIGNAL]: signal, [METRIC_ATTR_ERROR_TYPE]: reason });
    }
  }

  /** One request's wait for its pending-state records to be durable, milliseconds. */
  pendingWrite(ms: number): void {
    this._pendingWrite.record(ms / 1000);
  }

  /** Boundaries restored and records unreadable at start. */
  recovery(recovered: number, problems: number): void {
    this._recovered.add(recovered);
    this._recoveryProblems.add(problems);
  }

  /** The Prometheus text exposition of every metric of this provider. */
  async prometheusText(): Promise<string> {
    const { resourceMetrics, errors } = await this._prometheus.collect();
    const head = errors.length > 0 ? `# collection errors: ${errors.length}\n` : '';
    return head + this._serializer.serialize(renamed(resourceMetrics));
  }

  /** Request handler for `GET /metrics`. */
  handle(_req: IncomingMessage, res: ServerResponse): void {
    this.prometheusText().then(
      (text) => {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
        res.end(text);
      },
      (e: Error) => {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`# failed to collect metrics: ${e.message}\n`);
      },
    );
  }

  /** Exports a last time (OTLP) and stops the readers. Safe to call twice. */
  shutdown(): Promise<void> {
    this._shutdown ??= this.meterProvider.shutdown().catch(() => undefined);
    return this._shutdown;
  }
}
