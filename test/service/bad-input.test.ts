/**
 * `continuity serve` under bad input: more than 1 000 malformed requests (truncated and corrupted
 * protobuf, wrong JSON types, bad gzip, wrong content type and encoding, oversized bodies and
 * attributes, compaction spans without a session key), each answered with the OTLP/HTTP status
 * and a message naming the problem, while valid requests sent in between are all forwarded, the
 * process stays up and its memory stays bounded.
 */
import { gzipSync } from 'node:zlib';
import { Reader } from 'protobufjs/light.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ATTR_SESSION_ID,
  METRIC_ATTR_ERROR_TYPE,
  METRIC_PROCESS_MEMORY_USAGE,
  METRIC_SERVICE_SPANS_REJECTED,
  SERVICE_PROMETHEUS_NAMES,
  SERVICE_REJECT_REASONS,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import { decodeTraceResponse, encodeTraceRequest } from '../../src/otlp/index.js';
import type { OtlpKeyValue } from '../../src/otlp/types.js';
import {
  type Downstream,
  httpGet,
  post,
  type ServeProcess,
  scrape,
  startDownstream,
  startServe,
  total,
  waitFor,
} from './harness.js';

const MAX_BODY = 64 * 1024;
const MAX_ATTR = 1024;
const MAX_ATTRS = 64;
const PB = { 'content-type': 'application/x-protobuf' };
const JSON_CT = { 'content-type': 'application/json' };

/** A small deterministic PRNG, so a failure can be reproduced. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
const rand = prng(20261130);
const pick = (n: number) => Math.floor(rand() * n);

const hex = (n: number, seed: number) => seed.toString(16).padStart(n, '0').slice(-n);

function span(name: string, seq: number, attributes: OtlpKeyValue[] = []) {
  return {
    traceId: hex(32, seq + 1),
    spanId: hex(16, seq + 1),
    name,
    kind: 1,
    startTimeUnixNano: '1764500000000000000',
    endTimeUnixNano: '1764500000100000000',
    attributes,
  };
}

function request(spans: object[]) {
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'bad-input-test' } }] },
        scopeSpans: [{ scope: { name: 'test' }, spans }],
      },
    ],
  };
}

const str = (key: string, value: string): OtlpKeyValue => ({ key, value: { stringValue: value } });

/** One malformed request and what the service must answer. */
interface BadCase {
  kind: string;
  body: Buffer | string;
  headers: Record<string, string>;
  status: number;
  message: RegExp;
  /** For 200 partial successes: rejected span count and reason. */
  rejected?: { spans: number; reason: string };
}

const VALID_PB = Buffer.from(
  encodeTraceRequest(request([span('ordinary', 1, [str('k', 'v')]), span('other', 2)]), 'protobuf'),
);

