/**
 * The continuity page served by a real `continuity serve` child process: what it may show and to
 * whom. Secret markers are planted where a leak could come from (decision values in the Claude
 * Code task record, the compaction summary, custom instructions and transcript path of the real
 * hooks' payloads, foreign span attributes, resource attributes, ids shaped like paths and
 * tokens, the bearer token, the state directory), then every byte of every page, fragment, JSON
 * endpoint, stylesheet, script and event stream is scanned for them.
 */
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { digestValue } from '../../src/digest/digest.js';
import { approvalAttributes, snapshotAttributes } from '../../src/otel/attributes.js';
import { SPAN_COMPACTION_POST, SPAN_COMPACTION_PRE, SPAN_DECISION_APPROVAL } from '../../src/otel/semconv.js';
import { hook, makeWorld, runCli, type World, writeTaskRecord } from '../claude-code/harness.js';
import { type ServeProcess, startServe, tempDir, waitFor } from '../service/harness.js';
import { testApprover } from '../support/approver.js';
import { firstEvent, get, sendSpans } from './harness.js';

const TOKEN = 'SECRET-TOKEN-MARK-7f3a91c2d4e5';
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** Every marker planted; none may appear in any byte the page serves. */
const MARKERS = [
  'RAW-VALUE-MARK',
  'SECRET-SUMMARY-MARK',
  'CUSTOM-INSTRUCTIONS-MARK',
  'SECRET-PATH-MARK',
  'FOREIGN-ATTR-MARK',
  'RESOURCE-MARK',
  'SECRET-TOKEN-MARK',
  'SECRET-STATEDIR-MARK',
  'ghp_',
];
/** A session id that fits the opaque-id pattern but looks like a home path. */
const PATH_SESSION = 'home/SECRET-PATH-MARK/agent';
/** An approval reference that looks like a GitHub token. */
const TOKEN_REF = 'ghp_SECRETTOKENMARKabcdefghijklmnop0123';

const DECISIONS = {
  scope: { repository: 'acme/RAW-VALUE-MARK-scope', paths: ['services/RAW-VALUE-MARK'] },
  approval_boundary: { requires_human: ['deploy', 'RAW-VALUE-MARK'] },
  acceptance_test: { command: 'npm test -- RAW-VALUE-MARK', must_pass: true },
};
const WIDER = {
  ...DECISIONS,
  scope: { repository: 'acme/RAW-VALUE-MARK-scope', paths: ['RAW-VALUE-MARK-wider'] },
};

let serve: ServeProcess;
let world: World;

function setEndpoint(w: World, base: string): void {
  w.env.CONTINUITY_OTLP_ENDPOINT = base;
  w.shellEnv.CONTINUITY_OTLP_ENDPOINT = base;
}

const APPROVER = testApprover();

const key = (sessionId: string) => createHash('sha256').update(sessionId).digest('hex').slice(0, 16);

