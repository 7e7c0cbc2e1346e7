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

/** What a dashboard query variable asks Prometheus. */
export type VariableQuery =
  /** `label_values(metric, label)`: the label's values on that metric. */
  | { name: string; kind: 'label_values'; metric: string; label: string }
  /** `query_result(expr)` with a regex: Grafana formats each result series and keeps the regex's group. */
  | { name: string; kind: 'query_result'; expr: string; regex: RegExp };

/** The query variables of the dashboard (`label_values(...)` or `query_result(...)` with a regex). */
export function variableQueries(dashboard: Dashboard): VariableQuery[] {
  return dashboard.templating.list
    .filter((v) => v.type === 'query')
    .map((v): VariableQuery => {
      const q = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
      const lv = /^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$/.exec(q);
      if (lv) return { name: v.name, kind: 'label_values', metric: lv[1]!, label: lv[2]! };
      const qr = /^query_result\(([\s\S]*)\)$/.exec(q);
      const regex = typeof v.regex === 'string' ? /^\/(.*)\/$/.exec(v.regex) : null;
      if (qr && regex)
        return { name: v.name, kind: 'query_result', expr: qr[1]!, regex: new RegExp(regex[1]!) };
      throw new Error(
        `variable ${v.name}: expected label_values(metric, label), or query_result(expr) with a regex; got ${q}`,
      );
    });
}

/** The values of each custom variable (its options), the default one first. */
export function customVariableValues(dashboard: Dashboard): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const v of dashboard.templating.list) {
    if (v.type !== 'custom') continue;
    const options = (v.options as { value: string; selected?: boolean }[] | undefined) ?? [];
    out[v.name] = [...options]
      .sort((a, b) => Number(b.selected === true) - Number(a.selected === true))
      .map((o) => o.value);
  }
  return out;
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
  /** `{__name__=~"..."}` selectors: the names each one may match (any one of them). */
  metricRegexes: string[][];
  /** Label names in matchers and in by/without/on/ignoring/group_* clauses. */
  labels: Set<string>;
  matchers: Matcher[];
}

const IDENT = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool']);
const SET_OPERATORS = new Set(['and', 'or', 'unless']);

/** The names a regex of the form `prefix(a|b)suffix` (one group, or none) matches. */
export function expandAlternation(regex: string): string[] {
  const m = /^([^()|]*)\(([^()]*)\)([^()|]*)$/.exec(regex);
  if (!m) return [regex];
  return m[2]!.split('|').map((alt) => `${m[1]}${alt}${m[3]}`);
}

/** Scans one PromQL expression. Grafana variables ($runtime, $__rate_interval) may appear. */
export function scanPromql(expr: string): PromqlNames {
  const metrics = new Set<string>();
  const metricRegexes: string[][] = [];
  const labels = new Set<string>();
  const matchers: Matcher[] = [];
  // Selectors with braces: name{...} or {...}.
  const selector = new RegExp(`(${IDENT})?\\s*\\{([^}]*)\\}`, 'g');
  let rest = expr.replace(selector, (_all, name: string | undefined, body: string) => {
    if (name !== undefined && !KEYWORDS.has(name) && !SET_OPERATORS.has(name)) metrics.add(name);
    for (const m of body.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g)) {
      labels.add(m[1]!);
      matchers.push({ metric: name, label: m[1]!, op: m[2] as Matcher['op'], value: m[3]! });
      // {__name__="x"} and {__name__=~"a(b|c)d"} select metrics by name.
      if (m[1] === '__name__' && m[2] === '=') metrics.add(m[3]!);
      if (m[1] === '__name__' && m[2] === '=~') metricRegexes.push(expandAlternation(m[3]!));
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
  return { metrics, metricRegexes, labels, matchers };
}

/**
 * Replaces the Grafana variables in a dashboard query with what Grafana would send for the
 * default selection ("All" → the variable's allValue; intervals → `interval`; a custom variable →
 * its current value), or for the values given in `choose` (custom variables).
 */
export function expandGrafanaVariables(
  expr: string,
  dashboard: Dashboard,
  interval: string,
  choose: Record<string, string> = {},
): string {
  let out = expr.replaceAll('$__rate_interval', interval).replaceAll('$__interval', interval);
  const sub = (name: string, value: string) => {
    out = out
      .replaceAll(`\${${name}}`, value)
      .replaceAll(new RegExp(`\\$${name}(?![a-zA-Z0-9_])`, 'g'), value);
  };
  // Longer names first, so `$service` does not eat the start of `$service_label`.
  const vars = [...dashboard.templating.list].sort((a, b) => b.name.length - a.name.length);
  for (const v of vars) {
    if (v.type === 'query') sub(v.name, v.allValue ?? '.*');
    if (v.type === 'custom') {
      const current = (v.current as { value?: string } | undefined)?.value ?? '';
      sub(v.name, choose[v.name] ?? current);
    }
  }
  // `$1` in label_replace is PromQL's, not a variable.
  if (/\$\{?[a-zA-Z_]/.test(out)) throw new Error(`unexpanded Grafana variable in ${out}`);
  return out;
}
