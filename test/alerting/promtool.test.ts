import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { SERVICE_DEFAULTS } from '../../src/service/config.js';
import { CONTINUITY_SERVE_JOB } from './collector-names.js';
import {
  ALERTMANAGER_CONFIG_FILE,
  configPath,
  loadAlertRules,
  PROMETHEUS_CONFIG_FILE,
  RULES_FILE,
  RULES_TEST_FILE,
} from './promql.js';
import { ensurePrometheusTools, INSTALL_TIMEOUT_MS, runTool } from './tools.js';

const rules = loadAlertRules();
const PROMETHEUS_DIR = configPath('prometheus');

type RulesTest = {
  rule_files: string[];
  tests: { name: string; alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
};

const scratch = mkdtempSync(join(tmpdir(), 'continuity-promtool-'));
beforeAll(() => ensurePrometheusTools(), INSTALL_TIMEOUT_MS);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('alert rules (collector-config/prometheus/continuity.rules.yml)', () => {
  it('pass promtool check rules', () => {
    const r = runTool('promtool', ['check', 'rules', RULES_FILE]);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain(`SUCCESS: ${rules.length} rules found`);
  });

  it('pass their promtool unit tests (continuity.rules.test.yml)', () => {
    const r = runTool('promtool', ['test', 'rules', basename(RULES_TEST_FILE)], PROMETHEUS_DIR);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain('SUCCESS');
  });

  it('have a unit test where each alert fires and one where it does not', () => {
    const doc = parse(readFileSync(RULES_TEST_FILE, 'utf8')) as RulesTest;
    expect(doc.rule_files).toEqual([basename(RULES_FILE)]);
    const checks = doc.tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const rule of rules) {
      const mine = checks.filter((c) => c.alertname === rule.alert);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${rule.alert} never expected to fire`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${rule.alert} never expected to stay quiet`,
      ).toBe(true);
    }
  });

  it('unit tests that bite: a rule that ignores new counters fails them', () => {
    // Without the "born since 15m" clause the first conflicting boundary of a new label set is
    // missed (increase() needs two samples); the unit tests must notice.
    const broken = readFileSync(RULES_FILE, 'utf8').replaceAll(
      'unless continuity_boundaries_total{continuity_state="conflicting"} offset 15m',
      'unless continuity_boundaries_total{continuity_state="conflicting"}',
    );
    expect(broken).not.toEqual(readFileSync(RULES_FILE, 'utf8'));
    writeFileSync(join(scratch, basename(RULES_FILE)), broken);
    copyFileSync(RULES_TEST_FILE, join(scratch, basename(RULES_TEST_FILE)));
    const r = runTool('promtool', ['test', 'rules', basename(RULES_TEST_FILE)], scratch);
    expect(r.status).not.toBe(0);
    expect(r.output).toContain('AgentContinuityConflictingBoundary');
  });

  it('say what happened and what to do, with a severity and a runbook section in docs/alerting.md', () => {
    const docs = readFileSync(new URL('../../docs/alerting.md', import.meta.url), 'utf8');
    const anchors = new Set(
      [...docs.matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
        m[1]!
          .trim()
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const rule of rules) {
      expect(['critical', 'warning'], rule.alert).toContain(rule.labels.severity);
      expect(rule.labels.component, rule.alert).toBe('agent-continuity');
      expect(rule.annotations.summary?.length ?? 0, rule.alert).toBeGreaterThan(20);
      expect(rule.annotations.description, rule.alert).toMatch(/What to do:/);
      const runbook = rule.annotations.runbook ?? '';
      expect(runbook, rule.alert).toBe(`docs/alerting.md#${rule.alert.toLowerCase()}`);
      expect(anchors.has(rule.alert.toLowerCase()), `docs/alerting.md has no section ${rule.alert}`).toBe(
        true,
      );
    }
  });

  it('page (critical) for a conflicting boundary, a dropped approval boundary and an approval without the human signature, and for nothing healthy', () => {
    const critical = rules.filter((r) => r.labels.severity === 'critical').map((r) => r.alert);
    expect(critical.sort()).toEqual([
      'AgentContinuityApprovalAttempt',
      'AgentContinuityApprovalBoundaryDropped',
      'AgentContinuityConflictingBoundary',
    ]);
    for (const rule of rules) {
      // No rule selects healthy boundaries: compaction by itself never alerts.
      expect(rule.expr, rule.alert).not.toMatch(/continuity_state="(preserved|approved_change)"/);
    }
  });
});

