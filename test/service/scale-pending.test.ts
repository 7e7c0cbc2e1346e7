/**
 * A million pending boundaries (with `correlation.maxPendingBoundaries` raised): `continuity
 * serve` takes them, snapshots them in the background while it keeps answering (the snapshot is
 * streamed by a worker, never built as one string: the old one-string snapshot crashed with
 * `RangeError: Invalid string length` at about 432 000), writes the final snapshot at SIGTERM,
 * and after a restart still has every one of them: a post for any of them classifies.
 * Slow by nature (a few minutes on an idle 2-core machine, 20 on a loaded one); the figures (memory per pending
 * boundary, snapshot time, longest request) are in bench/service.bench.js, not asserted here.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Writer } from 'protobufjs/light.js';
import { describe, expect, it } from 'vitest';
import { snapshotAttributes } from '../../src/otel/attributes.js';
import {
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  METRIC_PENDING,
  PROMETHEUS_NAMES,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import {
  attributesToRecord,
  decodeTraceRequest,
  encodeSpan,
  recordToAttributes,
} from '../../src/otlp/index.js';
import { post, scrape, startDownstream, startServe, tempDir, total, waitFor } from './harness.js';

const PENDING = 1_000_000;
const PER_REQUEST = 2_000;
const DIGEST = `sha256:${'a'.repeat(64)}`;
const PB = { 'content-type': 'application/x-protobuf' };

function attrs(phase: 'pre' | 'post', n: string) {
  const at = phase === 'pre' ? '2026-11-30T10:00:00Z' : '2026-11-30T10:05:00Z';
  return recordToAttributes(
    snapshotAttributes(
      phase,
      {
        sessionId: `m-${n}`,
        capturedAt: at,
        normalizerVersion: 1,
        decisions: { scope: { digest: DIGEST, revision: 1, observedAt: at } },
      },
      { boundaryId: `m-${n}-b`, runtime: 'sdk', trigger: 'auto' },
    ),
  );
}

/** Session numbers are 7 digits wide, so one encoded span is a template patched per session. */
const WIDTH = 7;
const PLACEHOLDER = 'X'.repeat(WIDTH);

/** One encoded span of `phase` for session `m-XXXXXXX`, and where to patch it. */
function template(phase: 'pre' | 'post') {
  const marker = 'f'.repeat(14);
  const time = phase === 'pre' ? '1764496800000000000' : '1764497100000000000';
  const bytes = Buffer.from(
    encodeSpan({
      traceId: `${'0'.repeat(18)}${marker}`,
      spanId: `${phase === 'pre' ? '00' : '01'}${marker}`,
      traceState: '',
      parentSpanId: '',
      flags: 0,
      name: phase === 'pre' ? SPAN_COMPACTION_PRE : SPAN_COMPACTION_POST,
      kind: 1,
      startTimeUnixNano: time,
      endTimeUnixNano: time,
      attributes: attrs(phase, PLACEHOLDER),
      droppedAttributesCount: 0,
      events: [],
      droppedEventsCount: 0,
      links: [],
      droppedLinksCount: 0,
    }),
  );
  const text: number[] = [];
  for (let at = bytes.indexOf(PLACEHOLDER); at >= 0; at = bytes.indexOf(PLACEHOLDER, at + 1)) text.push(at);
  const ids: number[] = [];
  const m = Buffer.from(marker, 'hex');
  for (let at = bytes.indexOf(m); at >= 0; at = bytes.indexOf(m, at + 1)) ids.push(at);
  return { bytes, text, ids };
}
const TEMPLATES = { pre: template('pre'), post: template('post') };

