/**
 * `continuity snapshot` and `continuity approve` export their spans, through real child processes
 * and a real OTLP/HTTP receiver: only when an endpoint is configured, digests only, best effort
 * (a dead endpoint never changes the exit code; the request is spooled and delivered by the next
 * run), and with the CONTINUITY_OTLP_* settings the Claude Code hooks use.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit-codes.js';
import { digestValue } from '../../src/digest/digest.js';
import {
  ATTR_APPROVAL_FROM_DIGEST,
  ATTR_APPROVAL_REF,
  ATTR_APPROVAL_TO_DIGEST,
  ATTR_BOUNDARY_ID,
  ATTR_DECISION_NAMES,
  ATTR_GEN_AI_CONVERSATION_COMPACTED,
  ATTR_RUNTIME,
  ATTR_SESSION_ID,
  ATTR_TRIGGER,
  decisionAttr,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import { decodeTraceRequest } from '../../src/otlp/index.js';
import {
  bytesUnder,
  deadEndpoint,
  makePlace,
  type Place,
  type Receiver,
  runCli,
  spansOf,
  spooled,
  startReceiver,
} from './harness.js';

// Every raw value carries a marker that must never appear in a file or a request body.
const PRE = {
  scope: { repository: 'acme/RAW-SCOPE-7f3a', paths: ['services/RAW-PATH-91c2'] },
  target: 'release/RAW-TARGET-55e1',
  acceptance_test: { command: 'npm test -- RAW-TEST-0d4b', must_pass: true },
};
const POST = { ...PRE, scope: { repository: 'acme/RAW-SCOPE-7f3a', paths: ['services/RAW-WIDER-3b8e'] } };
const RAW = /RAW-/;

let place: Place;
let receiver: Receiver;

beforeEach(async () => {
  place = makePlace();
  receiver = await startReceiver();
});
afterEach(async () => {
  await receiver.close();
  place.dispose();
});

function snapshot(
  session: string,
  phase: 'pre' | 'post',
  decisions: unknown,
  env: NodeJS.ProcessEnv,
  extra: string[] = [],
) {
  const args = ['snapshot', '--session', session, '--phase', phase, '--decisions', '-', ...extra];
  if (phase === 'pre') args.push('--runtime', 'shell-agent', '--trigger', 'auto');
  return runCli(args, { input: JSON.stringify(decisions), env, cwd: place.dir });
}

function approve(session: string, env: NodeJS.ProcessEnv, extra: string[] = []) {
  return runCli(
    [
      'approve',
      '--session',
      session,
      '--decision',
      'scope',
      '--from',
      JSON.stringify(PRE.scope),
      '--to',
      JSON.stringify(POST.scope),
      '--ref',
      'CHG-42',
      '--by',
      'reviewer-7',
      ...extra,
    ],
    { env, cwd: place.dir },
  );
}

describe('recording commands without an endpoint', () => {
  it('send nothing, spool nothing and say nothing', async () => {
    const env = place.env();
    const pre = await snapshot('quiet-1', 'pre', PRE, env);
    expect(pre.status, pre.stderr).toBe(EXIT.ok);
    expect((await snapshot('quiet-1', 'post', POST, env)).status).toBe(EXIT.ok);
    const ok = await approve('quiet-1', env);
    expect(ok.status, ok.stderr).toBe(EXIT.ok);
    expect(pre.stderr + ok.stderr).toBe('');
    expect(existsSync(place.ledger)).toBe(true);
    expect(existsSync(place.spool)).toBe(false);
    expect(receiver.requests).toHaveLength(0);
  });

  it('send nothing with CONTINUITY_EXPORT=off, even with an endpoint set', async () => {
    const env = place.env({ CONTINUITY_OTLP_ENDPOINT: receiver.endpoint, CONTINUITY_EXPORT: 'off' });
    expect((await snapshot('quiet-2', 'pre', PRE, env)).status).toBe(EXIT.ok);
    expect((await approve('quiet-2', env)).status).toBe(EXIT.ok);
    expect(receiver.requests).toHaveLength(0);
    expect(existsSync(place.spool)).toBe(false);
  });

  it('refuse a bad --otlp-endpoint before recording anything (exit 2)', async () => {
    const r = await snapshot('quiet-3', 'pre', PRE, place.env(), ['--otlp-endpoint', 'ftp://127.0.0.1:21']);
    expect(r.status).toBe(EXIT.badInput);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/--otlp-endpoint: expected an http\(s\) URL/);
    expect(existsSync(place.ledger)).toBe(false);
  });
});

describe('recording commands with an endpoint', () => {
  it('export pre, post and approval spans in one trace, digests only', async () => {
    const env = place.env({ CONTINUITY_OTLP_ENDPOINT: receiver.endpoint });
    const pre = await snapshot('sess-a', 'pre', PRE, env);
    expect(pre.status, pre.stderr).toBe(EXIT.ok);
    const boundaryId = pre.stdout.trim();
    const post = await snapshot('sess-a', 'post', POST, env);
    expect(post.status, post.stderr).toBe(EXIT.ok);
    const ok = await approve('sess-a', env);
    expect(ok.status, ok.stderr).toBe(EXIT.ok);
    expect(pre.stderr + post.stderr + ok.stderr).toBe('');

    const spans = receiver.spans;
    expect(spans.map((s) => s.name)).toEqual([
      SPAN_COMPACTION_PRE,
      SPAN_COMPACTION_POST,
      SPAN_DECISION_APPROVAL,
    ]);
    const [p, q, a] = spans as [(typeof spans)[0], (typeof spans)[0], (typeof spans)[0]];
    expect(p.service).toBe('agent-continuity');
    expect(p.attributes).toMatchObject({
      [ATTR_SESSION_ID]: 'sess-a',
      [ATTR_BOUNDARY_ID]: boundaryId,
      [ATTR_RUNTIME]: 'shell-agent',
      [ATTR_TRIGGER]: 'auto',
      [decisionAttr('scope', 'digest')]: digestValue(PRE.scope),
      [decisionAttr('target', 'digest')]: digestValue(PRE.target),
    });
    expect(p.attributes[ATTR_DECISION_NAMES]).toEqual(
      expect.arrayContaining(['scope', 'target', 'acceptance_test']),
    );
    expect(p.attributes[ATTR_GEN_AI_CONVERSATION_COMPACTED]).toBeUndefined();
    // The post span: same trace, linked to the pre span, marked compacted, the boundary's runtime.
    expect(q.traceId).toBe(p.traceId);
    expect(q.spanId).not.toBe(p.spanId);
    expect(q.links).toEqual([{ traceId: p.traceId, spanId: p.spanId }]);
    expect(q.attributes).toMatchObject({
      [ATTR_BOUNDARY_ID]: boundaryId,
      [ATTR_RUNTIME]: 'shell-agent',
      [ATTR_GEN_AI_CONVERSATION_COMPACTED]: true,
      [decisionAttr('scope', 'digest')]: digestValue(POST.scope),
    });
    // The approval: in the boundary's trace, digests of the approved values.
    expect(a.traceId).toBe(p.traceId);
    expect(a.attributes).toMatchObject({
      [ATTR_SESSION_ID]: 'sess-a',
      [ATTR_APPROVAL_REF]: 'CHG-42',
      [ATTR_APPROVAL_FROM_DIGEST]: digestValue(PRE.scope),
      [ATTR_APPROVAL_TO_DIGEST]: digestValue(POST.scope),
    });
    for (const r of receiver.requests) expect(r.body.toString('utf8')).not.toMatch(RAW);
    expect(bytesUnder(place.dir).toString('utf8')).not.toMatch(RAW);
  });

  it('use CONTINUITY_OTLP_PROTOCOL and CONTINUITY_OTLP_HEADERS; --otlp-endpoint wins over the variable', async () => {
    const dead = await deadEndpoint();
    const env = place.env({
      CONTINUITY_OTLP_ENDPOINT: dead,
      CONTINUITY_OTLP_PROTOCOL: 'http/protobuf',
      CONTINUITY_OTLP_HEADERS: 'x-tenant=team-7',
    });
    expect((await snapshot('sess-b', 'pre', PRE, env, ['--otlp-endpoint', receiver.endpoint])).status).toBe(
      EXIT.ok,
    );
    const ok = await approve('sess-b', env, ['--otlp-endpoint', receiver.endpoint]);
    expect(ok.status, ok.stderr).toBe(EXIT.ok);
    expect(ok.stderr).toBe('');
    expect(receiver.requests).toHaveLength(2);
    for (const r of receiver.requests) {
      expect(r.headers['content-type']).toBe('application/x-protobuf');
      expect(r.headers['x-tenant']).toBe('team-7');
      expect(r.body.toString('latin1')).not.toMatch(RAW);
    }
    expect(receiver.spans.map((s) => s.name)).toEqual([SPAN_COMPACTION_PRE, SPAN_DECISION_APPROVAL]);
  });

  it('exit 0 with a dead endpoint, spool the request (0600), and deliver it oldest first on the next run', async () => {
    const dead = await deadEndpoint();
    const env = place.env({ CONTINUITY_OTLP_ENDPOINT: dead, CONTINUITY_OTLP_TIMEOUT_MS: '500' });
    const pre = await snapshot('sess-c', 'pre', PRE, env);
    expect(pre.status).toBe(EXIT.ok);
    expect(pre.stdout).toMatch(/^[0-9a-f-]{36}\n$/);
    // One line on stderr, naming the endpoint and the spool, never a path or a value.
    expect(pre.stderr.split('\n').filter((l) => l.length > 0)).toHaveLength(1);
    expect(pre.stderr).toMatch(/^continuity: OTLP export to http:\/\/127\.0\.0\.1:\d+ failed; .*spooled/);
    expect(pre.stderr).not.toContain(place.dir);
    const ok = await approve('sess-c', env);
    expect(ok.status).toBe(EXIT.ok);
    // seq 2 is the approver key's certificate, pinned at its first use on this ledger.
    // On the human's terminal standard output and standard error are one transcript.
    expect(ok.stdout).toMatch(
      /approval recorded: scope \(ref CHG-42\), seq 3, signed by ed25519:[0-9a-f]{32}\r?\n/,
    );
    expect(ok.stdout).toMatch(/2 request\(s\) waiting/);

    const files = spooled(place.spool);
    expect(files).toHaveLength(2);
    expect(statSync(place.spool).mode & 0o777).toBe(0o700);
    for (const f of files) expect(statSync(join(place.spool, f)).mode & 0o777).toBe(0o600);
    const first = spansOf(decodeTraceRequest(readFileSync(join(place.spool, files[0]!), 'utf8'), 'json'));
    expect(first.map((s) => s.name)).toEqual([SPAN_COMPACTION_PRE]);
    expect(first[0]!.attributes[decisionAttr('scope', 'digest')]).toBe(digestValue(PRE.scope));
    // The byte scan: digests in the spool, no raw value anywhere on disk.
    expect(bytesUnder(place.dir).toString('utf8')).not.toMatch(RAW);
    expect(receiver.requests).toHaveLength(0);

    // The next run with a live endpoint sends the spool first (oldest first), then its own span.
    const post = await snapshot(
      'sess-c',
      'post',
      POST,
      place.env({ CONTINUITY_OTLP_ENDPOINT: receiver.endpoint }),
    );
    expect(post.status, post.stderr).toBe(EXIT.ok);
    expect(post.stderr).toBe('');
    expect(receiver.spans.map((s) => s.name)).toEqual([
      SPAN_COMPACTION_PRE,
      SPAN_DECISION_APPROVAL,
      SPAN_COMPACTION_POST,
    ]);
    expect(spooled(place.spool)).toEqual([]);
    for (const r of receiver.requests) expect(r.body.toString('utf8')).not.toMatch(RAW);
  });

  it('keep a request the receiver refuses in rejected/, exit 0 and say so', async () => {
    // A receiver that answers 400 to everything: a request it refuses is not retried forever.
    receiver.setMode({ kind: 'fail', status: 400 });
    const r = await snapshot(
      'sess-d',
      'pre',
      PRE,
      place.env({ CONTINUITY_OTLP_ENDPOINT: receiver.endpoint }),
    );
    expect(r.status).toBe(EXIT.ok);
    expect(r.stderr).toMatch(/refused 1 request\(s\); kept in the spool's rejected\/ folder/);
    expect(receiver.attempts.map((a) => a.status)).toEqual([400]);
    expect(spooled(place.spool)).toEqual([]);
    expect(spooled(join(place.spool, 'rejected'))).toHaveLength(1);
  });

  it('still exits 0 when the spool cannot be written, and says the span is lost', async () => {
    const env = place.env({ CONTINUITY_OTLP_ENDPOINT: await deadEndpoint() });
    expect((await snapshot('sess-e', 'pre', PRE, place.env())).status).toBe(EXIT.ok);
    writeFileSync(place.spool, 'not a directory'); // the spool's place is taken by a file
    const r = await snapshot('sess-e', 'post', POST, env);
    expect(r.status).toBe(EXIT.ok);
    expect(r.stdout).toMatch(/^[0-9a-f-]{36}\n$/);
    expect(r.stderr.split('\n').filter((l) => l.length > 0)).toHaveLength(1);
    expect(r.stderr).toMatch(/could not write the OTLP spool/);
  });
});
