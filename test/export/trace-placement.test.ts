/**
 * Trace placement across processes, as a trace viewer reads it: real child processes of
 * `continuity snapshot|approve` record two boundaries of one session, each process exporting its
 * own span to a real `continuity serve` child, which enriches the post spans, emits the check span
 * of the boundary whose post never comes, and forwards everything to a real downstream receiver.
 * What arrives there must be what Jaeger accepts: every span a root or the child of a span in the
 * same trace, one trace per boundary (no trace of the session), and the service still correlates
 * the pre, post and approval spans that no process coordinated.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approverDir, keyStoreFiles } from '../../src/authority/key-store.js';
import { boundaryTraceId } from '../../src/otel/boundary-trace.js';
import {
  ATTR_BOUNDARY_ID,
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_CONTINUITY_CHECK,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import {
  type Downstream,
  type ReceivedSpan,
  type ServeProcess,
  startDownstream,
  startServe,
  waitFor,
} from '../service/harness.js';
import { withApproverKey } from '../support/human.js';
import { makePlace, type Place, runCli } from './harness.js';

const SESSION = 'placement-session-1';
const PRE = { scope: 'services/ledger', target: 'release/1', acceptance_test: 'npm test' };
const POST = { ...PRE, scope: 'services/billing' };

let place: Place;
let downstream: Downstream;
let serve: ServeProcess;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  place = makePlace('trace-placement-');
  downstream = await startDownstream();
  // serve trusts the human's approver key (made where the human's `approve` finds it).
  const humanEnv = withApproverKey(place.env({}), dirname(place.dir));
  serve = await startServe({
    config: {
      downstream: { endpoint: `${downstream.base}/v1/traces` },
      // The second boundary's runtime has a short window, so its check span comes soon.
      correlation: {
        postWindows: { 'short-agent': '1s' },
        approverKeys: [keyStoreFiles(approverDir(humanEnv)).publicKey],
      },
    },
    dir: place.dir,
  });
  env = place.env({ CONTINUITY_OTLP_ENDPOINT: serve.base });
  writeFileSync(join(place.dir, 'pre.json'), JSON.stringify(PRE));
  writeFileSync(join(place.dir, 'post.json'), JSON.stringify(POST));
}, 60_000);

afterAll(async () => {
  await serve?.stop();
  await downstream?.close();
  place?.dispose();
});

async function cli(args: string[]): Promise<string> {
  const r = await runCli(args, { env, cwd: place.dir });
  expect(r.status, r.stderr).toBe(0);
  expect(r.stderr).toBe('');
  return r.stdout.trim();
}

const snapshot = (phase: 'pre' | 'post', runtime: string, file: string) =>
  cli([
    'snapshot',
    '--session',
    SESSION,
    '--phase',
    phase,
    ...(phase === 'pre' ? ['--runtime', runtime, '--trigger', 'auto'] : []),
    '--decisions',
    join(place.dir, file),
  ]);

/** The spans of a trace whose parent is neither absent nor in the same trace: what a viewer shows as a missing root. */
function orphans(spans: readonly ReceivedSpan[]): string[] {
  return spans
    .filter(
      (s) =>
        s.span.parentSpanId !== '' &&
        !spans.some((p) => p.traceId === s.traceId && p.spanId === s.span.parentSpanId),
    )
    .map((s) => `${s.name} ${s.spanId} (parent ${s.span.parentSpanId})`);
}

describe('spans of one session recorded by separate processes', () => {
  it('land in one trace per boundary, rooted at its pre span, no parent missing, still correlated', async () => {
    // Boundary 1: pre, post (conflicting), a human's approval, a re-observation (approved_change),
    // five processes that share nothing but the ledger.
    const first = await snapshot('pre', 'shell-agent', 'pre.json');
    await snapshot('post', 'shell-agent', 'post.json');
    await waitFor('the first post enriched', () =>
      downstream.spans.some((s) => s.name === SPAN_COMPACTION_POST && s.attributes[ATTR_CONTINUITY_STATE]),
    );
    await cli([
      'approve',
      '--session',
      SESSION,
      '--decision',
      'scope',
      '--from',
      JSON.stringify(PRE.scope),
      '--to',
      JSON.stringify(POST.scope),
      '--ref',
      'CHG-7',
      '--by',
      'reviewer-1',
    ]);
    await snapshot('post', 'shell-agent', 'post.json');
    // Boundary 2 of the same session: a pre whose post never comes; the service resolves it on a
    // check span when its (short) window passes.
    const second = await snapshot('pre', 'short-agent', 'pre.json');
    expect(second).not.toBe(first);

    const ofSession = () => downstream.spans.filter((s) => s.attributes[ATTR_SESSION_ID] === SESSION);
    await waitFor('two posts enriched and the second boundary checked', () => {
      const spans = ofSession();
      return (
        spans.filter((s) => s.name === SPAN_COMPACTION_POST && s.attributes[ATTR_CONTINUITY_STATE]).length ===
          2 && spans.some((s) => s.name === SPAN_CONTINUITY_CHECK)
      );
    });
    const spans = ofSession();
    expect(orphans(downstream.spans)).toEqual([]);

    // The service correlated what no process coordinated.
    const posts = spans.filter((s) => s.name === SPAN_COMPACTION_POST);
    expect(posts.map((s) => s.attributes[ATTR_CONTINUITY_STATE])).toEqual(['conflicting', 'approved_change']);

    // Boundary 1: one trace, derived from session and boundary; the pre the root, the rest its children.
    const one = spans.filter(
      (s) => s.attributes[ATTR_BOUNDARY_ID] === first || s.name === SPAN_DECISION_APPROVAL,
    );
    expect(one.map((s) => s.name).sort()).toEqual(
      [SPAN_COMPACTION_PRE, SPAN_COMPACTION_POST, SPAN_COMPACTION_POST, SPAN_DECISION_APPROVAL].sort(),
    );
    const pre1 = one.find((s) => s.name === SPAN_COMPACTION_PRE)!;
    expect(pre1.span.parentSpanId).toBe('');
    for (const s of one) {
      expect(s.traceId, s.name).toBe(boundaryTraceId(SESSION, first));
      if (s !== pre1) expect(s.span.parentSpanId, s.name).toBe(pre1.spanId);
    }

    // Boundary 2: its own trace, the check span under its pre; nothing of boundary 1 in it.
    const two = spans.filter((s) => s.attributes[ATTR_BOUNDARY_ID] === second);
    expect(two.map((s) => s.name).sort()).toEqual([SPAN_COMPACTION_PRE, SPAN_CONTINUITY_CHECK].sort());
    const pre2 = two.find((s) => s.name === SPAN_COMPACTION_PRE)!;
    const check = two.find((s) => s.name === SPAN_CONTINUITY_CHECK)!;
    expect(pre2.traceId).toBe(boundaryTraceId(SESSION, second));
    expect(pre2.traceId).not.toBe(pre1.traceId);
    expect(check.traceId).toBe(pre2.traceId);
    expect(check.span.parentSpanId).toBe(pre2.spanId);
    expect(check.attributes[ATTR_CONTINUITY_STATE]).toBe('unverified');
  });
});
