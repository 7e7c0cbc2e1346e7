/**
 * A boundary recorded from a shell script reaches `continuity serve`: real child processes of
 * `node bin/continuity.js snapshot|approve` (the first two from `/bin/sh`, the way a script
 * captures the boundary id), a real `continuity serve` child on a free port, and a real downstream
 * OTLP receiver. The post span arrives downstream enriched `conflicting`; after a human's
 * `continuity approve` and a re-observation it arrives `approved_change`, and `/metrics` agrees.
 */

import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approverDir, keyStoreFiles } from '../../src/authority/key-store.js';
import { digestValue } from '../../src/digest/digest.js';
import {
  ATTR_APPROVAL_TO_DIGEST,
  ATTR_CONTINUITY_REASON,
  ATTR_CONTINUITY_STATE,
  ATTR_GEN_AI_CONVERSATION_COMPACTED,
  ATTR_SESSION_ID,
  METRIC_ATTR_REASON,
  METRIC_ATTR_RUNTIME,
  METRIC_ATTR_STATE,
  METRIC_BOUNDARIES,
  PROMETHEUS_NAMES,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import {
  type Downstream,
  type ReceivedSpan,
  type ServeProcess,
  scrape,
  startDownstream,
  startServe,
  total,
  waitFor,
} from '../service/harness.js';
import { withApproverKey } from '../support/human.js';
import { BIN, makePlace, type Place, type Run, runCli } from './harness.js';

const SESSION = 'script-session-1';
const PRE = {
  scope: { repository: 'acme/RAW-SCOPE-7f3a', paths: ['services/RAW-PATH-91c2'] },
  target: 'release/RAW-TARGET-55e1',
  acceptance_test: { command: 'npm test -- RAW-TEST-0d4b', must_pass: true },
};
const POST = { ...PRE, scope: { repository: 'acme/RAW-SCOPE-7f3a', paths: ['services/RAW-WIDER-3b8e'] } };

let place: Place;
let downstream: Downstream;
let serve: ServeProcess;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  place = makePlace('export-serve-');
  downstream = await startDownstream();
  // serve trusts the human's approver key (made where the human's `approve` finds it).
  const humanEnv = withApproverKey(place.env({}), dirname(place.dir));
  serve = await startServe({
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: downstream.base },
    dir: place.dir,
    config: { correlation: { approverKeys: [keyStoreFiles(approverDir(humanEnv)).publicKey] } },
  });
  env = place.env({ CONTINUITY_OTLP_ENDPOINT: serve.base });
  writeFileSync(join(place.dir, 'pre.json'), JSON.stringify(PRE));
  writeFileSync(join(place.dir, 'post.json'), JSON.stringify(POST));
});

afterAll(async () => {
  await serve?.stop(); // SIGTERM by PID, then the exit
  await downstream?.close();
  place?.dispose();
});

/** Runs a shell script with NODE, BIN, DIR and SESSION set. */
function sh(script: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', script], {
      cwd: place.dir,
      env: { ...env, NODE: process.execPath, BIN, DIR: place.dir, SESSION },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

function downstreamSpans(name: string): ReceivedSpan[] {
  return downstream.spans.filter((s) => s.span.name === name && s.attributes[ATTR_SESSION_ID] === SESSION);
}

describe('a boundary recorded by a shell script, through continuity serve', () => {
  it('arrives conflicting, then approved_change after a human approval and a re-observation', async () => {
    const script = await sh(
      [
        'set -e',
        'B=$("$NODE" "$BIN" snapshot --session "$SESSION" --phase pre --runtime shell-agent --trigger auto --decisions "$DIR/pre.json")',
        '"$NODE" "$BIN" snapshot --session "$SESSION" --phase post --boundary "$B" --decisions "$DIR/post.json" >/dev/null',
        'echo "$B"',
      ].join('\n'),
    );
    expect(script.status, script.stderr).toBe(0);
    expect(script.stderr).toBe('');
    const boundaryId = script.stdout.trim();

    const first = await waitFor('the post span enriched at the downstream', () => {
      const posts = downstreamSpans(SPAN_COMPACTION_POST);
      return posts.length === 1 && posts[0]!.attributes[ATTR_CONTINUITY_STATE] !== undefined && posts[0];
    });
    expect(first.attributes[ATTR_CONTINUITY_STATE]).toBe('conflicting');
    expect(first.attributes[ATTR_CONTINUITY_REASON]).toBe('unapproved_change');
    expect(first.attributes[ATTR_GEN_AI_CONVERSATION_COMPACTED]).toBe(true);
    const pre = downstreamSpans(SPAN_COMPACTION_PRE);
    expect(pre).toHaveLength(1);
    expect(first.span.traceId).toBe(pre[0]!.span.traceId);
    expect(first.span.links.map((l) => l.spanId)).toEqual([pre[0]!.span.spanId]);
    let samples = await scrape(serve.metrics);
    expect(
      total(samples, PROMETHEUS_NAMES[METRIC_BOUNDARIES], {
        [METRIC_ATTR_STATE]: 'conflicting',
        [METRIC_ATTR_RUNTIME]: 'shell-agent',
      }),
    ).toBe(1);

    // A human approves the change; the script re-observes the decisions.
    const approval = await runCli(
      [
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
        'CHG-9',
        '--by',
        'reviewer-2',
      ],
      { env, cwd: place.dir },
    );
    expect(approval.status, approval.stderr).toBe(0);
    expect(approval.stderr).toBe('');
    const again = await runCli(
      ['snapshot', '--session', SESSION, '--phase', 'post', '--decisions', join(place.dir, 'post.json')],
      { env, cwd: place.dir },
    );
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe(boundaryId);

    const second = await waitFor('the re-observation enriched at the downstream', () => {
      const posts = downstreamSpans(SPAN_COMPACTION_POST);
      return posts.length === 2 && posts[1]!.attributes[ATTR_CONTINUITY_STATE] !== undefined && posts[1];
    });
    expect(second.attributes[ATTR_CONTINUITY_STATE]).toBe('approved_change');
    expect(second.attributes[ATTR_CONTINUITY_REASON]).toBe('approved_chain');
    expect(second.span.traceId).toBe(first.span.traceId);
    const approvals = downstreamSpans(SPAN_DECISION_APPROVAL);
    expect(approvals).toHaveLength(1);
    expect(approvals[0]!.attributes[ATTR_APPROVAL_TO_DIGEST]).toBe(digestValue(POST.scope));
    expect(approvals[0]!.span.traceId).toBe(first.span.traceId);

    samples = await waitFor('approved_change in /metrics', async () => {
      const s = await scrape(serve.metrics);
      return (
        total(s, PROMETHEUS_NAMES[METRIC_BOUNDARIES], { [METRIC_ATTR_STATE]: 'approved_change' }) >= 1 && s
      );
    });
    expect(
      total(samples, PROMETHEUS_NAMES[METRIC_BOUNDARIES], {
        [METRIC_ATTR_STATE]: 'approved_change',
        [METRIC_ATTR_REASON]: 'approved_chain',
        [METRIC_ATTR_RUNTIME]: 'shell-agent',
      }),
    ).toBe(1);
    // Nothing raw went through the service to the downstream.
    expect(JSON.stringify(downstream.spans.map((s) => s.attributes))).not.toMatch(/RAW-/);
  });
});
