/**
 * The alert rules and the dashboard against a real Prometheus: `continuity serve` (child process)
 * receives the six cases as OTLP, forwards them to a collector test double (which serves
 * spanmetrics-shaped series from what it received), and a Prometheus (child process, own data
 * folder, 1 s scrape and evaluation) scrapes both and evaluates the real rule file.
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  METRIC_BOUNDARIES,
  METRIC_NEEDS_HUMAN,
  METRIC_SERVICE_SPANS_DROPPED,
  METRIC_SESSIONS,
  PROMETHEUS_NAMES,
  SERVICE_PROMETHEUS_NAMES,
} from '../../src/otel/semconv.js';
import { SERVICE_TEST_APPROVER } from '../support/approver.js';
import { CollectorDouble } from './collector-double.js';
import { CONTINUITY_SERVE_JOB, SPANMETRICS_CALLS } from './collector-names.js';
import {
  alertRules,
  type Child,
  instantQuery,
  labelValues,
  type PrometheusProcess,
  type ServeAddresses,
  startPrometheus,
  startServe,
  stopChild,
  waitFor,
} from './processes.js';
import {
  customVariableValues,
  dashboardQueries,
  expandGrafanaVariables,
  loadAlertRules,
  loadDashboard,
  RULES_FILE,
  type VariableQuery,
  variableQueries,
} from './promql.js';
import {
  AGENT_SERVICE_NAME,
  approveAndReobserve,
  lonePreSpans,
  otlpJsonRequest,
  type SentCase,
  sixCaseWave,
  spanWithoutSession,
} from './six-case-spans.js';
import { ensurePrometheusTools, INSTALL_TIMEOUT_MS } from './tools.js';

const BOUNDARIES = PROMETHEUS_NAMES[METRIC_BOUNDARIES];
/** The window Grafana's $__rate_interval stands for here: longer than the whole test. */
const RATE_WINDOW = '5m';
/** The runtime whose post window the test shortens, for the post-missing alert. */
const SHORT_WINDOW_RUNTIME = 'sdk';

const ALERTS_FROM_SIX_CASES = [
  'AgentContinuityApprovalBoundaryDropped',
  'AgentContinuityConflictingBoundary',
];

let dir: string;
let double: CollectorDouble;
let serve: { child: Child; addresses: ServeAddresses } | undefined;
let prom: PrometheusProcess | undefined;
const sent: SentCase[] = [];

