/**
 * The page's pure parts: the model's order and next steps, the history's bounds, the trace links,
 * and the `ui` configuration keys.
 */

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { classify } from '../../src/classify/classify.js';
import type { Resolution, SessionView } from '../../src/correlate/types.js';
import type { Snapshot } from '../../src/decision/model.js';
import { digestValue } from '../../src/digest/digest.js';
import { loadServiceConfig } from '../../src/service/config.js';
import { BoundaryHistory } from '../../src/ui/history.js';
import { buildOverview, buildSessionDetail } from '../../src/ui/model.js';
import { continuityPageFromConfig, traceLinker } from '../../src/ui/page.js';
import { esc } from '../../src/ui/render.js';
import { sessionKey } from '../../src/ui/shown.js';
import { tempDir } from '../service/harness.js';

const T0 = '2026-11-30T10:00:00Z';
const T1 = '2026-11-30T10:05:00Z';
const snap = (sessionId: string, at: string, scope: string): Snapshot => ({
  sessionId,
  capturedAt: at,
  normalizerVersion: 1,
  decisions: {
    scope: { digest: digestValue(scope), revision: 1, observedAt: at },
    target: { digest: digestValue('main'), revision: 1, observedAt: at },
  },
});

function resolution(sessionId: string, scopeAfter: string): Resolution {
  const pre = snap(sessionId, T0, 'a');
  const post = snap(sessionId, T1, scopeAfter);
  return {
    sessionId,
    boundaryId: `${sessionId}-b1`,
    runtime: 'sdk',
    trigger: 'auto',
    classification: classify({ pre, post }),
    cause: 'post',
    resolvedAtPost: true,
    preSpan: { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) },
    postSpan: { traceId: 'c'.repeat(32), spanId: 'd'.repeat(16) },
    reobservationSeconds: 300,
    approvalCount: 0,
    evidenceMissing: null,
    activity: 'working',
    evidence: { pre, post, approvals: [] },
  };
}

function view(sessionId: string, r: Resolution | null, pending = false): SessionView {
  return {
    sessionId,
    activity: 'working',
    touchedAtMs: 0,
    latest: r && {
      boundaryId: r.boundaryId,
      state: r.classification.state,
      reason: r.classification.reason,
      primaryDecision: r.classification.primaryDecision,
      runtime: r.runtime,
    },
    pending: pending
      ? {
          boundaryId: 'p1',
          runtime: 'sdk',
          trigger: null,
          pre: snap(sessionId, T0, 'a'),
          evidenceMissing: null,
          preSpan: null,
          openedAtMs: 0,
          deadlineMs: 120_000,
        }
      : null,
  };
}

