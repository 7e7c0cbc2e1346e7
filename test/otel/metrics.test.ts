/**
 * The continuity gauges through a real MeterProvider and a cumulative metric reader, collected
 * before and after a state change. Cumulative temporality merges every collection into the
 * previous ones, so a series the callback stops observing would keep its old value forever: these
 * tests prove the gauges tell the truth after the change (a cell reads its new count or 0, a
 * session that no longer needs a human reads 0).
 */
import {
  AggregationTemporality,
  type DataPoint,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import type { NeedsHumanEntry, Resolution, SessionSummaryEntry } from '../../src/correlate/types.js';
import { activityAttributes, approvalAttributes, snapshotAttributes } from '../../src/otel/attributes.js';
import { ContinuityMetrics } from '../../src/otel/metrics.js';
import {
  ACTIVITY_STATE_UNKNOWN,
  ATTR_CONTINUITY_STATE,
  METRIC_ATTR_ACTIVITY,
  METRIC_ATTR_PRIMARY_DECISION,
  METRIC_ATTR_RUNTIME,
  METRIC_ATTR_SESSION_ID,
  METRIC_ATTR_STATE,
  METRIC_BOUNDARIES,
  METRIC_EVICTIONS,
  METRIC_MAX_CUSTOM_VALUES,
  METRIC_NEEDS_HUMAN,
  METRIC_REOBSERVATION_DURATION,
  METRIC_SESSIONS,
  METRIC_VALUE_OTHER,
  SPAN_ACTIVITY,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import { A, approval, B, snap } from '../correlate/helpers.js';
import { type Harness, harness } from './harness.js';

/** A real cumulative pipeline; `collect()` reads one metric's points after a fresh collection. */
function pipeline() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    meterProvider,
    async collect(metric: string): Promise<Array<DataPoint<number>>> {
      exporter.reset();
      await reader.forceFlush();
      for (const scope of exporter.getMetrics().at(-1)?.scopeMetrics ?? []) {
        for (const m of scope.metrics)
          if (m.descriptor.name === metric) return m.dataPoints as Array<DataPoint<number>>;
      }
      return [];
    },
    close: () => meterProvider.shutdown(),
  };
}

/** What the gauges read from, changed between collections. */
class Source {
  pendingCount = 0;
  summary: SessionSummaryEntry[] = [];
  human: NeedsHumanEntry[] = [];
  sessionSummary(): SessionSummaryEntry[] {
    return this.summary;
  }
  needsHuman(limit: number): NeedsHumanEntry[] {
    return this.human.slice(-limit);
  }
}

function problem(sessionId: string, state: 'dropped' | 'conflicting', boundaryId = 'b1'): NeedsHumanEntry {
  return {
    sessionId,
    boundaryId,
    state,
    reason: state === 'dropped' ? 'absent_after_compaction' : 'unapproved_change',
    primaryDecision: 'scope',
    runtime: 'sdk',
  };
}

const cells = (points: Array<DataPoint<number>>) =>
  Object.fromEntries(
    points.map((p) => [`${p.attributes[METRIC_ATTR_STATE]}×${p.attributes[METRIC_ATTR_ACTIVITY]}`, p.value]),
  );
const bySession = (points: Array<DataPoint<number>>) =>
  Object.fromEntries(
    points.map((p) => [
      `${p.attributes[METRIC_ATTR_SESSION_ID]}/${p.attributes[METRIC_ATTR_STATE]}`,
      p.value,
    ]),
  );

let close: (() => Promise<unknown>) | undefined;
let h: Harness | undefined;
afterEach(async () => {
  await close?.();
  await h?.close();
  close = undefined;
  h = undefined;
});

