/**
 * Test support: reads the alert rules and the Grafana dashboard, and pulls metric names, label
 * names and label matchers out of their PromQL. A small scanner, not a PromQL parser: enough for
 * the expressions in collector-config/, and checked by the tests to find what it should (so a
 * scanner that finds nothing cannot pass the name checks vacuously).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/** Absolute path of a file under collector-config/. */
export function configPath(relative: string): string {
  return fileURLToPath(new URL(`../../collector-config/${relative}`, import.meta.url));
}

export const RULES_FILE = configPath('prometheus/continuity.rules.yml');
export const RULES_TEST_FILE = configPath('prometheus/continuity.rules.test.yml');
export const PROMETHEUS_CONFIG_FILE = configPath('prometheus/prometheus.yml');
export const ALERTMANAGER_CONFIG_FILE = configPath('prometheus/alertmanager.yml');
export const DASHBOARD_FILE = configPath('grafana/agent-continuity.json');

/** One alerting rule as written in the rule file. */
export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** The alerting rules of continuity.rules.yml, in file order. */
export function loadAlertRules(file = RULES_FILE): AlertRule[] {
  const doc = parse(readFileSync(file, 'utf8')) as { groups: { rules: AlertRule[] }[] };
  return doc.groups.flatMap((g) => g.rules);
}

/** One PromQL query of the dashboard, with where it is. */
export interface DashboardQuery {
  panel: string;
  refId: string;
  expr: string;
  instant: boolean;
}

/** The dashboard JSON as a plain object (shape checked by dashboard.test.ts). */
export type Dashboard = {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: TemplateVariable[] };
  [key: string]: unknown;
};
export type Panel = {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type: string; uid: string };
  targets?: { refId: string; expr: string; instant?: boolean; datasource?: { type: string; uid: string } }[];
  [key: string]: unknown;
};
export type TemplateVariable = {
  type: string;
  name: string;
  query?: string | { query: string };
  definition?: string;
  allValue?: string;
  [key: string]: unknown;
};

export function loadDashboard(file = DASHBOARD_FILE): Dashboard {
  return JSON.parse(readFileSync(file, 'utf8')) as Dashboard;
}

/** Every PromQL target of every non-row panel. */
export function dashboardQueries(dashboard: Dashboard): DashboardQuery[] {
  return dashboard.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({
      panel: p.title,
      refId: t.refId,
      expr: t.expr,
      instant: t.instant === true,
    })),
  );
}

/** `label_values(metric, label)` of the dashboard's query variables. */
export function variableQueries(dashboard: Dashboard): { name: string; metric: string; label: string }[] {
  return dashboard.templating.list
    .filter((v) => v.type === 'query')
    .map((v) => {
      const q = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
      const m = /^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$/.exec(q);
      if (!m) throw new Error(`variable ${v.name}: expected label_values(metric, label), got ${q}`);
      return { name: v.name, metric: m[1]!, label: m[2]! };
    });
}

/** A label matcher such as `state="conflicting"` or `runtime=~"$runtime"`. */
export interface Matcher {
  metric: string | undefined;
  label: string;
  op: '=' | '!=' | '=~' | '!~';
  value: string;
}

/** What the scanner found in one expression. */
export interface PromqlNames {
  metrics: Set<string>;
  /** Label names in matchers and in by/without/on/ignoring/group_* clauses. */
  labels: Set<string>;
  matchers: Matcher[];
}

const IDENT = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool']);
const SET_OPERATORS = new Set(['and', 'or', 'unless']);

/** Scans one PromQL expression. Grafana variables ($runtime, $__rate_interval) may appear. */
export function scanPromql(expr: string): PromqlNames {
  const metrics = new Set<string>();
  const labels = new Set<string>();
  const matchers: Matcher[] = [];
  // Selectors with braces: name{...} or {...}.
  const selector = new RegExp(`(${IDENT})?\\s*\\{([^}]*)\\}`, 'g');
  let rest = expr.replace(selector, (_all, name: string | undefined, body: string) => {
    if (name !== undefined && !KEYWORDS.has(name) && !SET_OPERATORS.has(name)) metrics.add(name);
    for (const m of body.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g)) {
      labels.add(m[1]!);
      matchers.push({ metric: name, label: m[1]!, op: m[2] as Matcher['op'], value: m[3]! });
    }
    return ` ${name !== undefined && (KEYWORDS.has(name) || SET_OPERATORS.has(name)) ? name : ''} `;
  });
  // Grouping clauses: by (a, b), without (...), on (...), ignoring (...), group_left (...).
  rest = rest.replace(
    /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g,
    (_a, _k, body: string) => {
      for (const l of body.split(',')) if (l.trim() !== '') labels.add(l.trim());
      return ' ';
    },
  );
  // Range selectors, durations after offset, strings, numbers.
  rest = rest
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/"(?:[^"\\]|\\.)*"/g, ' ')
    .replace(/\boffset\s+\S+/g, ' ');
  for (const m of rest.matchAll(new RegExp(`(${IDENT})(\\s*\\()?`, 'g'))) {
    const name = m[1]!;
    if (m[2] !== undefined) continue; // a function or aggregation call
    if (KEYWORDS.has(name) || SET_OPERATORS.has(name)) continue;
    if (/^\d/.test(name)) continue;
    metrics.add(name);
  }
  return { metrics, labels, matchers };
}

/**
 * Replaces the Grafana variables in a dashboard query with what Grafana would send for the
 * default selection ("All" → the variable's allValue; intervals → `interval`).
 */
export function expandGrafanaVariables(expr: string, dashboard: Dashboard, interval: string): string {
  let out = expr.replaceAll('$__rate_interval', interval).replaceAll('$__interval', interval);
  for (const v of dashboard.templating.list) {
    if (v.type !== 'query') continue;
    out = out.replaceAll(`$${v.name}`, v.allValue ?? '.*').replaceAll(`\${${v.name}}`, v.allValue ?? '.*');
  }
  if (/\$\w/.test(out)) throw new Error(`unexpanded Grafana variable in ${out}`);
  return out;
}
