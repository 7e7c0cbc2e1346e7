/**
 * docs/alerting.md's metric table is generated from src/otel/semconv.ts
 * (scripts/gen-alerting-labels.mjs): the label names people write PromQL from are the names the
 * service exports. Runs the generator's check on the built module (`npm test` builds first).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { METRIC_ATTRIBUTES, PROMETHEUS_NAMES, prometheusLabel } from '../../src/otel/semconv.js';

const SCRIPT = new URL('../../scripts/gen-alerting-labels.mjs', import.meta.url).pathname;
const DOC = new URL('../../docs/alerting.md', import.meta.url).pathname;

describe('docs/alerting.md metric table', () => {
  it('is what scripts/gen-alerting-labels.mjs writes from semconv.ts', () => {
    const r = spawnSync(process.execPath, [SCRIPT, '--check'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
  });

  it('names the labels as Prometheus has them: continuity_state, never a bare state', () => {
    const doc = readFileSync(DOC, 'utf8');
    const row = doc
      .split('\n')
      .find((l) => l.startsWith(`| \`${PROMETHEUS_NAMES['continuity.boundaries']}\``));
    expect(row).toBeDefined();
    for (const key of METRIC_ATTRIBUTES['continuity.boundaries']) {
      expect(row).toContain(`\`${prometheusLabel(key)}\``);
    }
    expect(row).not.toMatch(/`(state|runtime|trigger|reason)`/);
  });
});