beforeAll(async () => {
  const dir = tempDir('ui-page-SECRET-STATEDIR-MARK-');
  world = makeWorld('http://127.0.0.1:9', { CONTINUITY_OTLP_HEADERS: `authorization=Bearer ${TOKEN}` });
  serve = await startServe({
    dir,
    config: {
      server: { bearerToken: TOKEN },
      state: { dir: join(dir, 'SECRET-STATEDIR-MARK') },
      correlation: {
        postWindows: { 'claude-code': '30m', sdk: '30m' },
        approverKeys: [APPROVER.publicKeyHex],
      },
      ui: {
        traceLink: { template: 'http://127.0.0.1:3000/explore?trace={traceId}&span={spanId}' },
        ledger: world.ledger,
      },
    },
    env: { OTEL_RESOURCE_ATTRIBUTES: 'process.command_line=RESOURCE-MARK' },
  });
  setEndpoint(world, serve.base);

  // The real Claude Code hooks: values in the task record, a summary, instructions, a transcript path.
  writeTaskRecord(world, Object.fromEntries(Object.entries(DECISIONS).map(([n, v]) => [n, { value: v }])));
  const transcript = `/home/SECRET-PATH-MARK/.claude/projects/p/cc-1.jsonl`;
  await hook(world, 'cc-1', 'PreCompact', {
    trigger: 'manual',
    custom_instructions: 'CUSTOM-INSTRUCTIONS-MARK keep it short',
    transcript_path: transcript,
  });
  await hook(world, 'cc-1', 'PostCompact', {
    trigger: 'manual',
    compact_summary: 'SECRET-SUMMARY-MARK the summary of everything',
    transcript_path: transcript,
  });
  await hook(world, 'cc-1', 'PostToolUse', {
    tool_name: 'Read',
    tool_input: { file_path: '/home/SECRET-PATH-MARK/x' },
  });
  const observed = await runCli(['observe', '--session', 'cc-1', '--decisions', '-'], {
    input: JSON.stringify(WIDER),
    env: world.shellEnv,
    cwd: world.project,
  });
  expect(observed.status, observed.stderr).toBe(0);

  // Hand-made spans: hostile ids, foreign attributes carrying the markers.
  const at = new Date(Date.now() - 60_000).toISOString();
  const now = new Date().toISOString();
  const snap = (capturedAt: string, target: string) => ({
    sessionId: PATH_SESSION,
    capturedAt,
    normalizerVersion: 1,
    decisions: {
      target: { digest: digestValue(target), revision: 1, observedAt: capturedAt },
      scope: { digest: digestValue('RAW-VALUE-MARK scope'), revision: 1, observedAt: capturedAt },
      acceptance_test: { digest: digestValue('RAW-VALUE-MARK test'), revision: 1, observedAt: capturedAt },
    },
  });
  const foreign = {
    'agent.compaction.summary': 'FOREIGN-ATTR-MARK summary',
    'code.filepath': '/home/SECRET-PATH-MARK/a.ts',
  };
  const boundary = { boundaryId: 'home/SECRET-PATH-MARK/b1', runtime: 'sdk' };
  await sendWithAuth([
    {
      name: SPAN_COMPACTION_PRE,
      attributes: { ...snapshotAttributes('pre', snap(at, 'RAW-VALUE-MARK main'), boundary), ...foreign },
    },
    {
      name: SPAN_DECISION_APPROVAL,
      // Signed by the approver serve trusts, so the page shows it (and withholds its ref).
      attributes: approvalAttributes(
        PATH_SESSION,
        APPROVER.sign(
          {
            decision: 'target',
            fromDigest: digestValue('RAW-VALUE-MARK main'),
            toDigest: digestValue('RAW-VALUE-MARK release'),
            approvalRef: TOKEN_REF,
            approvedBy: 'home/SECRET-PATH-MARK',
            approvedAt: now,
          },
          PATH_SESSION,
          boundary.boundaryId,
        ),
      ),
    },
    {
      name: SPAN_COMPACTION_POST,
      attributes: {
        ...snapshotAttributes('post', snap(now, 'RAW-VALUE-MARK release'), boundary),
        ...foreign,
      },
    },
  ]);
  await waitFor('both sessions on the page', async () => {
    const r = await get(`${serve.base}/ui/api/overview`, AUTH);
    const o = JSON.parse(r.body.toString()) as { sessions: Array<{ key: string; state: string }> };
    return (
      o.sessions.some((s) => s.key === key(PATH_SESSION)) && o.sessions.some((s) => s.key === key('cc-1'))
    );
  });
}, 120_000);

afterAll(async () => {
  await serve?.stop();
  world?.dispose();
});

/** Sends spans with the bearer token (the SDK exporter's headers option). */
async function sendWithAuth(spans: Parameters<typeof sendSpans>[1]): Promise<void> {
  await sendSpans(serve.otlp, spans, AUTH);
}