describe('ContinuityMetrics gauges under cumulative temporality', () => {
  it('reads 0 in a sessions cell that emptied, and the new count where the session went', async () => {
    const p = pipeline();
    close = p.close;
    const source = new Source();
    const m = new ContinuityMetrics(source, { meterProvider: p.meterProvider });
    expect(m.ensure()).toBe(true);
    source.summary = [
      { state: 'conflicting', activity: 'working', sessions: 2 },
      { state: 'preserved', activity: 'idle', sessions: 1 },
    ];
    expect(cells(await p.collect(METRIC_SESSIONS))).toEqual({
      'conflicting×working': 2,
      'preserved×idle': 1,
    });

    source.summary = [
      { state: 'conflicting', activity: 'working', sessions: 1 },
      { state: 'approved_change', activity: 'working', sessions: 1 },
      { state: 'preserved', activity: 'idle', sessions: 1 },
    ];
    expect(cells(await p.collect(METRIC_SESSIONS))).toEqual({
      'conflicting×working': 1,
      'approved_change×working': 1,
      'preserved×idle': 1,
    });

    source.summary = [
      { state: 'approved_change', activity: 'working', sessions: 2 },
      { state: 'preserved', activity: 'idle', sessions: 1 },
    ];
    const truth = { 'conflicting×working': 0, 'approved_change×working': 2, 'preserved×idle': 1 };
    expect(cells(await p.collect(METRIC_SESSIONS))).toEqual(truth);
    // And it stays the truth on the next collection, nothing changed.
    expect(cells(await p.collect(METRIC_SESSIONS))).toEqual(truth);
  });

  it('reads 0 for a session that no longer needs a human, and 1 for a new problem of the same session', async () => {
    const p = pipeline();
    close = p.close;
    const source = new Source();
    new ContinuityMetrics(source, { meterProvider: p.meterProvider }).ensure();
    source.human = [problem('s1', 'conflicting'), problem('s2', 'dropped')];
    expect(bySession(await p.collect(METRIC_NEEDS_HUMAN))).toEqual({ 's1/conflicting': 1, 's2/dropped': 1 });

    // s1 was approved and re-observed: no longer listed.
    source.human = [problem('s2', 'dropped')];
    expect(bySession(await p.collect(METRIC_NEEDS_HUMAN))).toEqual({ 's1/conflicting': 0, 's2/dropped': 1 });
    // The SDK keeps exporting the 0 (observed once): still "not needing a human".
    expect(bySession(await p.collect(METRIC_NEEDS_HUMAN))).toEqual({ 's1/conflicting': 0, 's2/dropped': 1 });

    // s1's next boundary drops a decision: a new series at 1, the old one stays 0.
    source.human = [problem('s2', 'dropped'), problem('s1', 'dropped', 'b2')];
    expect(bySession(await p.collect(METRIC_NEEDS_HUMAN))).toEqual({
      's1/conflicting': 0,
      's1/dropped': 1,
      's2/dropped': 1,
    });
  });

  it('reads 0 for a session pushed out of the most recent maxNeedsHumanSeries', async () => {
    const p = pipeline();
    close = p.close;
    const source = new Source();
    new ContinuityMetrics(source, { meterProvider: p.meterProvider, maxNeedsHumanSeries: 2 }).ensure();
    source.human = [problem('s1', 'dropped'), problem('s2', 'dropped')];
    expect(bySession(await p.collect(METRIC_NEEDS_HUMAN))).toEqual({ 's1/dropped': 1, 's2/dropped': 1 });
    source.human.push(problem('s3', 'conflicting'));
    expect(bySession(await p.collect(METRIC_NEEDS_HUMAN))).toEqual({
      's1/dropped': 0,
      's2/dropped': 1,
      's3/conflicting': 1,
    });
  });

  it('through the processor: conflicting, then approved_change after an approval and a re-observation', async () => {
    h = harness();
    const ctx = { runtime: 'sdk', boundaryId: 'b1' };
    h.emit(SPAN_ACTIVITY, activityAttributes('s', 'working'));
    h.emit(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snap('s', '2026-11-30T10:00:00Z'), ctx));
    const post = h.emit(
      SPAN_COMPACTION_POST,
      snapshotAttributes('post', snap('s', '2026-11-30T10:05:00Z', B), ctx),
    );
    expect(post.attributes[ATTR_CONTINUITY_STATE]).toBe('conflicting');
    expect(cells((await h.points(METRIC_SESSIONS)) as Array<DataPoint<number>>)).toEqual({
      'conflicting×working': 1,
    });
    expect(bySession((await h.points(METRIC_NEEDS_HUMAN)) as Array<DataPoint<number>>)).toEqual({
      's/conflicting': 1,
    });

    h.emit(SPAN_DECISION_APPROVAL, approvalAttributes('s', approval(A, B, 'ap-7', '2026-11-30T10:06:00Z')));
    const again = h.emit(
      SPAN_COMPACTION_POST,
      snapshotAttributes('post', snap('s', '2026-11-30T10:07:00Z', B), ctx),
    );
    expect(again.attributes[ATTR_CONTINUITY_STATE]).toBe('approved_change');
    expect(cells((await h.points(METRIC_SESSIONS)) as Array<DataPoint<number>>)).toEqual({
      'conflicting×working': 0,
      'approved_change×working': 1,
    });
    expect(bySession((await h.points(METRIC_NEEDS_HUMAN)) as Array<DataPoint<number>>)).toEqual({
      's/conflicting': 0,
    });
  });
});