function badCases(): BadCase[] {
  const cases: BadCase[] = [];
  const add = (n: number, make: (i: number) => BadCase) => {
    for (let i = 0; i < n; i++) cases.push(make(i));
  };
  // Truncated protobuf: any cut inside the single top-level field leaves a length prefix unmet.
  add(150, () => ({
    kind: 'truncated protobuf',
    body: VALID_PB.subarray(0, 1 + pick(VALID_PB.length - 2)),
    headers: PB,
    status: 400,
    message: /cannot decode the ExportTraceServiceRequest \(protobuf\)/,
  }));
  // Corrupted protobuf: an invalid wire type, an overlong length prefix, garbage appended.
  add(150, (i) => {
    const b = Buffer.from(VALID_PB);
    if (i % 3 === 0) b[0] = ((1 + pick(15)) << 3) | (6 + pick(2)); // wire types 6 and 7 do not exist
    if (i % 3 === 1) b[1] = 0x7f; // claims more bytes than the body holds
    const body = i % 3 === 2 ? Buffer.concat([b, Buffer.from([0x0a, 0x7f, 0x01])]) : b;
    return { kind: 'corrupted protobuf', body, headers: PB, status: 400, message: /not a valid protobuf/ };
  });
  // Wrong JSON types and malformed JSON.
  const jsonBodies: Array<[string, RegExp]> = [
    ['{"resourceSpans":"x"}', /resourceSpans/],
    ['{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":5}]}]}]}', /traceId/],
    [
      '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz","spanId":"0011223344556677"}]}]}]}',
      /traceId/,
    ],
    ['{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":17}]}]}]}', /name|traceId/],
    [
      '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"00112233445566778899aabbccddeeff","spanId":"0011223344556677","startTimeUnixNano":"soon"}]}]}]}',
      /startTimeUnixNano/,
    ],
    [
      '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"00112233445566778899aabbccddeeff","spanId":"0011223344556677","attributes":{"k":"v"}}]}]}]}',
      /attributes/,
    ],
    ['[]', /expected a JSON object/],
    ['"resourceSpans"', /expected a JSON object/],
    ['{"resourceSpans":[', /expected JSON text/],
    ['not json at all', /expected JSON text/],
  ];
  add(200, (i) => {
    const [body, message] = jsonBodies[i % jsonBodies.length]!;
    return { kind: 'wrong JSON', body, headers: JSON_CT, status: 400, message };
  });
  add(20, () => ({
    kind: 'invalid UTF-8 JSON',
    body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]),
    headers: JSON_CT,
    status: 400,
    message: /UTF-8/,
  }));
  // Bad gzip: not gzip at all, or a truncated stream.
  const gz = gzipSync(VALID_PB);
  add(100, (i) => ({
    kind: 'bad gzip',
    body: i % 2 === 0 ? VALID_PB : gz.subarray(0, 5 + pick(gz.length - 10)),
    headers: { ...PB, 'content-encoding': 'gzip' },
    status: 400,
    message: /not valid gzip/,
  }));
  // Wrong content type or encoding.
  const types = ['text/plain', 'application/xml', 'application/grpc', 'application/protobuf', ''];
  add(100, (i) => ({
    kind: 'wrong content type',
    body: VALID_PB,
    headers: types[i % types.length]
      ? { 'content-type': types[i % types.length]! }
      : ({} as Record<string, string>),
    status: 415,
    message: /unsupported Content-Type .*send application\/x-protobuf or application\/json/,
  }));
  add(50, (i) => ({
    kind: 'unsupported content encoding',
    body: VALID_PB,
    headers: { ...PB, 'content-encoding': i % 2 ? 'br' : 'compress' },
    status: 415,
    message: /unsupported Content-Encoding/,
  }));
  // Oversized: a body over the limit, and a small gzip body that inflates past it.
  const big = Buffer.alloc(MAX_BODY + 1 + pick(1024), 0x0a);
  const bomb = gzipSync(Buffer.alloc(MAX_BODY * 16));
  add(60, (i) => ({
    kind: 'oversized body',
    body: i % 2 === 0 ? big : bomb,
    headers: i % 2 === 0 ? PB : { ...PB, 'content-encoding': 'gzip' },
    status: 413,
    message: /exceeds the limit of 65536 bytes \(server\.maxRequestBytes\)/,
  }));
  // Oversized attributes: one long value, or too many attributes, on one of two spans.
  add(100, (i) => {
    const attrs =
      i % 2 === 0
        ? [str('payload.size', 'x'.repeat(MAX_ATTR + 1 + pick(500)))]
        : Array.from({ length: MAX_ATTRS + 1 }, (_, k) => str(`k${k}`, 'v'));
    // Limits apply to what the service parses: the compaction span is refused, the ordinary span
    // with the same attributes is forwarded, as a Collector forwards it.
    const body = Buffer.from(
      encodeTraceRequest(
        request([
          span('fine', 10_000 + i, attrs),
          span(SPAN_COMPACTION_PRE, 20_000 + i, [str(ATTR_SESSION_ID, `big-${i}`), ...attrs]),
        ]),
        'protobuf',
      ),
    );
    return {
      kind: 'oversized attributes',
      body,
      headers: PB,
      status: 200,
      message:
        i % 2 === 0
          ? /attribute "payload.size" is \d+ characters long/
          : /66 attributes, more than limits.maxAttributesPerSpan 64/,
      rejected: { spans: 1, reason: SERVICE_REJECT_REASONS.attributeLimit },
    };
  });
  // A compaction span with no session key cannot be correlated: refused by name.
  add(100, (i) => ({
    kind: 'missing session key',
    body: JSON.stringify(
      request([span(SPAN_COMPACTION_PRE, 30_000 + i, [str('continuity.compaction.trigger', 'auto')])]),
    ),
    headers: JSON_CT,
    status: 200,
    message: /compaction span needs a session key: set session\.id/,
    rejected: { spans: 1, reason: SERVICE_REJECT_REASONS.missingSessionKey },
  }));
  return cases;
}

/** The `message` of a `google.rpc.Status` answer, protobuf or JSON. */
function statusMessage(body: Buffer, contentType: string | undefined): string {
  if (contentType === 'application/x-protobuf') {
    const r = Reader.create(body);
    while (r.pos < r.len) {
      const tag = r.uint32();
      if (tag >>> 3 === 2) return r.string();
      r.skipType(tag & 7);
    }
    return '';
  }
  return (JSON.parse(body.toString('utf8')) as { message: string }).message;
}

