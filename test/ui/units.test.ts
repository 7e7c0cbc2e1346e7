/**
 * The page's pure parts: the model's order and next steps, the history's bounds, the trace links,
 * and the `ui` configuration keys.
 */

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUNTIME as AGENT_SDK_RUNTIME } from '../../src/adapters/claude-agent-sdk/config.js';
import { RUNTIME as CLAUDE_CODE_RUNTIME } from '../../src/adapters/claude-code/config.js';
import { RUNTIME as CODEX_RUNTIME } from '../../src/adapters/codex/config.js';
import { COPILOT_RUNTIME } from '../../src/adapters/copilot/config.js';
import { GEMINI_RUNTIME } from '../../src/adapters/gemini/config.js';
import { RUNTIME as OPENCODE_RUNTIME } from '../../src/adapters/opencode/config.js';
import { QWEN_RUNTIME } from '../../src/adapters/qwen-code/config.js';
import { classify } from '../../src/classify/classify.js';
import type { Resolution, SessionView } from '../../src/correlate/types.js';
import type { Snapshot } from '../../src/decision/model.js';
import { digestValue } from '../../src/digest/digest.js';
import { loadServiceConfig } from '../../src/service/config.js';
import { BoundaryHistory } from '../../src/ui/history.js';
import type { LedgerRead } from '../../src/ui/ledger-view.js';
import {
  buildOverview,
  buildSessionDetail,
  overviewFilterQuery,
  parseOverviewFilter,
} from '../../src/ui/model.js';
import { GATED_RUNTIMES, nextStep } from '../../src/ui/next-step.js';
import { continuityPageFromConfig, traceLinker } from '../../src/ui/page.js';
import { esc, formatDuration, overviewMain } from '../../src/ui/render.js';
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
    // An SDK session seen in spans only: the approval is the app's recordApproval, not the CLI's
    // (whose ledger has no boundary of it), signed by the human's key for this boundary (the
    // passphrase asked at the app's terminal), and nothing claims its writes are blocked.
    expect(o.needsHuman[0]!.nextStep.commands[0]!.command).toBe(
      `await continuity.recordApproval("s-bad", { decision: "scope", fromDigest: "${digestValue('a')}", toDigest: "${digestValue('b')}", approvalRef: '<ticket-or-note-id>', approvedBy: '<your-id>', signer: await approverSigner("s-bad-b1") });`,
    );
    expect(o.needsHuman[0]!.nextStep.commands[0]!.label).toContain('approverSigner');
    expect(o.needsHuman[0]!.nextStep.text).toContain("Nothing blocks the agent's writes for runtime sdk");
    expect(o.sessions[1]!.nextStep.commands[0]!.command).toBe(
      'await continuity.observePost("s-pending", { scope: { value: <value> }, target: { value: <value> } });',
    );
  });

  it('offers the commands of where the evidence lives, and says a gate blocks writes only where one exists', () => {
    const bad = resolution('s-bad', 'b');
    const history = new BoundaryHistory();
    history.record([bad], 0);
    const step = (runtime: string, ledger: 'none' | 'has' | 'lacks') => {
      const v = view('s-bad', { ...bad, runtime });
      v.latest!.runtime = runtime;
      const source = {
        sessions: () => [v],
        history: (id: string) => history.of(id),
        version: () => 0,
        ...(ledger !== 'none' && {
          ledger: (): LedgerRead => ({
            ok: true,
            sessions:
              ledger === 'has'
                ? [
                    {
                      sessionId: 's-bad',
                      latestMs: -1,
                      classification: bad.classification,
                      activity: null,
                      evidence: {
                        sessionId: 's-bad',
                        boundaryId: 's-bad-b1',
                        runtime,
                        pre: bad.evidence.pre,
                        post: bad.evidence.post,
                        approvals: [],
                        approvalAttempts: [],
                        boundary: null,
                        evidenceMissing: [],
                        seqs: { pre: 1, post: 2, boundary: null, approvals: [] },
                        receipt: null,
                      },
                    },
                  ]
                : [],
          }),
        }),
      };
      return buildOverview(source, 0).needsHuman[0]!.nextStep;
    };
    const approve = `continuity approve --session s-bad --decision scope --from-digest ${digestValue('a')} --to-digest ${digestValue('b')} --ref <ticket-or-note-id> --by <your-id>`;
    // Claude Code, its evidence in the ledger this page reads: the CLI here, and the gate is real.
    const here = step('claude-code', 'has');
    expect(here.commands[0]!.command).toBe(approve);
    expect(here.text).toContain("the write gate refuses the agent's consequential writes");
    expect(here.text).not.toContain('machine where the agent runs');
    // Claude Code seen in spans only: the same command, on the agent's machine.
    for (const ledger of ['none', 'lacks'] as const) {
      const there = step('claude-code', ledger);
      expect(there.commands[0]!.command).toBe(approve);
      expect(there.commands[0]!.label).toContain('on the machine where the agent runs');
      expect(there.text).toContain('write gate refuses');
    }
    // The SDK extension in an app, seen in spans only: the app's call; no gate.
    const sdk = step('sdk', 'none');
    expect(sdk.commands[0]!.command).toMatch(/^await continuity\.recordApproval\("s-bad", /);
    expect(sdk.commands[1]!.command).toMatch(/^await continuity\.observePost\("s-bad", /);
    expect(sdk.text).toContain("Nothing blocks the agent's writes");
    // An SDK session recorded into the ledger this page reads (continuity snapshot): the CLI works.
    expect(step('sdk', 'has').commands[0]!.command).toBe(approve);
    for (const s of [here, sdk, step('codex-cli', 'none')])
      expect(s.text).not.toContain('Writes are blocked');
  });

  it('says who confirms actions after a compaction with no pre snapshot only where a gate does', () => {
    const classification = classify({ pre: null, post: null, approvals: [] } as unknown as Parameters<
      typeof classify
    >[0]);
    expect(classification.reason).toBe('pre_snapshot_missing');
    const step = (runtime: string) =>
      nextStep({ sessionId: 's-1', runtime, latest: { classification, pre: null, post: null } });
    expect(step('claude-code').text).toContain(
      'the write gate asks a human to confirm each consequential action',
    );
    expect(step('sdk').text).toContain(
      "Nothing asks a human to confirm the agent's actions for runtime sdk (it has no write gate)",
    );
    expect(step('sdk').text).not.toContain('write gate asks');
  });

  it('names as gated exactly the runtimes whose adapters have a write gate', () => {
    expect([...GATED_RUNTIMES].sort()).toEqual(
      [
        CLAUDE_CODE_RUNTIME,
        AGENT_SDK_RUNTIME,
        CODEX_RUNTIME,
        COPILOT_RUNTIME,
        GEMINI_RUNTIME,
        OPENCODE_RUNTIME,
        QWEN_RUNTIME,
      ].sort(),
    );
  });

  it('shows durations as a person reads them', () => {
    expect(formatDuration(0.000259072)).toBe('259 µs');
    expect(formatDuration(0.0421)).toBe('42 ms');
    expect(formatDuration(1.54)).toBe('1.5 s');
    expect(formatDuration(42.4)).toBe('42 s');
    expect(formatDuration(245)).toBe('4 min 05 s');
    expect(formatDuration(7380)).toBe('2 h 03 min');
    expect(formatDuration(Number.NaN)).toBe('-');
  });

  it('filters the overview by state and by runtime, and ignores a filter that is not a state or a runtime name', () => {
    const ok = resolution('s-ok', 'a');
    const bad = { ...resolution('s-bad', 'b'), runtime: 'claude-code' };
    const history = new BoundaryHistory();
    history.record([ok, bad], 0);
    const badView = view('s-bad', bad);
    badView.latest!.runtime = 'claude-code';
    const source = {
      sessions: () => [view('s-ok', ok), view('s-pending', null, true), badView],
      history: (id: string) => history.of(id),
      version: () => 1,
    };
    const f = (q: string) => buildOverview(source, 0, parseOverviewFilter(new URLSearchParams(q)));
    expect(f('').sessions.map((s) => s.sessionId)).toEqual(['s-bad', 's-pending', 's-ok']);
    expect(f('state=preserved').sessions.map((s) => s.sessionId)).toEqual(['s-ok']);
    expect(f('state=pending').sessions.map((s) => s.sessionId)).toEqual(['s-pending']);
    expect(f('runtime=sdk').sessions.map((s) => s.sessionId)).toEqual(['s-pending', 's-ok']);
    expect(f('runtime=claude-code').needsHuman.map((s) => s.sessionId)).toEqual(['s-bad']);
    expect(f('runtime=sdk').needsHuman).toEqual([]);
    expect(f('state=conflicting&runtime=sdk').sessions).toEqual([]);
    // The counts stay those of every session; the choices are every runtime seen.
    expect(f('runtime=sdk').counts.sessions).toBe(3);
    expect(f('').runtimes).toEqual(['claude-code', 'sdk']);
    expect(parseOverviewFilter(new URLSearchParams('state=<b>&runtime=/etc/passwd'))).toEqual({
      state: null,
      runtime: null,
    });
    expect(overviewFilterQuery({ state: 'conflicting', runtime: 'sdk' })).toBe(
      '?state=conflicting&runtime=sdk',
    );
    const html = overviewMain(f('state=pending'));
    expect(html).toContain('<option value="pending" selected>pending</option>');
    expect(html).toContain('1 shown (filtered)');
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