describe('ContinuityMetrics labels clients choose', () => {
  it('keeps known runtimes and well-known decisions, the first few custom names, and counts the rest as other', async () => {
    const p = pipeline();
    const metrics = new ContinuityMetrics(new Source(), { meterProvider: p.meterProvider });
    const resolution = (runtime: string, primaryDecision: string): Resolution => ({
      sessionId: 's',
      boundaryId: null,
      runtime,
      trigger: 'auto',
      classification: {
        state: 'dropped',
        action: 'pause_and_restore',
        reason: 'absent_after_compaction',
        primaryDecision,
        decisions: {},
      } as unknown as Resolution['classification'],
      cause: 'post',
      resolvedAtPost: true,
      preSpan: null,
      postSpan: null,
      reobservationSeconds: null,
      approvalCount: 0,
      evidenceMissing: null,
      evidence: { pre: null, post: null, approvals: [] },
      activity: ACTIVITY_STATE_UNKNOWN,
    });
    metrics.record(resolution('claude-code', 'approval_boundary'));
    for (let i = 0; i < 500; i++) metrics.record(resolution(`client-runtime-${i}`, `decision_${i}`));
    metrics.record(resolution('codex-cli', 'scope'));
    const points = await p.collect(METRIC_BOUNDARIES);
    const runtimes = new Set(points.map((pt) => String(pt.attributes[METRIC_ATTR_RUNTIME])));
    const decisions = new Set(points.map((pt) => String(pt.attributes[METRIC_ATTR_PRIMARY_DECISION])));
    expect(runtimes.size).toBe(2 + METRIC_MAX_CUSTOM_VALUES + 1);
    expect(runtimes).toContain('claude-code');
    expect(runtimes).toContain('codex-cli');
    expect(runtimes).toContain('client-runtime-0');
    expect(runtimes).not.toContain(`client-runtime-${METRIC_MAX_CUSTOM_VALUES}`);
    expect(runtimes).toContain(METRIC_VALUE_OTHER);
    expect(decisions.size).toBe(2 + METRIC_MAX_CUSTOM_VALUES + 1);
    expect(decisions).toContain('scope');
    const other = points.filter((pt) => pt.attributes[METRIC_ATTR_RUNTIME] === METRIC_VALUE_OTHER);
    expect(other.reduce((n, pt) => n + pt.value, 0)).toBe(500 - METRIC_MAX_CUSTOM_VALUES);
    await p.close();
  });
});

describe('ContinuityMetrics.recordAll', () => {
  it('exports what recording each resolution alone exports: counts, durations, evictions', async () => {
    const make = (i: number): Resolution => ({
      sessionId: `s${i}`,
      boundaryId: null,
      runtime: ['sdk', 'claude-code', null][i % 3] ?? null,
      trigger: i % 2 ? 'auto' : null,
      classification: {
        state: i % 4 ? 'preserved' : 'dropped',
        action: 'continue',
        reason: i % 4 ? 'all_preserved' : 'absent_after_compaction',
        primaryDecision: i % 4 ? null : 'scope',
        decisions: {},
      } as unknown as Resolution['classification'],
      cause: i % 7 === 0 ? 'evicted' : 'post',
      resolvedAtPost: true,
      preSpan: null,
      postSpan: null,
      reobservationSeconds: i % 5 === 0 ? null : i * 0.7,
      approvalCount: 0,
      evidenceMissing: null,
      evidence: { pre: null, post: null, approvals: [] },
      activity: ACTIVITY_STATE_UNKNOWN,
    });
    const resolutions = Array.from({ length: 60 }, (_, i) => make(i));
    const exported = async (recordWith: (m: ContinuityMetrics) => void) => {
      const p = pipeline();
      recordWith(new ContinuityMetrics(new Source(), { meterProvider: p.meterProvider }));
      const out: Record<string, unknown> = {};
      for (const name of [METRIC_BOUNDARIES, METRIC_REOBSERVATION_DURATION, METRIC_EVICTIONS]) {
        const points = await p.collect(name);
        out[name] = points
          .map((pt) => ({ attributes: pt.attributes, value: pt.value }))
          .sort((a, b) => JSON.stringify(a.attributes).localeCompare(JSON.stringify(b.attributes)));
      }
      await p.close();
      return out;
    };
    const one = await exported((m) => {
      for (const r of resolutions) m.record(r);
    });
    const all = await exported((m) => {
      m.recordAll(resolutions.slice(0, 25));
      m.recordAll(resolutions.slice(25));
    });
    expect(all).toEqual(one);
    // Something was recorded in each: the comparison is not of empty exports.
    expect((one[METRIC_BOUNDARIES] as unknown[]).length).toBeGreaterThan(3);
    expect((one[METRIC_REOBSERVATION_DURATION] as unknown[]).length).toBeGreaterThan(1);
    expect((one[METRIC_EVICTIONS] as unknown[]).length).toBeGreaterThan(1);
  });
});