/** What is wrong with the answer to a bad case, or undefined when it is right. */
function wrongAnswer(
  c: BadCase,
  a: { status: number; headers: Record<string, unknown>; body: Buffer },
): string | undefined {
  if (a.status !== c.status)
    return `status ${a.status}, expected ${c.status}: ${a.body.toString().slice(0, 200)}`;
  if (c.status === 200) {
    const format = c.headers['content-type'] === 'application/json' ? 'json' : 'protobuf';
    const partial = decodeTraceResponse(a.body, format).partialSuccess;
    if (!partial) return 'no partial_success';
    if (Number(partial.rejectedSpans) !== c.rejected!.spans) return `rejectedSpans ${partial.rejectedSpans}`;
    return c.message.test(partial.errorMessage) ? undefined : `message ${partial.errorMessage}`;
  }
  const message = statusMessage(a.body, a.headers['content-type'] as string | undefined);
  return c.message.test(message)
    ? undefined
    : `message ${JSON.stringify(message)} does not match ${c.message}`;
}

describe('continuity serve under bad input', () => {
  let downstream: Downstream;
  let serve: ServeProcess;

  beforeAll(async () => {
    downstream = await startDownstream();
    serve = await startServe({
      config: {
        server: { maxRequestBytes: MAX_BODY },
        limits: { maxAttributeValueLength: MAX_ATTR, maxAttributesPerSpan: MAX_ATTRS },
        downstream: { endpoint: `${downstream.base}/v1/traces` },
      },
    });
  });

  afterAll(async () => {
    await serve?.stop();
    await downstream?.close();
  });

  it('answers every malformed request with the right status and a clear message, and forwards the valid ones', async () => {
    const rssName = SERVICE_PROMETHEUS_NAMES[METRIC_PROCESS_MEMORY_USAGE];
    const rssBefore = total(await scrape(serve.metrics), rssName);
    const cases = badCases();
    expect(cases.length).toBeGreaterThanOrEqual(1000);
    const byKind = new Map<string, number>();
    let valid = 0;
    const failures: string[] = [];
    const concurrency = 8;
    for (let start = 0; start < cases.length; start += concurrency) {
      const batch = cases.slice(start, start + concurrency);
      // One valid request rides along with every batch of malformed ones.
      const validName = `valid-${valid++}`;
      const validBody = Buffer.from(
        encodeTraceRequest(request([span(validName, 50_000 + valid)]), 'protobuf'),
      );
      const [validAnswer, ...answers] = await Promise.all([
        post(serve.otlp, validBody, PB),
        ...batch.map((c) => post(serve.otlp, c.body, c.headers)),
      ]);
      expect(validAnswer!.status).toBe(200);
      answers.forEach((a, k) => {
        const c = batch[k]!;
        byKind.set(c.kind, (byKind.get(c.kind) ?? 0) + 1);
        const why = wrongAnswer(c, a);
        if (why !== undefined) failures.push(`${c.kind} #${start + k}: ${why}`);
      });
    }
    expect(failures.slice(0, 10)).toEqual([]);
    expect(byKind.size).toBe(10);

    // The process is up and every valid request reached the downstream.
    expect(serve.child.exitCode).toBeNull();
    expect((await httpGet(`${serve.base}/healthz`)).status).toBe(200);
    await waitFor('every valid span forwarded', () => {
      const names = new Set(downstream.spans.map((s) => s.span.name));
      return Array.from({ length: valid }, (_, i) => `valid-${i}`).every((n) => names.has(n));
    });
    // Spans refused in partial successes never reach the downstream; their neighbours do.
    expect(downstream.spans.some((s) => String(s.attributes[ATTR_SESSION_ID] ?? '').startsWith('big-'))).toBe(
      false,
    );
    expect(downstream.spans.filter((s) => s.span.name === 'fine')).toHaveLength(100);

    const after = await scrape(serve.metrics);
    const rejected = SERVICE_PROMETHEUS_NAMES[METRIC_SERVICE_SPANS_REJECTED];
    expect(total(after, rejected, { [METRIC_ATTR_ERROR_TYPE]: SERVICE_REJECT_REASONS.attributeLimit })).toBe(
      100,
    );
    expect(
      total(after, rejected, { [METRIC_ATTR_ERROR_TYPE]: SERVICE_REJECT_REASONS.missingSessionKey }),
    ).toBe(100);
    const statuses = after.filter((s) => s.name === 'continuity_service_requests_total');
    const byStatus = Object.fromEntries(statuses.map((s) => [s.labels.http_response_status_code, s.value]));
    expect(byStatus['413']).toBe(60);
    expect(byStatus['415']).toBe(150);
    // Memory stays bounded: no request's body is retained.
    const rssAfter = total(after, rssName);
    expect(rssAfter - rssBefore).toBeLessThan(64 * 1024 * 1024);
  });
});
