/**
 * Names that the OpenTelemetry Collector, not this project, defines, as they reach Prometheus:
 * the spanmetrics connector (contrib, default namespace `traces.span.metrics`, histogram unit `ms`,
 * default dimensions service.name, span.name, span.kind, status.code) through the collector's
 * `prometheus` exporter, which appends `_total` to counters and the unit (`_milliseconds`) to the
 * histogram, and replaces dots in label names with underscores. Checked against the connector's
 * README and factory (`DefaultNamespace = "traces.span.metrics"`) in opentelemetry-collector-contrib.
 */

/** `traces.span.metrics.calls` → counter. */
export const SPANMETRICS_CALLS = 'traces_span_metrics_calls_total' as const;
/** `traces.span.metrics.duration` (unit ms) → histogram `_bucket`, `_sum`, `_count`. */
export const SPANMETRICS_DURATION = 'traces_span_metrics_duration_milliseconds' as const;

/** Label names the connector's default dimensions become. */
export const SPANMETRICS_LABELS = ['service_name', 'span_name', 'span_kind', 'status_code'] as const;

/** `status.code` values as the connector writes them. */
export const SPANMETRICS_STATUS = {
  unset: 'STATUS_CODE_UNSET',
  ok: 'STATUS_CODE_OK',
  error: 'STATUS_CODE_ERROR',
} as const;

/** The connector's default explicit histogram buckets, in milliseconds. */
export const SPANMETRICS_DEFAULT_BUCKETS_MS = [
  2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10000, 15000,
] as const;

/** Series every Prometheus has about its own targets. */
export const PROMETHEUS_BUILTIN_METRICS = ['up'] as const;
/** Labels Prometheus adds to every scraped series, and the histogram bucket label. */
export const PROMETHEUS_BUILTIN_LABELS = ['job', 'instance', 'le'] as const;

/** The job name the example scrape config and AgentContinuityServiceDown use. */
export const CONTINUITY_SERVE_JOB = 'continuity-serve' as const;