describe('Prometheus scrape configuration (collector-config/prometheus/prometheus.yml)', () => {
  it('passes promtool check config, rule file included', () => {
    const r = runTool('promtool', ['check', 'config', basename(PROMETHEUS_CONFIG_FILE)], PROMETHEUS_DIR);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain(`SUCCESS: ${rules.length} rules found`);
  });

  it("scrapes continuity serve at the service's default port and metrics path, under the job the rules use", () => {
    const doc = parse(readFileSync(PROMETHEUS_CONFIG_FILE, 'utf8')) as {
      scrape_configs: { job_name: string; metrics_path?: string; static_configs: { targets: string[] }[] }[];
    };
    const job = doc.scrape_configs.find((j) => j.job_name === CONTINUITY_SERVE_JOB);
    expect(job).toBeDefined();
    expect(job!.metrics_path ?? '/metrics').toBe(SERVICE_DEFAULTS.metricsPath);
    expect(job!.static_configs[0]!.targets).toEqual([`${SERVICE_DEFAULTS.host}:${SERVICE_DEFAULTS.port}`]);
    const down = rules.find((r) => r.alert === 'AgentContinuityServiceDown')!;
    expect(down.expr).toContain(`job="${CONTINUITY_SERVE_JOB}"`);
  });
});

describe('Alertmanager example (collector-config/prometheus/alertmanager.yml)', () => {
  it('passes amtool check-config', () => {
    const r = runTool('amtool', ['check-config', ALERTMANAGER_CONFIG_FILE]);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain('SUCCESS');
  });

  const route = (labels: Record<string, string>) => {
    const pairs = Object.entries(labels).map(([k, v]) => `${k}=${v}`);
    const r = runTool('amtool', [
      'config',
      'routes',
      'test',
      `--config.file=${ALERTMANAGER_CONFIG_FILE}`,
      ...pairs,
    ]);
    expect(r.status, r.output).toBe(0);
    return r.stdout.trim();
  };

  it('routes critical continuity alerts to their own receiver and warnings to another', () => {
    for (const rule of rules) {
      const labels = { alertname: rule.alert, ...rule.labels, runtime: 'claude-code' };
      const expected = rule.labels.severity === 'critical' ? 'continuity-critical' : 'continuity-warnings';
      expect(route(labels), rule.alert).toBe(expected);
    }
  });

  it('groups by labels the routed alerts carry (continuity_runtime, not runtime)', () => {
    type Route = { matchers?: string[]; group_by?: string[]; routes?: Route[] };
    const config = parse(readFileSync(ALERTMANAGER_CONFIG_FILE, 'utf8')) as { route: Route };
    // The labels an alert has: its rule's labels, alertname, and what its expression keeps
    // (`sum by (...)`, `max by (...)`; a bare selector keeps the series' own, e.g. `up`'s job, instance).
    const carried = (rule: (typeof rules)[number]) => {
      const kept = [...rule.expr.matchAll(/\b(?:sum|max|min|count|avg) by \(([^)]*)\)/g)].flatMap((m) =>
        m[1]!.split(',').map((l) => l.trim()),
      );
      const bare = /^\s*up\{/.test(rule.expr) ? ['job', 'instance'] : [];
      return new Set(['alertname', ...Object.keys(rule.labels), ...kept, ...bare]);
    };
    for (const r of config.route.routes ?? []) {
      const routed = rules.filter(
        (rule) => route({ alertname: rule.alert, ...rule.labels }) === (r as { receiver?: string }).receiver,
      );
      expect(routed.length, JSON.stringify(r.matchers)).toBeGreaterThan(0);
      for (const label of r.group_by ?? []) {
        expect(
          routed.some((rule) => carried(rule).has(label)),
          `group_by ${label}: no alert routed here carries it`,
        ).toBe(true);
      }
    }
  });

  it("leaves other teams' alerts on the default route", () => {
    expect(route({ alertname: 'HighCPU', severity: 'critical' })).toBe('default');
  });
});
