import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SPANMETRICS_PREFIXES } from './collector-names.js';
import { DASHBOARD_FILE, dashboardQueries, loadDashboard, type Panel } from './promql.js';

const dashboard = loadDashboard();
/** Grafana's reference to the data-source variable. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a JS template.
const DS_VAR = '${datasource}';
/** Panel types this dashboard may use (all built into Grafana 10 and 11). */
const PANEL_TYPES = new Set(['row', 'timeseries', 'table', 'stat', 'bargauge']);
/** Transformations built into Grafana that this dashboard uses. */
const TRANSFORMATIONS = new Set(['groupingToMatrix', 'organize']);

const contentPanels = dashboard.panels.filter((p) => p.type !== 'row');

describe('Grafana dashboard (collector-config/grafana/agent-continuity.json)', () => {
  it('has what Grafana needs to import it: uid, title, schemaVersion, panels, templating, time', () => {
    expect(dashboard.uid).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
    expect(dashboard.title).toBe('Agent continuity');
    expect(Number.isInteger(dashboard.schemaVersion)).toBe(true);
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(Array.isArray(dashboard.panels)).toBe(true);
    expect(Array.isArray(dashboard.templating?.list)).toBe(true);
    expect(dashboard.time).toEqual({ from: expect.any(String), to: 'now' });
    // An importable dashboard carries no database id (Grafana assigns one).
    expect(dashboard.id ?? null).toBeNull();
  });

  it('has a Prometheus data-source variable that every panel, target and query variable uses', () => {
    const ds = dashboard.templating.list.find((v) => v.type === 'datasource');
    expect(ds).toMatchObject({ name: 'datasource', query: 'prometheus' });
    for (const p of contentPanels) {
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: DS_VAR });
      for (const t of p.targets ?? []) expect(t.datasource, `${p.title} ${t.refId}`).toEqual(p.datasource);
    }
    for (const v of dashboard.templating.list.filter((v) => v.type === 'query')) {
      expect(v.datasource, v.name).toEqual({ type: 'prometheus', uid: DS_VAR });
    }
    // No data-source uid of the author's Grafana leaked into the file.
    const uids = [...readFileSync(DASHBOARD_FILE, 'utf8').matchAll(/"uid":\s*"([^"]*)"/g)].map((m) => m[1]);
    expect(new Set(uids)).toEqual(new Set([dashboard.uid, DS_VAR, '-- Grafana --']));
  });

  it("declares its inputs, so Grafana's import asks for the Prometheus data source and fills the variable", () => {
    expect(dashboard.__inputs).toEqual([
      expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' }),
    ]);
    const requires = dashboard.__requires as { type: string; id: string }[];
    expect(requires).toContainEqual(expect.objectContaining({ type: 'datasource', id: 'prometheus' }));
    expect(requires).toContainEqual(expect.objectContaining({ type: 'grafana', id: 'grafana' }));
    const usedPanels = new Set(contentPanels.map((p) => p.type));
    expect(new Set(requires.filter((r) => r.type === 'panel').map((r) => r.id))).toEqual(usedPanels);
    // The import replaces ${DS_PROMETHEUS} with the picked data source: it becomes the variable's value.
    const ds = dashboard.templating.list.find((v) => v.type === 'datasource')!;
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's input syntax, not a JS template.
    expect(ds.current).toMatchObject({ value: '${DS_PROMETHEUS}' });
    // The input is used where it is declared and nowhere else.
    const text = readFileSync(DASHBOARD_FILE, 'utf8');
    expect(text.match(/\$\{DS_PROMETHEUS\}/g)).toHaveLength(2);
  });

  it('has a variable for the span-metrics prefix: the Collector connector by default, or Tempo', () => {
    const v = dashboard.templating.list.find((t) => t.name === 'spanmetrics_prefix')!;
    expect(v.type).toBe('custom');
    expect((v.options as { value: string }[]).map((o) => o.value)).toEqual([
      SPANMETRICS_PREFIXES.collector,
      SPANMETRICS_PREFIXES.tempo,
    ]);
    expect(v.current).toMatchObject({ value: SPANMETRICS_PREFIXES.collector });
    // Grafana's custom-variable syntax, `text : value` pairs, names the same two values.
    expect(
      String(v.query)
        .split(',')
        .map((o) => o.split(' : ')[1]),
    ).toEqual([SPANMETRICS_PREFIXES.collector, SPANMETRICS_PREFIXES.tempo]);
  });

  it('shows every duration in seconds', () => {
    const units = contentPanels.map((p) => (p.fieldConfig as { defaults: { unit?: string } }).defaults.unit);
    expect(units).not.toContain('ms');
    const latency = contentPanels.find((p) => p.title === 'Agent span latency (span metrics)')!;
    expect((latency.fieldConfig as { defaults: { unit: string } }).defaults.unit).toBe('s');
    for (const t of latency.targets ?? []) expect(t.expr).not.toMatch(/milliseconds/);
  });

  it('gives every panel a unique id, a known type, a title and a gridPos inside the 24-column grid', () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of dashboard.panels) {
      expect(Number.isInteger(p.id), p.title).toBe(true);
      expect(PANEL_TYPES.has(p.type), `${p.title}: ${p.type}`).toBe(true);
      expect(p.title.length, String(p.id)).toBeGreaterThan(0);
      const { h, w, x, y } = p.gridPos;
      for (const n of [h, w, x, y]) expect(Number.isInteger(n) && n >= 0, p.title).toBe(true);
      expect(w > 0 && h > 0 && x + w <= 24, p.title).toBe(true);
    }
  });

  it('lays panels out without overlaps', () => {
    const overlaps = (a: Panel, b: Panel) =>
      a.gridPos.x < b.gridPos.x + b.gridPos.w &&
      b.gridPos.x < a.gridPos.x + a.gridPos.w &&
      a.gridPos.y < b.gridPos.y + b.gridPos.h &&
      b.gridPos.y < a.gridPos.y + a.gridPos.h;
    const found: string[] = [];
    dashboard.panels.forEach((a, i) => {
      for (const b of dashboard.panels.slice(i + 1))
        if (overlaps(a, b)) found.push(`${a.title} / ${b.title}`);
    });
    expect(found).toEqual([]);
  });

  it('gives every content panel PromQL targets with unique refIds, and uses only built-in transformations', () => {
    for (const p of contentPanels) {
      const targets = p.targets ?? [];
      expect(targets.length, p.title).toBeGreaterThan(0);
      expect(new Set(targets.map((t) => t.refId)).size, p.title).toBe(targets.length);
      for (const t of targets) expect(t.expr.trim().length, `${p.title} ${t.refId}`).toBeGreaterThan(0);
      for (const tr of (p.transformations as { id: string }[] | undefined) ?? []) {
        expect(TRANSFORMATIONS.has(tr.id), `${p.title}: ${tr.id}`).toBe(true);
      }
    }
  });

  it('has two rows: continuity next to latency, then the service health', () => {
    const rows = dashboard.panels.filter((p) => p.type === 'row');
    expect(rows.map((r) => r.title)).toEqual([
      'Continuity next to latency',
      "continuity serve: the service's own health",
    ]);
    // Span latency shares the first row (same y band) with the continuity states over time.
    const byTitle = new Map(contentPanels.map((p) => [p.title, p]));
    const states = byTitle.get('Boundaries resolved, by runtime and continuity state')!;
    const latency = byTitle.get('Agent span latency (span metrics)')!;
    expect(latency.gridPos.y).toBe(states.gridPos.y);
    expect(latency.gridPos.y).toBeLessThan(rows[1]!.gridPos.y);
    expect(dashboardQueries(dashboard).length).toBeGreaterThan(15);
  });

  it('shows "Boundaries needing a human" as an instant table with session and reason columns', () => {
    const table = contentPanels.find((p) => p.title === 'Boundaries needing a human')!;
    expect(table.type).toBe('table');
    expect(table.targets![0]!.instant).toBe(true);
    const organize = (
      table.transformations as { id: string; options: { renameByName: Record<string, string> } }[]
    )[0]!;
    expect(organize.id).toBe('organize');
    expect(organize.options.renameByName).toMatchObject({
      session_id: 'Session',
      continuity_reason: 'Reason',
    });
  });
});
