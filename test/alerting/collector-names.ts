/**
 * Names that others, not this project, define, as they reach Prometheus.
 *
 * The OpenTelemetry Collector's spanmetrics connector (contrib, default namespace
 * `traces.span.metrics`, default dimensions service.name, span.name, span.kind, status.code)
 * through the collector's `prometheus` exporter, which appends `_total` to counters and the unit
 * to the histogram (`_seconds` with the `histogram.unit: s` our configs set; the default `ms`
 * gives `_milliseconds`), and replaces dots in label names with underscores. Checked against the
 * connector's README, factory (`DefaultNamespace = "traces.span.metrics"`) and connector.go
 * (seconds buckets: the millisecond defaults / 1000) in opentelemetry-collector-contrib.
 *
 * Tempo's metrics-generator span-metrics processor (grafana/tempo
 * modules/generator/processor/spanmetrics: `traces_spanmetrics_calls_total`,
 * `traces_spanmetrics_latency` in seconds, intrinsic dimensions `service`, `span_name`,
 * `span_kind`, `status_code`, buckets `prometheus.ExponentialBuckets(0.002, 2, 14)`).
 */

/** What the dashboard's `spanmetrics_prefix` variable chooses between. */
export const SPANMETRICS_PREFIXES = {
  collector: 'traces_span_metrics_',
  tempo: 'traces_spanmetrics_',
} as const;

/** `traces.span.metrics.calls` → counter. */
export const SPANMETRICS_CALLS = 'traces_span_metrics_calls_total' as const;
/** `traces.span.metrics.duration` (unit s) → histogram `_bucket`, `_sum`, `_count`. */
export const SPANMETRICS_DURATION = 'traces_span_metrics_duration_seconds' as const;

/** Label names the connector's default dimensions become. */
export const SPANMETRICS_LABELS = ['service_name', 'span_name', 'span_kind', 'status_code'] as const;

/** `status.code` values as the connector writes them. */
export const SPANMETRICS_STATUS = {
  unset: 'STATUS_CODE_UNSET',
  ok: 'STATUS_CODE_OK',
  error: 'STATUS_CODE_ERROR',
} as const;

/** The connector's default explicit histogram buckets with `histogram.unit: s`, in seconds. */
export const SPANMETRICS_DEFAULT_BUCKETS_S = [
  2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10000, 15000,
].map((ms) => ms / 1000);

/** Tempo's calls counter. */
export const TEMPO_SPANMETRICS_CALLS = 'traces_spanmetrics_calls_total' as const;
/** Tempo's latency histogram, in seconds: `_bucket`, `_sum`, `_count`. */
export const TEMPO_SPANMETRICS_LATENCY = 'traces_spanmetrics_latency' as const;
/** Tempo's intrinsic dimensions as labels (its service label is `service`, not `service_name`). */
export const TEMPO_SPANMETRICS_LABELS = ['service', 'span_name', 'span_kind', 'status_code'] as const;
/** Tempo's default latency buckets, in seconds. */
export const TEMPO_SPANMETRICS_DEFAULT_BUCKETS_S = Array.from({ length: 14 }, (_, i) => 0.002 * 2 ** i);

/** Series every Prometheus has about its own targets. */
export const PROMETHEUS_BUILTIN_METRICS = ['up'] as const;
/** Labels Prometheus adds to every scraped series, the histogram bucket label, the name label. */
export const PROMETHEUS_BUILTIN_LABELS = ['job', 'instance', 'le', '__name__'] as const;

/** The job name the example scrape config and AgentContinuityServiceDown use. */
export const CONTINUITY_SERVE_JOB = 'continuity-serve' as const;
