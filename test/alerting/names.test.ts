import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ALL_REASONS, CONTINUITY_STATES } from '../../src/classify/states.js';
import { ACTIVITY_STATES } from '../../src/decision/model.js';
import { WELL_KNOWN_DECISIONS } from '../../src/decision/names.js';
import {
  METRIC_ATTR_ACTIVITY,
  METRIC_ATTR_BOUNDARY_ID,
  METRIC_ATTR_ERROR_TYPE,
  METRIC_ATTR_HTTP_STATUS_CODE,
  METRIC_ATTR_PRIMARY_DECISION,
  METRIC_ATTR_REASON,
  METRIC_ATTR_RESULT,
  METRIC_ATTR_RUNTIME,
  METRIC_ATTR_SESSION_ID,
  METRIC_ATTR_SIGNAL,
  METRIC_ATTR_STATE,
  METRIC_ATTR_TRIGGER,
  METRIC_BOUNDARIES,
  METRIC_NEEDS_HUMAN,
  METRIC_SESSIONS,
  PROMETHEUS_NAMES,
  prometheusLabel,
  SERVICE_DROP_REASONS,
  SERVICE_PROMETHEUS_NAMES,
  SERVICE_REJECT_REASONS,
  TRIGGERS,
} from '../../src/otel/semconv.js';
import { expandEnvPlaceholders } from '../support/otelcol-env.js';
import {
  PROMETHEUS_BUILTIN_LABELS,
  PROMETHEUS_BUILTIN_METRICS,
  SPANMETRICS_CALLS,
  SPANMETRICS_DURATION,
  SPANMETRICS_LABELS,
  SPANMETRICS_PREFIXES,
  SPANMETRICS_STATUS,
  TEMPO_SPANMETRICS_CALLS,
  TEMPO_SPANMETRICS_LABELS,
  TEMPO_SPANMETRICS_LATENCY,
} from './collector-names.js';
import {
  configPath,
  customVariableValues,
  dashboardQueries,
  expandGrafanaVariables,
  loadAlertRules,
  loadDashboard,
  PROMETHEUS_CONFIG_FILE,
  scanPromql,
  variableQueries,
} from './promql.js';

const HISTOGRAM_SUFFIXES = ['_bucket', '_sum', '_count'];
const withHistogramSeries = (names: readonly string[]) =>
  names.flatMap((n) => [n, ...HISTOGRAM_SUFFIXES.map((s) => n + s)]);

/** Every metric name the rules and the dashboard may use, and where it is defined. */
const KNOWN_METRICS = new Set<string>([
  ...withHistogramSeries(Object.values(PROMETHEUS_NAMES)),
  ...withHistogramSeries(Object.values(SERVICE_PROMETHEUS_NAMES)),
  SPANMETRICS_CALLS,
  ...withHistogramSeries([SPANMETRICS_DURATION]),
  TEMPO_SPANMETRICS_CALLS,
  ...withHistogramSeries([TEMPO_SPANMETRICS_LATENCY]),
  ...PROMETHEUS_BUILTIN_METRICS,
]);

/** Prometheus label names: OpenTelemetry attribute keys with dots replaced by underscores. */
const promLabel = prometheusLabel;
const KNOWN_LABELS = new Set<string>([
  ...[
    METRIC_ATTR_STATE,
    METRIC_ATTR_REASON,
    METRIC_ATTR_RUNTIME,
    METRIC_ATTR_TRIGGER,
    METRIC_ATTR_ACTIVITY,
    METRIC_ATTR_PRIMARY_DECISION,
    METRIC_ATTR_SESSION_ID,
    METRIC_ATTR_BOUNDARY_ID,
    METRIC_ATTR_HTTP_STATUS_CODE,
    METRIC_ATTR_ERROR_TYPE,
    METRIC_ATTR_SIGNAL,
    METRIC_ATTR_RESULT,
  ].map(promLabel),
  ...SPANMETRICS_LABELS,
  ...TEMPO_SPANMETRICS_LABELS,
  ...PROMETHEUS_BUILTIN_LABELS,
]);

/** Values a matcher on a given label may compare with (exact matches only). */
const KNOWN_VALUES: Record<string, readonly string[]> = {
  [promLabel(METRIC_ATTR_STATE)]: CONTINUITY_STATES,
  [promLabel(METRIC_ATTR_REASON)]: ALL_REASONS,
  [promLabel(METRIC_ATTR_ERROR_TYPE)]: [
    ...Object.values(SERVICE_DROP_REASONS),
    ...Object.values(SERVICE_REJECT_REASONS),
  ],
  [promLabel(METRIC_ATTR_PRIMARY_DECISION)]: WELL_KNOWN_DECISIONS,
  [promLabel(METRIC_ATTR_ACTIVITY)]: ACTIVITY_STATES,
  [promLabel(METRIC_ATTR_TRIGGER)]: TRIGGERS,
  status_code: Object.values(SPANMETRICS_STATUS),
};