describe('the page model', () => {
  it('lists the sessions needing a human first, then unverified, pending, and the rest', () => {
    const ok = resolution('s-ok', 'a');
    const bad = resolution('s-bad', 'b');
    const history = new BoundaryHistory();
    history.record([ok, bad], 0);
    const o = buildOverview(
      {
        sessions: () => [view('s-ok', ok), view('s-pending', null, true), view('s-bad', bad)],
        history: (id) => history.of(id),
        version: () => 7,
      },
      0,
    );
    expect(o.sessions.map((s) => [s.sessionId, s.state])).toEqual([
      ['s-bad', 'conflicting'],
      ['s-pending', 'pending'],
      ['s-ok', 'preserved'],
    ]);
    expect(o.needsHuman.map((s) => s.sessionId)).toEqual(['s-bad']);
    expect(o.counts).toMatchObject({ sessions: 3, needsHuman: 1, pending: 1 });
    expect(o.version).toBe(7);
    expect(o.needsHuman[0]!.nextStep.commands[0]!.command).toBe(
      `continuity approve --session s-bad --decision scope --from-digest ${digestValue('a')} --to-digest ${digestValue('b')} --ref <ticket-or-note-id> --by <your-id>`,
    );
    expect(o.sessions[1]!.nextStep.commands[0]!.command).toContain('continuity observe --session s-pending');
  });

  it("groups a session's resolutions by boundary, newest first, with links to both traces (pre and post recorded in two)", () => {
    const history = new BoundaryHistory();
    const first = resolution('s', 'b');
    const again = { ...resolution('s', 'a'), cause: 'reobserved' as const };
    history.record([first], 1_000);
    history.record([again], 2_000);
    const d = buildSessionDetail(
      { sessions: () => [view('s', again)], history: (id) => history.of(id), version: () => 0 },
      sessionKey('s'),
      traceLinker({ jaeger: 'http://127.0.0.1:16686/' }),
    )!;
    expect(d.boundaries).toHaveLength(1);
    expect(d.boundaries[0]!.resolutions.map((r) => [r.state, r.cause])).toEqual([
      ['preserved', 'reobserved'],
      ['conflicting', 'post'],
    ]);
    expect(d.boundaries[0]!.traces.map((t) => t.href)).toEqual([
      `http://127.0.0.1:16686/trace/${'a'.repeat(32)}?uiFind=${'b'.repeat(16)}`,
      `http://127.0.0.1:16686/trace/${'c'.repeat(32)}?uiFind=${'d'.repeat(16)}`,
    ]);
  });

  it("links once to a boundary's trace when its pre and post spans share it (one trace per boundary)", () => {
    const history = new BoundaryHistory();
    const r = resolution('s', 'a');
    const oneTrace = { ...r, postSpan: { traceId: r.preSpan!.traceId, spanId: 'd'.repeat(16) } };
    history.record([oneTrace], 1_000);
    const d = buildSessionDetail(
      { sessions: () => [view('s', oneTrace)], history: (id) => history.of(id), version: () => 0 },
      sessionKey('s'),
      traceLinker({ jaeger: 'http://127.0.0.1:16686' }),
    )!;
    // The trace opens at its root, the pre span; the post is in the same view.
    expect(d.boundaries[0]!.traces.map((t) => [t.side, t.href])).toEqual([
      ['pre', `http://127.0.0.1:16686/trace/${'a'.repeat(32)}?uiFind=${'b'.repeat(16)}`],
    ]);
  });

  it('keeps the history bounded in sessions and entries', () => {
    const h = new BoundaryHistory({ maxSessions: 2, maxEntriesPerSession: 3 });
    for (let i = 0; i < 5; i++) h.record([resolution('a', 'a')], i);
    h.record([resolution('b', 'a')], 5);
    h.record([resolution('c', 'a')], 6);
    expect(h.of('a')).toEqual([]);
    expect(h.of('b')).toHaveLength(1);
    expect(h.version).toBe(7);
    const k = new BoundaryHistory({ maxEntriesPerSession: 3 });
    for (let i = 0; i < 5; i++) k.record([resolution('a', 'a')], i);
    expect(k.of('a').map((e) => e.seq)).toEqual([3, 4, 5]);
  });

  it('escapes every dynamic string', () => {
    expect(esc(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});

describe('ui configuration', () => {
  const writeYaml = (yaml: string) => {
    const file = join(tempDir('ui-config-'), 'c.yaml');
    writeFileSync(file, yaml);
    return file;
  };
  const load = (yaml: string) => {
    const file = writeYaml(yaml);
    return () => loadServiceConfig({ file, env: {} });
  };

  it('defaults to on, loopback only, no trace link', () => {
    expect(loadServiceConfig({ env: {} }).ui).toEqual({
      enabled: true,
      remote: false,
      traceLink: {},
      maxSessions: 1000,
    });
  });

  it('refuses two trace links, a template without {traceId}, and credentials in a link', () => {
    expect(load('ui:\n  traceLink:\n    jaeger: http://j:16686\n    tempo: http://t:3200\n')).toThrow(
      /ui\.traceLink\.tempo: set one of/,
    );
    expect(load('ui:\n  traceLink:\n    template: http://g/explore\n')).toThrow(
      /ui\.traceLink\.template: expected a URL template with \{traceId\}/,
    );
    expect(load('ui:\n  traceLink:\n    jaeger: http://user:key@j:16686\n')).toThrow(/without user:password/);
    expect(load('ui:\n  remot: true\n')).toThrow(/ui\.remot: unknown key/);
  });

  it('builds no page when disabled, and warns when remote clients may see it without a token', () => {
    const warned: string[] = [];
    const parts = (checkToken?: (t: string) => boolean) => ({
      source: { sessions: () => [] },
      checkToken,
      env: {},
      warn: (m: string) => warned.push(m),
    });
    const ui = (yaml: string) => loadServiceConfig({ file: writeYaml(yaml), env: {} }).ui;
    expect(continuityPageFromConfig(ui('ui:\n  enabled: false\n'), parts())).toBeUndefined();
    const guarded = continuityPageFromConfig(
      ui('ui:\n  remote: true\n  ledger: false\n'),
      parts(() => false),
    );
    expect(warned).toEqual([]);
    guarded?.close();
    const open = continuityPageFromConfig(ui('ui:\n  remote: true\n  ledger: false\n'), parts());
    expect(open).toBeDefined();
    expect(warned).toEqual([
      'ui.remote is set without a bearer token: the continuity page is open to anyone who can reach it',
    ]);
    open?.close();
  });

  it('builds Tempo and template links', () => {
    const span = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) };
    expect(traceLinker({ tempo: 'http://127.0.0.1:3200' })!(span)).toBe(
      `http://127.0.0.1:3200/api/traces/${'a'.repeat(32)}`,
    );
    expect(traceLinker({ template: 'https://g/x?t={traceId}&s={spanId}' })!(span)).toBe(
      `https://g/x?t=${'a'.repeat(32)}&s=${'b'.repeat(16)}`,
    );
    expect(traceLinker({})).toBeUndefined();
  });
});