async function post(body: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const r = await fetch(serve!.addresses.otlp, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  const text = await r.text();
  return { status: r.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

async function scalar(query: string): Promise<number | undefined> {
  const result = await instantQuery(prom!, query);
  return result.length === 0 ? undefined : Number(result[0]!.value[1]);
}

/** Resolves once `query` returns at least `min`. */
async function untilAtLeast(query: string, min: number): Promise<void> {
  await waitFor(
    async () => ((await scalar(query)) ?? Number.NEGATIVE_INFINITY) >= min || undefined,
    () => `${query} >= ${min}; service output:\n${serve?.child.output()}`,
  );
}

async function untilFiring(names: string[]): Promise<void> {
  await waitFor(
    async () => {
      const rules = await alertRules(prom!);
      return names.every((n) => rules.get(n)?.state === 'firing') || undefined;
    },
    () => `alerts ${names.join(', ')} to fire`,
  );
}

/** Waits until Prometheus has scraped the service `n` more times (rates need two samples). */
async function moreScrapes(n: number): Promise<void> {
  const last = `timestamp(up{job="${CONTINUITY_SERVE_JOB}"})`;
  for (let i = 0; i < n; i++) {
    const before = await scalar(last);
    await waitFor(
      async () => ((await scalar(last)) ?? 0) > (before ?? 0) || undefined,
      () => 'another scrape of continuity serve',
    );
  }
}

/** Waits until Prometheus has evaluated the rules `n` more times. */
async function moreEvaluations(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const before = [...(await alertRules(prom!)).values()].map((r) => r.lastEvaluation).join();
    await waitFor(
      async () =>
        [...(await alertRules(prom!)).values()].map((r) => r.lastEvaluation).join() !== before || undefined,
      () => 'another rule evaluation',
    );
  }
}

beforeAll(async () => {
  await ensurePrometheusTools();
  dir = mkdtempSync(join(tmpdir(), 'continuity-prometheus-'));
  double = await CollectorDouble.start();
  const serveConfig = join(dir, 'serve.yaml');
  writeFileSync(
    serveConfig,
    stringify({
      server: { host: '127.0.0.1', port: 0 },
      downstream: {
        endpoint: double.tracesUrl,
        protocol: 'http/protobuf',
        timeout: '2s',
        retry: { initialInterval: '100ms', maxInterval: '200ms', maxElapsedTime: '1s' },
      },
      correlation: {
        postWindows: { [SHORT_WINDOW_RUNTIME]: '2s' },
        maxPendingBoundaries: 2,
        expireInterval: '200ms',
        // The approver the six cases' approvals are signed with (../support/approver.ts).
        approverKeys: [SERVICE_TEST_APPROVER.publicKeyHex],
      },
      state: { dir: join(dir, 'serve-state') },
      log: { level: 'warn' },
    }),
  );
  serve = await startServe(serveConfig);
  const serviceTarget = new URL(serve.addresses.metrics).host;
  prom = await startPrometheus({
    dir,
    ruleFiles: [RULES_FILE],
    jobs: { [CONTINUITY_SERVE_JOB]: [serviceTarget], 'otel-collector': [double.address] },
  });
  await untilAtLeast(`sum(up{job="${CONTINUITY_SERVE_JOB}"})`, 1);
  await untilAtLeast('sum(up{job="otel-collector"})', 1);
}, INSTALL_TIMEOUT_MS);

afterAll(async () => {
  await stopChild(prom?.child);
  await stopChild(serve?.child);
  await double?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('alert rules against a real Prometheus, six cases through continuity serve', () => {
  it('counts the six cases of two waves, sent as OTLP through the service', async () => {
    for (const wave of [1, 2]) {
      const { body, sent: cases } = sixCaseWave(wave);
      const r = await post(body);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      sent.push(...cases);
      // The second wave arrives after Prometheus has scraped the first, so rates have an increase.
      await untilAtLeast(`sum(${BOUNDARIES})`, 6 * wave);
      await untilAtLeast(`count(${SPANMETRICS_CALLS}{service_name="${AGENT_SERVICE_NAME}"})`, 1);
    }
    const byState = await instantQuery(prom!, `sum by (continuity_state) (${BOUNDARIES})`);
    expect(Object.fromEntries(byState.map((s) => [s.metric.continuity_state, Number(s.value[1])]))).toEqual({
      preserved: 4,
      approved_change: 2,
      dropped: 2,
      conflicting: 2,
      unverified: 2,
    });
  });

  it('fires the conflicting and the dropped-approval-boundary alerts, with runtime, decision and reason', async () => {
    await untilFiring(ALERTS_FROM_SIX_CASES);
    const rules = await alertRules(prom!);
    const conflicting = sent.find((c) => c.caseId === 'case-5-conflicting-scope')!;
    const dropped = sent.find((c) => c.caseId === 'case-4-dropped-approval-boundary')!;
    expect(rules.get('AgentContinuityConflictingBoundary')!.alerts.map((a) => a.labels)).toEqual([
      expect.objectContaining({
        severity: 'critical',
        continuity_runtime: conflicting.runtime,
        continuity_primary_decision: 'scope',
        continuity_reason: 'unapproved_change',
      }),
    ]);
    expect(rules.get('AgentContinuityApprovalBoundaryDropped')!.alerts.map((a) => a.labels)).toEqual([
      expect.objectContaining({
        severity: 'critical',
        continuity_runtime: dropped.runtime,
        continuity_primary_decision: 'approval_boundary',
        continuity_reason: 'absent_after_compaction',
      }),
    ]);
    const summary = rules.get('AgentContinuityConflictingBoundary')!.alerts[0]!.annotations.summary;
    expect(summary).toContain(`A ${conflicting.runtime} agent changed its scope decision`);
  });

  it('keeps every other alert quiet: preserved, approved and pending boundaries raise nothing', async () => {
    await moreEvaluations(3);
    const rules = await alertRules(prom!);
    expect(rules.size).toBe(loadAlertRules().length);
    const firing = [...rules.values()].filter((r) => r.state === 'firing').map((r) => r.name);
    expect(firing.sort()).toEqual(ALERTS_FROM_SIX_CASES);
    // Case 6 (stale test digest) leaves a working session unverified: the rule matches and waits
    // for its 30 minutes instead of firing at once.
    expect(rules.get('AgentContinuityUnverifiedPersisting')!.state).toBe('pending');
  });

  it('fires the post-missing, eviction, refused-span and dropped-span alerts when those happen', async () => {
    // Three boundaries whose post never comes, with room for two: one is evicted at once, the
    // other two expire after the shortened post window.
    expect((await post(lonePreSpans(['lone-a', 'lone-b', 'lone-c'], SHORT_WINDOW_RUNTIME))).status).toBe(200);
    // A compaction span without a session key is refused in a partial success.
    const refused = await post(spanWithoutSession(SHORT_WINDOW_RUNTIME));
    expect(refused.status).toBe(200);
    expect(refused.json.partialSuccess).toMatchObject({ rejectedSpans: expect.anything() });
    // The downstream fails for longer than the retry budget: spans are dropped, not lost silently.
    double.failWith(503);
    const failed = await post(otlpJsonRequest([{ name: 'chat', attributes: {}, durationMs: 10 }]));
    expect(failed.status).toBe(200);
    await untilAtLeast(`sum(${SERVICE_PROMETHEUS_NAMES[METRIC_SERVICE_SPANS_DROPPED]})`, 1);
    double.failWith(undefined);
    expect(double.failedRequests).toBeGreaterThan(0);

    await untilFiring([
      'AgentContinuityPostObservationMissing',
      'AgentContinuityPendingEvicted',
      'AgentContinuityServiceRejectingSpans',
      'AgentContinuityServiceDroppingSpans',
    ]);
    const rules = await alertRules(prom!);
    expect(rules.get('AgentContinuityPostObservationMissing')!.alerts[0]!.labels.continuity_runtime).toBe(
      SHORT_WINDOW_RUNTIME,
    );
    expect(rules.get('AgentContinuityServiceDroppingSpans')!.alerts[0]!.labels.error_type).toBe(
      'retry_exhausted',
    );
    expect(rules.get('AgentContinuityServiceRejectingSpans')!.alerts[0]!.labels.error_type).toBe(
      'missing_session_key',
    );
  });
});

describe('the Grafana dashboard against the same Prometheus', () => {
  const dashboard = loadDashboard();
  /** The span-metrics prefixes the dashboard offers (the collector double serves both families). */
  const PREFIXES = customVariableValues(dashboard).spanmetrics_prefix ?? [];

  /** What Grafana lists for a query variable. */
  async function variableValues(v: VariableQuery, prefix: string): Promise<string[]> {
    if (v.kind === 'label_values') return labelValues(prom!, v.metric, v.label);
    const expr = expandGrafanaVariables(v.expr, dashboard, RATE_WINDOW, { spanmetrics_prefix: prefix });
    // Grafana writes each series of a query_result as `{label="value", …} value timestamp`.
    const lines = (await instantQuery(prom!, expr)).map(
      (r) =>
        `{${Object.entries(r.metric)
          .map(([k, val]) => `${k}="${val}"`)
          .join(', ')}} ${r.value[1]} ${r.value[0]}`,
    );
    return [...new Set(lines.map((l) => v.regex.exec(l)?.[1]).filter((x): x is string => x !== undefined))];
  }

  it.each(PREFIXES)(
    'every PromQL query of every panel returns data, with span metrics from %s',
    async (prefix) => {
      await moreScrapes(2);
      const empty: string[] = [];
      for (const q of dashboardQueries(dashboard)) {
        const query = expandGrafanaVariables(q.expr, dashboard, RATE_WINDOW, { spanmetrics_prefix: prefix });
        const result = await instantQuery(prom!, query);
        // NaN (e.g. a quantile over no increase) is not data a panel can draw.
        if (!result.some((s) => Number.isFinite(Number(s.value[1]))))
          empty.push(`${q.panel} ${q.refId}: ${query}`);
      }
      expect(empty).toEqual([]);
    },
  );

  it.each(PREFIXES)('every variable lists values, with span metrics from %s', async (prefix) => {
    const values = Object.fromEntries(
      await Promise.all(
        variableQueries(dashboard).map(async (v) => [v.name, await variableValues(v, prefix)] as const),
      ),
    );
    expect(values.runtime).toEqual(
      expect.arrayContaining(['claude-code', 'codex-cli', SHORT_WINDOW_RUNTIME]),
    );
    // The service's own continuity.check spans count under its own service.name.
    expect(values.service).toEqual(expect.arrayContaining([AGENT_SERVICE_NAME]));
  });

  it('shows the same spans per service whichever span-metrics source is picked, never both at once', async () => {
    const q = dashboardQueries(dashboard).find(
      (d) => d.panel === 'Agent span rate and errors (span metrics)' && d.refId === 'A',
    )!;
    // Both sources at one evaluation time: queried a moment apart, the window would slide over
    // samples scraped in between and the counts differ for that reason alone.
    const at = Date.now() / 1000;
    const byPrefix = await Promise.all(
      PREFIXES.map(async (prefix) => {
        const expr = expandGrafanaVariables(q.expr, dashboard, RATE_WINDOW, { spanmetrics_prefix: prefix });
        // The increase over the window instead of the rate: the same counts from both sources.
        const rows = await instantQuery(prom!, expr.replaceAll('rate(', 'increase('), at);
        return Object.fromEntries(
          rows.map((r) => [JSON.stringify(r.metric), Math.round(Number(r.value[1]))]),
        );
      }),
    );
    // One series per service, labelled service_name for both (Tempo's `service` is renamed).
    expect(Object.keys(byPrefix[0]!).map((k) => Object.keys(JSON.parse(k)))).toEqual(
      Object.keys(byPrefix[0]!).map(() => ['service_name']),
    );
    expect(Object.keys(byPrefix[0]!)).toContain(JSON.stringify({ service_name: AGENT_SERVICE_NAME }));
    expect(byPrefix[1]).toEqual(byPrefix[0]);
  });

  it('lists exactly the dropped and conflicting sessions in "Boundaries needing a human"', async () => {
    const q = dashboardQueries(dashboard).find((d) => d.panel === 'Boundaries needing a human')!;
    const rows = await instantQuery(prom!, expandGrafanaVariables(q.expr, dashboard, RATE_WINDOW));
    const expected = sent
      .filter((c) => c.caseId.includes('dropped') || c.caseId.includes('conflicting'))
      .map((c) => ({ session_id: c.sessionId, boundary_id: c.boundaryId, runtime: c.runtime }));
    expect(
      rows.map((r) => ({
        session_id: r.metric.session_id,
        boundary_id: r.metric.continuity_boundary_id,
        runtime: r.metric.continuity_runtime,
      })),
    ).toEqual(expect.arrayContaining(expected));
    expect(rows).toHaveLength(expected.length);
    expect(new Set(rows.map((r) => r.metric.continuity_state))).toEqual(new Set(['dropped', 'conflicting']));
    expect(new Set(rows.map((r) => r.metric.continuity_reason))).toEqual(
      new Set(['absent_after_compaction', 'unapproved_change']),
    );
  });

  it('keeps continuity and activity apart in the sessions matrix', async () => {
    const q = dashboardQueries(dashboard).find(
      (d) => d.panel === 'Sessions now: continuity state × activity state',
    )!;
    const cells = await instantQuery(prom!, q.expr);
    const pairs = cells.map((c) => `${c.metric.continuity_state}×${c.metric.continuity_activity_state}`);
    // Case 5 is conflicting while working: both dimensions survive, neither hides the other.
    expect(pairs).toContain('conflicting×working');
    expect(pairs).toContain('preserved×idle');
    expect(pairs).toContain('approved_change×waiting_human');
  });

  it('drops a session from "Boundaries needing a human" once it is approved and re-observed', async () => {
    const q = dashboardQueries(dashboard).find((d) => d.panel === 'Boundaries needing a human')!;
    const query = expandGrafanaVariables(q.expr, dashboard, RATE_WINDOW);
    const cell = `${PROMETHEUS_NAMES[METRIC_SESSIONS]}{continuity_state="conflicting", continuity_activity_state="working"}`;
    const before = (await instantQuery(prom!, query)).map((r) => r.metric.session_id);
    const conflictingWorking = await scalar(cell);
    expect(conflictingWorking).toBeGreaterThan(0);
    const approved = sent.find(
      (c) => c.caseId === 'case-5-conflicting-scope' && before.includes(c.sessionId),
    )!;
    expect((await post(approveAndReobserve(approved))).status).toBe(200);
    // The gauge reads 0 for the session (a cumulative SDK would otherwise keep the old 1).
    const series = `${PROMETHEUS_NAMES[METRIC_NEEDS_HUMAN]}{session_id="${approved.sessionId}"}`;
    await waitFor(
      async () => (await scalar(series)) === 0 || undefined,
      () => `${series} == 0; service output:\n${serve?.child.output()}`,
    );
    const after = (await instantQuery(prom!, query)).map((r) => r.metric.session_id);
    expect(after.sort()).toEqual(before.filter((id) => id !== approved.sessionId).sort());
    // The session left its cell of the sessions matrix (case 5 is a working session).
    await waitFor(
      async () => (await scalar(cell)) === conflictingWorking! - 1 || undefined,
      () => `${cell} == ${conflictingWorking! - 1}`,
    );
  });
});