const rules = loadAlertRules();
const dashboard = loadDashboard();
/** The span-metrics prefixes the dashboard offers, the default first. */
const prefixes = customVariableValues(dashboard).spanmetrics_prefix ?? [];
/** Every dashboard query and query variable, as Grafana sends it for each span-metrics prefix. */
const dashboardSources = prefixes.flatMap((prefix) => {
  const expand = (expr: string) =>
    expandGrafanaVariables(expr, dashboard, '5m', { spanmetrics_prefix: prefix });
  return [
    ...dashboardQueries(dashboard).map((q) => ({
      where: `panel "${q.panel}" ${q.refId} (${prefix})`,
      expr: expand(q.expr),
      prefix,
    })),
    ...variableQueries(dashboard)
      .filter((v) => v.kind === 'query_result')
      .map((v) => ({ where: `variable ${v.name} (${prefix})`, expr: expand(v.expr), prefix })),
  ];
});
const sources = [...rules.map((r) => ({ where: `rule ${r.alert}`, expr: r.expr })), ...dashboardSources];
/** A `{__name__=~...}` selector is known when one of the names it may match is. */
const knownRegex = (names: string[]) => names.some((n) => KNOWN_METRICS.has(n));

describe('names in the alert rules and the dashboard', () => {
  it('the scanner finds metrics, labels and matchers in every expression', () => {
    expect(sources.length).toBeGreaterThan(20);
    for (const s of sources) {
      const found = scanPromql(s.expr);
      expect(
        found.metrics.size + found.metricRegexes.length,
        `${s.where}: no metric found in ${s.expr}`,
      ).toBeGreaterThan(0);
    }
    const conflicting = scanPromql(rules.find((r) => r.alert === 'AgentContinuityConflictingBoundary')!.expr);
    expect([...conflicting.metrics]).toEqual([PROMETHEUS_NAMES[METRIC_BOUNDARIES]]);
    expect(conflicting.matchers).toContainEqual({
      metric: PROMETHEUS_NAMES[METRIC_BOUNDARIES],
      label: promLabel(METRIC_ATTR_STATE),
      op: '=',
      value: 'conflicting',
    });
    expect([...conflicting.labels].sort()).toEqual(
      [
        METRIC_ATTR_PRIMARY_DECISION,
        METRIC_ATTR_REASON,
        METRIC_ATTR_RUNTIME,
        METRIC_ATTR_STATE,
        METRIC_ATTR_TRIGGER,
      ]
        .map(promLabel)
        .sort(),
    );
  });

  it('uses only metric names defined in semconv PROMETHEUS_NAMES, SERVICE_PROMETHEUS_NAMES or by the collector', () => {
    const unknown = sources.flatMap((s) => {
      const found = scanPromql(s.expr);
      return [
        ...[...found.metrics].filter((m) => !KNOWN_METRICS.has(m)),
        ...found.metricRegexes.filter((names) => !knownRegex(names)).map((names) => names.join('|')),
      ].map((m) => `${s.where}: ${m}`);
    });
    expect(unknown).toEqual([]);
  });

  it('offers the Collector and the Tempo span-metrics prefixes, and each span query reads only the picked one', () => {
    expect(prefixes).toEqual([SPANMETRICS_PREFIXES.collector, SPANMETRICS_PREFIXES.tempo]);
    const spanSources = dashboardSources.filter((s) => {
      const found = scanPromql(s.expr);
      return [...found.metrics, ...found.metricRegexes.flat()].some((m) => m.startsWith('traces_'));
    });
    // Latency p50 and p95, rate and errors, and the service variable, for each prefix.
    expect(spanSources).toHaveLength(5 * prefixes.length);
    for (const s of spanSources) {
      const found = scanPromql(s.expr);
      const names = [...found.metrics, ...found.metricRegexes.flat()].filter((m) => m.startsWith('traces_'));
      expect(
        names.every((m) => m.startsWith(s.prefix)),
        s.where,
      ).toBe(true);
    }
  });

  it('uses only label names that are semconv metric attributes, spanmetrics dimensions or Prometheus labels', () => {
    const unknown = sources.flatMap((s) =>
      [...scanPromql(s.expr).labels].filter((l) => !KNOWN_LABELS.has(l)).map((l) => `${s.where}: ${l}`),
    );
    expect(unknown).toEqual([]);
  });

  it('compares states, reasons, decisions, activities and triggers only with values the code defines', () => {
    const wrong = sources.flatMap((s) =>
      scanPromql(s.expr)
        .matchers.filter((m) => (m.op === '=' || m.op === '!=') && KNOWN_VALUES[m.label] !== undefined)
        .filter((m) => !KNOWN_VALUES[m.label]!.includes(m.value))
        .map((m) => `${s.where}: ${m.label}${m.op}"${m.value}"`),
    );
    expect(wrong).toEqual([]);
  });

  it('the dashboard variables read labels that exist on known metrics', () => {
    const vars = variableQueries(dashboard);
    expect(vars.map((v) => v.name).sort()).toEqual(['runtime', 'service']);
    for (const v of vars) {
      if (v.kind !== 'label_values') continue; // query_result variables are scanned as sources above
      expect(KNOWN_METRICS.has(v.metric), v.metric).toBe(true);
      expect(KNOWN_LABELS.has(v.label), v.label).toBe(true);
    }
  });

  it('covers the continuity metrics a user needs: states, sessions × activity, needs-a-human, reobservation', () => {
    const used = new Set(sources.flatMap((s) => [...scanPromql(s.expr).metrics]));
    for (const name of [...Object.values(PROMETHEUS_NAMES), ...Object.values(SERVICE_PROMETHEUS_NAMES)]) {
      const histogram = [...HISTOGRAM_SUFFIXES].some((suffix) => used.has(name + suffix));
      expect(used.has(name) || histogram, `${name} is on no panel and in no rule`).toBe(true);
    }
    const sessions = dashboardQueries(dashboard).filter((q) =>
      scanPromql(q.expr).metrics.has(PROMETHEUS_NAMES[METRIC_SESSIONS]),
    );
    expect(sessions.length).toBeGreaterThan(0);
    for (const q of sessions) {
      // Never flattened: every sessions query keeps both dimensions.
      const labels = scanPromql(q.expr).labels;
      expect(
        labels.has(promLabel(METRIC_ATTR_STATE)) && labels.has(promLabel(METRIC_ATTR_ACTIVITY)),
        q.panel,
      ).toBe(true);
    }
    const human = dashboardQueries(dashboard).find((q) =>
      scanPromql(q.expr).metrics.has(PROMETHEUS_NAMES[METRIC_NEEDS_HUMAN]),
    );
    expect(human?.panel).toBe('Boundaries needing a human');
    expect(scanPromql(human!.expr).labels).toContain(promLabel(METRIC_ATTR_SESSION_ID));
    expect(scanPromql(human!.expr).labels).toContain(promLabel(METRIC_ATTR_REASON));
  });
});