/** A request of `n` spans of `phase` for sessions `from` … `from + n - 1`. */
function request(from: number, n: number, phase: 'pre' | 'post'): Buffer {
  const t = TEMPLATES[phase];
  const scope = Writer.create();
  for (let k = 0; k < n; k++) {
    const i = from + k;
    const span = Buffer.from(t.bytes);
    const digits = String(i).padStart(WIDTH, '0');
    for (const at of t.text) span.write(digits, at, 'latin1');
    const id = Buffer.alloc(7);
    id.writeUIntBE(i + 1, 0, 6);
    for (const at of t.ids) id.copy(span, at);
    scope.uint32((2 << 3) | 2).bytes(span);
  }
  const resource = Writer.create()
    .uint32((2 << 3) | 2)
    .bytes(scope.finish());
  return Buffer.from(
    Writer.create()
      .uint32((1 << 3) | 2)
      .bytes(resource.finish())
      .finish(),
  );
}

describe('continuity serve with a million pending boundaries', () => {
  it('takes them, snapshots them in the background, and keeps them across a restart', async () => {
    // The patched template is a request the codec reads as three sessions with their own ids.
    const sample = decodeTraceRequest(request(41, 3, 'pre'), 'protobuf').resourceSpans[0]!.scopeSpans[0]!
      .spans;
    expect(sample.map((sp) => attributesToRecord(sp.attributes)[ATTR_SESSION_ID])).toEqual([
      'm-0000041',
      'm-0000042',
      'm-0000043',
    ]);
    expect(new Set(sample.map((sp) => sp.spanId)).size).toBe(3);
    expect(new Set(sample.map((sp) => sp.traceId)).size).toBe(3);
    const downstream = await startDownstream();
    const dir = tempDir('serve-million-');
    const config = {
      // No downstream while filling (the million pre spans are counted no_downstream), so the
      // test's receiver does not hold them; the restarted service forwards the posts.
      correlation: { maxPendingBoundaries: 1_100_000, postWindows: { sdk: '24h' } },
      // Several background snapshots on the way up.
      state: { dir: join(dir, 'state'), compactAfterBytes: '256MiB' },
    };
    const env = { NODE_OPTIONS: '--max-old-space-size=8192' };
    let serve = await startServe({ config, dir, env });
    try {
      let next = 0;
      const send = async () => {
        while (next < PENDING) {
          const from = next;
          next += PER_REQUEST;
          const a = await post(serve.otlp, request(from, PER_REQUEST, 'pre'), PB);
          expect(a.status, a.body.toString()).toBe(200);
        }
      };
      await Promise.all([send(), send()]);
      const pending = PROMETHEUS_NAMES[METRIC_PENDING];
      expect(total(await scrape(serve.metrics), pending)).toBe(PENDING);
      // At least one background snapshot, started when the journal passed compactAfterBytes
      // during the fill, is written by the worker while the service keeps serving (the fill can
      // end before the worker does: it takes tens of seconds for half a million entries).
      await waitFor(
        'a background pending-state snapshot',
        () => /"pending-state snapshot written"/.test(serve.stderr()),
        240_000,
      );
      expect(await serve.stop()).toBe(0);
      expect(readdirSync(join(dir, 'state'))).toContain('pending.snapshot.json');

      serve = await startServe({
        config: { ...config, downstream: { endpoint: `${downstream.base}/v1/traces` } },
        dir,
        env,
      });
      expect(total(await scrape(serve.metrics), pending)).toBe(PENDING);
      // Posts for boundaries at the start, the middle and the end all find their pre.
      const picks = [0, 1, PENDING / 2, PENDING - 2, PENDING - 1];
      for (const i of picks) expect((await post(serve.otlp, request(i, 1, 'post'), PB)).status).toBe(200);
      await waitFor(
        'the sampled posts classified',
        () =>
          picks.every((i) =>
            downstream.spans.some(
              (s) =>
                s.span.name === SPAN_COMPACTION_POST &&
                s.attributes[ATTR_SESSION_ID] === `m-${String(i).padStart(WIDTH, '0')}` &&
                s.attributes[ATTR_CONTINUITY_STATE] === 'preserved',
            ),
          ),
        60_000,
      );
    } finally {
      // Nothing to keep: no final snapshot of a million boundaries a second time.
      await serve.kill9();
      await downstream.close();
    }
  }, 1_500_000);
});
