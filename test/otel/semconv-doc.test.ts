/**
 * docs/semantic-conventions.md and src/otel/semconv.ts (+ the states, actions and reasons of
 * src/classify/states.ts) list the same names, both ways, with the same metric units,
 * descriptions and Prometheus names.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ACTIONS, ALL_REASONS, CONTINUITY_STATES } from '../../src/classify/states.js';
import { ACTIVITY_STATES } from '../../src/decision/model.js';
import * as semconv from '../../src/otel/semconv.js';

const DOC = 'docs/semantic-conventions.md';
const doc = readFileSync(new URL(`../../${DOC}`, import.meta.url), 'utf8');

/** Every table of the doc: header cells and body rows (cells with surrounding spaces trimmed). */
function tables(markdown: string): Array<{ header: string[]; rows: string[][] }> {
  const out: Array<{ header: string[]; rows: string[][] }> = [];
  let current: { header: string[]; rows: string[][] } | undefined;
  for (const line of markdown.split('\n')) {
    if (!line.startsWith('|')) {
      current = undefined;
      continue;
    }
    const cells = line
      .slice(1, -1)
      .split('|')
      .map((c) => c.trim());
    if (cells.every((c) => /^-+$/.test(c))) continue;
    if (!current) {
      current = { header: cells, rows: [] };
      out.push(current);
    } else current.rows.push(cells);
  }
  return out;
}

const unquote = (cell: string) => /^`([^`]+)`$/.exec(cell)?.[1];
const all = tables(doc);
/** The names the doc lists: the first cell of every table row. */
const listed = new Set(all.flatMap((t) => t.rows.map((r) => unquote(r[0]!)).filter((x) => x !== undefined)));

type Definition = { kind: string; unit: string; description: string };
const definitions: Record<string, Definition> = {
  ...semconv.METRIC_DEFINITIONS,
  ...semconv.SERVICE_METRIC_DEFINITIONS,
};
const prometheus: Record<string, string> = {
  ...semconv.PROMETHEUS_NAMES,
  ...semconv.SERVICE_PROMETHEUS_NAMES,
};
const STRUCTURED = new Set([
  'METRIC_DEFINITIONS',
  'SERVICE_METRIC_DEFINITIONS',
  'PROMETHEUS_NAMES',
  'SERVICE_PROMETHEUS_NAMES',
  'DECISION_FIELDS',
]);

/** Every name and value semconv.ts exports (string constants, list members, reason-map values). */
function semconvNames(): Map<string, string> {
  const names = new Map<string, string>();
  for (const [exportName, value] of Object.entries(semconv)) {
    if (STRUCTURED.has(exportName) || typeof value === 'function') continue;
    const leaves = typeof value === 'string' ? [value] : Array.isArray(value) ? value : Object.values(value);
    for (const leaf of leaves) if (typeof leaf === 'string') names.set(leaf, exportName);
  }
  for (const field of semconv.DECISION_FIELDS)
    names.set(`continuity.decision.<name>.${field}`, 'DECISION_FIELDS');
  for (const s of CONTINUITY_STATES) names.set(s, 'CONTINUITY_STATES');
  for (const r of ALL_REASONS) names.set(r, 'ALL_REASONS');
  for (const a of ACTIVITY_STATES) names.set(a, 'ACTIVITY_STATES');
  for (const m of Object.keys(definitions)) names.set(m, 'METRIC_DEFINITIONS');
  return names;
}

describe(DOC, () => {
  const names = semconvNames();

  it('lists every name defined in semconv.ts and states.ts', () => {
    const missing = [...names]
      .filter(([name]) => !listed.has(name))
      .map(([name, from]) => `${name} (${from})`);
    expect(missing, `add these to ${DOC}`).toEqual([]);
  });

  it('lists no name that the code does not define', () => {
    const unknown = [...listed].filter((name) => !names.has(name));
    expect(unknown, `define these in src/otel/semconv.ts or remove them from ${DOC}`).toEqual([]);
  });

  it('gives every metric its instrument, unit, Prometheus name and description, as the code does', () => {
    const rows = all.filter((t) => t.header[0] === 'Metric').flatMap((t) => t.rows);
    const documented = rows.map((r) => unquote(r[0]!));
    expect(documented.sort()).toEqual(Object.keys(definitions).sort());
    for (const [metric, kind, unit, prom, , description] of rows) {
      const name = unquote(metric!)!;
      const def = definitions[name]!;
      expect({ name, kind, unit: unquote(unit!), prom: unquote(prom!), description }).toEqual({
        name,
        kind: def.kind,
        unit: def.unit,
        prom: prometheus[name],
        description: def.description,
      });
    }
  });

  it('pairs every state with its action, most severe first', () => {
    const table = all.find((t) => t.header[0] === 'State' && t.header[1] === 'Action')!;
    expect(table.rows.map((r) => [unquote(r[0]!), unquote(r[1]!)])).toEqual(
      CONTINUITY_STATES.map((s) => [s, ACTIONS[s]]),
    );
  });
});