describe('the continuity page never shows a value, a path, a summary or a key', () => {
  it('holds none of the planted markers in any byte of any page, fragment, JSON endpoint or stream', async () => {
    const overview = JSON.parse((await get(`${serve.base}/ui/api/overview`, AUTH)).body.toString()) as {
      sessions: Array<{ key: string; sessionId: string; state: string }>;
    };
    expect(overview.sessions.length).toBe(2);
    const paths = [
      '/',
      '/ui',
      '/ui/page.css',
      '/ui/live.js',
      '/ui/favicon.svg',
      '/ui/api/overview',
      '/ui/fragment/overview',
      '/ui/session?key=0000000000000000',
      '/ui/nothing-here',
    ];
    for (const s of overview.sessions)
      for (const p of ['/ui/session', '/ui/api/session', '/ui/fragment/session'])
        paths.push(`${p}?key=${s.key}`);
    const served: Buffer[] = [];
    for (const p of paths) {
      const r = await get(`${serve.base}${p}`, AUTH);
      expect([200, 302, 404], p).toContain(r.status);
      served.push(Buffer.from(JSON.stringify(r.headers)), r.body);
    }
    // Without the token: the sign-in page and the refusals.
    for (const p of ['/ui', '/ui/api/overview', '/ui/session?key=x']) {
      const r = await get(`${serve.base}${p}`);
      expect(r.status).toBe(401);
      served.push(Buffer.from(JSON.stringify(r.headers)), r.body);
    }
    served.push(await firstEvent(`${serve.base}/ui/events`, AUTH));
    const bytes = Buffer.concat(served);
    const text = bytes.toString('latin1');
    for (const m of MARKERS) expect(text.includes(m), m).toBe(false);
    expect(text.includes(tmpdir())).toBe(false);
    // What is shown instead: the withheld markers, and the sessions themselves.
    expect(text).toContain('(withheld: looks like absolute path)');
    // A secret-shaped approval reference is refused where the span is read (the opaque-id rule,
    // SECRET_SHAPES): it never reaches the page, not even as a withheld marker.
    expect(text).not.toContain(TOKEN_REF);
    expect(text).toContain('cc-1');
    expect(text).toContain(digestValue(DECISIONS.scope));
    expect(text).toMatch(/http:\/\/127\.0\.0\.1:3000\/explore\?trace=[0-9a-f]{32}&amp;span=[0-9a-f]{16}/);
  });

  it('shows no command for a session whose id is withheld, and the exact commands for one that is not', async () => {
    const hostile = JSON.parse(
      (await get(`${serve.base}/ui/api/session?key=${key(PATH_SESSION)}`, AUTH)).body.toString(),
    );
    expect(hostile.sessionId).toBe('(withheld: looks like absolute path)');
    expect(hostile.nextStep.commands).toEqual([]);
    const cc = JSON.parse(
      (await get(`${serve.base}/ui/api/session?key=${key('cc-1')}`, AUTH)).body.toString(),
    );
    expect(cc.state).toBe('conflicting');
    expect(cc.runtime).toBe('claude-code');
    expect(cc.source).toBe('both');
    expect(cc.ledger).toMatchObject({
      state: 'conflicting',
      reason: 'unapproved_change',
      runtime: 'claude-code',
    });
    expect(cc.nextStep.commands[0].command).toBe(
      `continuity approve --session cc-1 --decision scope --from-digest ${digestValue(DECISIONS.scope)} --to-digest ${digestValue(WIDER.scope)} --ref <ticket-or-note-id> --by <your-id>`,
    );
  });
});

describe('who may see the continuity page', () => {
  it('refuses a non-loopback Host name (DNS rebinding) and wrong methods', async () => {
    expect((await get(`${serve.base}/ui`, { ...AUTH, host: 'attacker.example' })).status).toBe(403);
    expect(
      (await get(`${serve.base}/ui`, { ...AUTH, host: `localhost:${new URL(serve.base).port}` })).status,
    ).toBe(200);
    expect((await get(`${serve.base}/ui`, AUTH, 'DELETE')).status).toBe(405);
    expect((await get(`${serve.base}/ui/login`, AUTH, 'GET')).status).toBe(405);
  });

  it('takes the bearer token as a header, never as a query', async () => {
    expect((await get(`${serve.base}/ui/api/overview?token=${TOKEN}`)).status).toBe(401);
    expect(
      (await get(`${serve.base}/ui/api/overview`, { authorization: 'Bearer wrong-token-0000000000' })).status,
    ).toBe(401);
    expect((await get(`${serve.base}/ui/api/overview`, AUTH)).status).toBe(200);
  });

  it('serves the page on the metrics listener when metrics has its own port, and not at all when disabled', async () => {
    const split = await startServe({ config: { metrics: { port: 0 } } });
    const off = await startServe({ config: { ui: { enabled: false } } });
    try {
      expect((await get(`${split.metrics.replace('/metrics', '/ui')}`)).status).toBe(200);
      expect((await get(`${split.base}/ui`)).status).toBe(404);
      expect((await get(`${off.base}/ui`)).status).toBe(404);
      expect(off.stderr()).not.toContain('"ui"');
    } finally {
      await split.stop();
      await off.stop();
    }
  });
});