describe('the collector configurations feed the dashboard the names it queries', () => {
  type Otelcol = {
    exporters?: Record<string, { endpoint?: string } | null>;
    connectors?: Record<string, { namespace?: string; histogram?: { unit?: string } } | null>;
  };
  const promConfig = parse(readFileSync(PROMETHEUS_CONFIG_FILE, 'utf8')) as {
    scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
  };
  const collectorTarget = promConfig.scrape_configs.find((j) => j.job_name === 'otel-collector')!
    .static_configs[0]!.targets[0]!;

  for (const file of ['otelcol-gateway.yaml', 'otelcol-sidecar.yaml']) {
    it(`${file}: span_metrics with the dashboard's namespace and unit, exported where prometheus.yml scrapes`, () => {
      const doc = parse(expandEnvPlaceholders(readFileSync(configPath(file), 'utf8'))) as Otelcol;
      // The current component name (otelcol-contrib >= 0.157.0), not the deprecated spanmetrics.
      expect(Object.keys(doc.connectors ?? {})).toEqual(['span_metrics']);
      const spanmetrics = doc.connectors?.span_metrics ?? {};
      // Connector defaults: namespace traces.span.metrics, histogram unit ms. Ours: seconds.
      const namespace = (spanmetrics.namespace ?? 'traces.span.metrics').replaceAll('.', '_');
      const unit = spanmetrics.histogram?.unit ?? 'ms';
      expect(unit, `${file} connectors.span_metrics.histogram.unit`).toBe('s');
      expect(`${namespace}_`).toBe(SPANMETRICS_PREFIXES.collector);
      expect(`${namespace}_calls_total`).toBe(SPANMETRICS_CALLS);
      expect(`${namespace}_duration_${unit === 'ms' ? 'milliseconds' : 'seconds'}`).toBe(
        SPANMETRICS_DURATION,
      );
      const endpoint = doc.exporters?.prometheus?.endpoint ?? '';
      expect(endpoint.split(':').at(-1), `${file} exporters.prometheus.endpoint`).toBe(
        collectorTarget.split(':').at(-1),
      );
    });
  }
});
