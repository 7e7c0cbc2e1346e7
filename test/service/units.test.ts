/**
 * The pure parts of `continuity serve`: retry timing, Retry-After, the span-bounded queue, content
 * negotiation, request inspection and enrichment, check spans, Prometheus unit suffixes.
 */
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deflateSync, gunzipSync, gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { Correlator } from '../../src/correlate/correlator.js';
import { approvalAttributes, snapshotAttributes } from '../../src/otel/attributes.js';
import {
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  SERVICE_REJECT_REASONS,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_CONTINUITY_CHECK,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import {
  attributesToRecord,
  decodeTraceRequest,
  encodeTraceRequest,
  recordToAttributes,
} from '../../src/otlp/index.js';
import type { OtlpSpan, OtlpTraceRequest } from '../../src/otlp/types.js';
import { BodyError, codingOf, decodeBody, encodingOf } from '../../src/service/body.js';
import {
  checkResourceSpans,
  enrichPostSpans,
  inspectRequest,
  rejectionMessage,
} from '../../src/service/enrich.js';
import { Forwarder, parseRetryAfter, retryDelay } from '../../src/service/forwarder.js';
import { withUnitSuffix } from '../../src/service/metrics.js';
import { SpanQueue } from '../../src/service/queue.js';
import {
  createTransport,
  type Transport,
  type TransportOptions,
  writableParts,
} from '../../src/service/transport.js';
import { startGrpcReceiver } from '../support/grpc-receiver.js';
import { ensureSystemTools } from '../support/peers.js';
import { otlpSpan } from './harness.js';
import { expectedStates, loadSixCases } from './six-cases.js';

const POLICY = { initialInterval: 1000, maxInterval: 30_000, maxElapsedTime: 300_000, multiplier: 2 };

describe('retry timing', () => {
  it('grows exponentially, is capped, and is randomized by ±50 %', () => {
    expect(retryDelay(0, POLICY, undefined, 0.5)).toBe(1000);
    expect(retryDelay(3, POLICY, undefined, 0.5)).toBe(8000);
    expect(retryDelay(10, POLICY, undefined, 0.5)).toBe(30_000);
    expect(retryDelay(0, POLICY, undefined, 0)).toBe(500);
    expect(retryDelay(0, POLICY, undefined, 0.999999)).toBeCloseTo(1500, 0);
  });

  it('never retries sooner than the server asked with Retry-After', () => {
    expect(retryDelay(0, POLICY, 5000, 0.5)).toBe(5000);
    expect(retryDelay(5, POLICY, 5000, 0.5)).toBe(30_000);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-11-30T12:00:00Z');
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter('Mon, 30 Nov 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Mon, 30 Nov 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

describe('Forwarder.pumpSoon', () => {
  it('starts the exports once the current run of the event loop is over, with everything queued by then', async () => {
    const sent: unknown[] = [];
    const transport: Transport = {
      send: async (body) => {
        sent.push(body);
        return { kind: 'ok', body: Buffer.alloc(0) };
      },
      abortAll: () => undefined,
      close: () => undefined,
    };
    const queue = new SpanQueue(100);
    const forwarder = new Forwarder({
      transport,
      concurrency: 1,
      maxBatchSpans: 10,
      retry: POLICY,
      queue,
      encode: (items) => ({ body: items.map((i) => i.protobuf as Uint8Array), json: false }),
      readPartialSuccess: () => undefined,
      observer: { forwarded: () => undefined, dropped: () => undefined, exportFailed: () => undefined },
    });
    const a = Buffer.from('a');
    const b = Buffer.from('b');
    queue.push({ spans: 1, protobuf: a });
    forwarder.pumpSoon();
    queue.push({ spans: 1, protobuf: b });
    forwarder.pumpSoon();
    // Nothing starts before the caller's run is over (it answers its client first).
    await Promise.resolve();
    expect(sent).toEqual([]);
    await new Promise((r) => setImmediate(r));
    // One export took both items, queued before and after the first call.
    expect(sent).toEqual([[a, b]]);
    await forwarder.shutdown(1000);
  });
});

describe('SpanQueue', () => {
  it('is bounded in spans, counting reservations', () => {
    const q = new SpanQueue(100);
    expect(q.reserve(60)).toBe(true);
    expect(q.reserve(50)).toBe(false);
    q.push({ spans: 60, protobuf: new Uint8Array() });
    q.release(60);
    expect(q.size).toBe(60);
    expect(q.canAccept(40)).toBe(true);
    expect(q.canAccept(41)).toBe(false);
  });

  it('takes whole items up to a span budget, at least one', () => {
    const q = new SpanQueue(1000);
    for (const n of [300, 300, 300]) q.push({ spans: n, protobuf: new Uint8Array() });
    expect(q.take(500).map((i) => i.spans)).toEqual([300]);
    expect(q.take(700).map((i) => i.spans)).toEqual([300, 300]);
    expect(q.take(700)).toEqual([]);
    q.push({ spans: 900, protobuf: new Uint8Array() });
    expect(q.take(10).map((i) => i.spans)).toEqual([900]);
    expect(q.size).toBe(0);
  });
});

describe('content negotiation', () => {
  it('accepts the two OTLP content types with parameters, refuses others with 415', () => {
    expect(encodingOf('application/x-protobuf')).toBe('protobuf');
    expect(encodingOf('Application/JSON; charset=utf-8')).toBe('json');
    expect(() => encodingOf('text/plain')).toThrow(BodyError);
    expect(() => encodingOf(undefined)).toThrow(/unsupported Content-Type ""/);
    expect(codingOf('gzip')).toBe('gzip');
    expect(codingOf(undefined)).toBe('identity');
    expect(codingOf('identity')).toBe('identity');
    expect(codingOf('ZSTD')).toBe('zstd');
    expect(codingOf('deflate')).toBe('zlib');
    expect(codingOf('zlib')).toBe('zlib');
    expect(() => codingOf('br')).toThrow(/unsupported Content-Encoding "br"/);
  });

  describe('request body codings', () => {
    beforeAll(() => ensureSystemTools([{ command: 'zstd', debianPackage: 'zstd' }]), 600_000);
    const payload = Buffer.from(JSON.stringify({ resourceSpans: [] }).repeat(2000));

    it('decodes zstd as the zstd program writes it, and gzip, deflate and zlib as node:zlib does', async () => {
      const zst = execFileSync('zstd', ['-q', '-c', '-3'], { input: payload });
      expect(await decodeBody(zst, 'zstd', 1 << 20)).toEqual(payload);
      expect(await decodeBody(gzipSync(payload), 'gzip', 1 << 20)).toEqual(payload);
      expect(await decodeBody(deflateSync(payload), 'zlib', 1 << 20)).toEqual(payload);
    });

    it('refuses a body that decompresses past the limit (413) and a corrupt one (400)', async () => {
      const bomb = Buffer.alloc(8 << 20);
      const zst = execFileSync('zstd', ['-q', '-c', '-19'], { input: bomb, maxBuffer: 64 << 20 });
      await expect(decodeBody(zst, 'zstd', 1 << 20)).rejects.toMatchObject({ status: 413 });
      await expect(decodeBody(gzipSync(bomb), 'gzip', 1 << 20)).rejects.toMatchObject({ status: 413 });
      await expect(decodeBody(Buffer.from('not zstd at all'), 'zstd', 1 << 20)).rejects.toMatchObject({
        status: 400,
        code: 'bad_compression',
      });
      await expect(decodeBody(Buffer.from('nope'), 'zlib', 1 << 20)).rejects.toMatchObject({ status: 400 });
    });
  });
});

describe('protobuf batches', () => {
  it('merge by concatenation: the forwarder joins queued requests without re-encoding', () => {
    const req = (name: string): OtlpTraceRequest => ({
      resourceSpans: [{ scopeSpans: [{ spans: [span(name, 1, {})] }] } as never],
    });
    const joined = Buffer.concat([
      encodeTraceRequest(req('a'), 'protobuf'),
      encodeTraceRequest(req('b'), 'protobuf'),
    ]);
    const decoded = decodeTraceRequest(joined, 'protobuf');
    expect(
      decoded.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => s.name))),
    ).toEqual(['a', 'b']);
  });
});

describe('a batch of queue items goes out as one export body, not copied into one buffer first', () => {
  const parts = ['a', 'b', 'c'].map((name, i) =>
    encodeTraceRequest(requestOf([span(name, i + 1, { 'k.v': name })]), 'protobuf'),
  );
  const whole = Buffer.concat(parts);
  const options = (url: string, over: Partial<TransportOptions> = {}): TransportOptions => ({
    url,
    protocol: 'http/protobuf',
    signal: 'traces',
    headers: {},
    compression: 'none',
    timeoutMs: 5000,
    concurrency: 1,
    ...over,
  });

  it.each(['none', 'gzip'] as const)(
    'OTLP/HTTP (compression %s): the downstream reads the parts back to back, with their total length',
    async (compression) => {
      const got: Array<{ length: string | undefined; encoding: string | undefined; body: Buffer }> = [];
      const server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          got.push({
            length: req.headers['content-length'],
            encoding: req.headers['content-encoding'],
            body: Buffer.concat(chunks),
          });
          res.writeHead(200, { 'content-length': 0 }).end();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
      const transport = createTransport(options(url, { compression }));
      try {
        expect((await transport.send(parts, false)).kind).toBe('ok');
        expect((await transport.send(parts[0]!, false)).kind).toBe('ok');
      } finally {
        transport.close();
        server.close();
      }
      const bodies = got.map((g) => (compression === 'gzip' ? gunzipSync(g.body) : g.body));
      expect(bodies[0]!.equals(whole)).toBe(true);
      expect(bodies[1]!.equals(Buffer.from(parts[0]!))).toBe(true);
      expect(got.map((g) => Number(g.length))).toEqual(got.map((g) => g.body.length));
      expect(got[0]!.encoding).toBe(compression === 'gzip' ? 'gzip' : undefined);
      expect(decodeTraceRequest(bodies[0]!, 'protobuf').resourceSpans).toHaveLength(3);
    },
  );

  it('small neighbouring parts are joined before they are written, large ones written as they are', () => {
    const big = Buffer.alloc(20_000, 1);
    const small = (n: number) => Buffer.alloc(n, n & 0xff);
    const body = [small(3), small(40), big, small(5), big.subarray(0, 16_384), small(7), small(9)];
    const out = writableParts(body);
    expect(Buffer.concat(out).equals(Buffer.concat(body))).toBe(true);
    expect(out.map((p) => p.byteLength)).toEqual([43, 20_000, 5, 16_384, 16]);
    // The large parts are the same memory, not copies.
    expect(out[1]!.buffer).toBe(big.buffer);
    expect(out[3]!.buffer).toBe(big.buffer);
    // One or two parts go as they are.
    expect(writableParts([small(1), small(2)])).toHaveLength(2);
    expect(writableParts(big)).toEqual([big]);
  });

  it('OTLP/gRPC: the receiver gets the parts joined into one message', async () => {
    const receiver = await startGrpcReceiver();
    const transport = createTransport(options(receiver.endpoint, { protocol: 'grpc' }));
    try {
      expect((await transport.send(parts, false)).kind).toBe('ok');
    } finally {
      transport.close();
      await receiver.close();
    }
    expect(receiver.messages).toHaveLength(1);
    expect(receiver.messages[0]!.body.equals(whole)).toBe(true);
    expect(receiver.spans.map((s) => s.name)).toEqual(['a', 'b', 'c']);
  });
});

function span(name: string, n: number, attributes: Record<string, unknown>): OtlpSpan {
  return otlpSpan({
    traceId: n.toString(16).padStart(32, '0'),
    spanId: n.toString(16).padStart(16, '0'),
    name,
    attributes: recordToAttributes(attributes as never),
  });
}

function requestOf(spans: OtlpSpan[]): OtlpTraceRequest {
  return {
    resourceSpans: [
      {
        resource: { attributes: [], droppedAttributesCount: 0, entityRefs: [] },
        scopeSpans: [{ spans, schemaUrl: '' }],
        schemaUrl: '',
      },
    ],
  };
}

describe('inspectRequest', () => {
  const limits = { maxAttributeValueLength: 100, maxAttributesPerSpan: 10 };

  it('passes ordinary spans through untouched and reads compaction spans into events', () => {
    const [b] = loadSixCases();
    const pre = span(SPAN_COMPACTION_PRE, 1, snapshotAttributes('pre', { ...b!.pre!, sessionId: 's1' }));
    const plain = span('llm.call', 2, { 'gen_ai.request.model': 'm' });
    const req = requestOf([plain, pre]);
    const r = inspectRequest(req, { maxAttributeValueLength: 1000, maxAttributesPerSpan: 100 });
    expect(r.request).toBe(req);
    expect(r.accepted).toBe(2);
    expect(r.events.map((e) => e.event.kind)).toEqual(['pre']);
    expect(r.rejectedByReason.size).toBe(0);
  });

  it('keeps ordinary spans of any size; removes and names compaction spans over the limits or without a session key', () => {
    const many = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 1]));
    const req = requestOf([
      span('ok', 1, {}),
      span('long', 2, { big: 'x'.repeat(101) }),
      span('many', 3, many),
      span(SPAN_COMPACTION_PRE, 4, { 'continuity.compaction.trigger': 'auto' }),
      span(SPAN_COMPACTION_PRE, 5, { 'session.id': 's1', big: 'x'.repeat(101) }),
      span(SPAN_COMPACTION_POST, 6, { 'session.id': 's1', ...many }),
    ]);
    const r = inspectRequest(req, limits);
    expect(r.accepted).toBe(3);
    expect(r.request.resourceSpans[0]!.scopeSpans[0]!.spans.map((s) => s.name)).toEqual([
      'ok',
      'long',
      'many',
    ]);
    expect(req.resourceSpans[0]!.scopeSpans[0]!.spans).toHaveLength(6);
    expect(Object.fromEntries(r.rejectedByReason)).toEqual({
      [SERVICE_REJECT_REASONS.attributeLimit]: 2,
      [SERVICE_REJECT_REASONS.missingSessionKey]: 1,
    });
    const message = rejectionMessage(r);
    expect(message).toMatch(/^3 span\(s\) rejected/);
    expect(message).toContain(
      'resourceSpans[0].scopeSpans[0].spans[4] ("continuity.compaction.pre"): attribute "big" is 101 characters long',
    );
    expect(message).toContain(
      'spans[3] ("continuity.compaction.pre"): a compaction span needs a session key',
    );
    // Values are never quoted back.
    expect(message).not.toContain('xxxx');
  });
});

describe('enrichment', () => {
  it('writes the state on post spans in hand and builds check spans for the rest', () => {
    const expected = expectedStates();
    const correlator = new Correlator();
    let n = 0;
    for (const b of loadSixCases()) {
      const sid = `u-${b.id}`;
      const ctx = { boundaryId: `${sid}-b`, runtime: 'sdk', trigger: 'auto' as const };
      const spans = [
        span(SPAN_COMPACTION_PRE, ++n, snapshotAttributes('pre', { ...b.pre!, sessionId: sid }, ctx)),
        ...b.approvals.map((a) => span(SPAN_DECISION_APPROVAL, ++n, approvalAttributes(sid, a))),
        span(SPAN_COMPACTION_POST, ++n, snapshotAttributes('post', { ...b.post!, sessionId: sid }, ctx)),
      ];
      const r = inspectRequest(requestOf(spans), {
        maxAttributeValueLength: 1000,
        maxAttributesPerSpan: 100,
      });
      const resolutions = r.events.flatMap((e) => correlator.observe(e.event, 1_000));
      expect(enrichPostSpans(r.events, resolutions)).toEqual([]);
      const post = spans.at(-1)!;
      expect(attributesToRecord(post.attributes)[ATTR_CONTINUITY_STATE], b.id).toBe(expected.get(b.id));
      expect(post.links.map((l) => l.spanId)).toEqual([spans[0]!.spanId]);
    }
    // A pre whose post never comes: a check span in the pre's trace, linked to it.
    const pre = span(
      SPAN_COMPACTION_PRE,
      999,
      snapshotAttributes('pre', { ...loadSixCases()[0]!.pre!, sessionId: 'lonely' }),
    );
    const r = inspectRequest(requestOf([pre]), { maxAttributeValueLength: 1000, maxAttributesPerSpan: 100 });
    for (const e of r.events) correlator.observe(e.event, 2_000);
    const expired = correlator.expire(10 * 24 * 3600 * 1000);
    expect(expired).toHaveLength(1);
    const rs = checkResourceSpans(expired, 10_000, {
      resource: { 'service.name': 'continuity-serve' },
      scopeName: 'scope',
      scopeVersion: '1',
    });
    const check = rs!.scopeSpans[0]!.spans[0]!;
    expect(check.name).toBe(SPAN_CONTINUITY_CHECK);
    // In the pre span's trace, its child (a span the service received), linked to it.
    expect(check.traceId).toBe(pre.traceId);
    expect(check.parentSpanId).toBe(pre.spanId);
    expect(check.links.map((l) => l.spanId)).toEqual([pre.spanId]);
    const attrs = attributesToRecord(check.attributes);
    expect(attrs[ATTR_SESSION_ID]).toBe('lonely');
    expect(attrs[ATTR_CONTINUITY_STATE]).toBe('unverified');
    expect(attributesToRecord(rs!.resource!.attributes)['service.name']).toBe('continuity-serve');
    expect(checkResourceSpans([], 0, { resource: {}, scopeName: 's', scopeVersion: '1' })).toBeUndefined();
  });
});

describe('Prometheus names', () => {
  it('get the unit suffix the collector adds', () => {
    expect(withUnitSuffix('continuity.reobservation.duration', 's')).toBe(
      'continuity.reobservation.duration_seconds',
    );
    expect(withUnitSuffix('process.memory.usage', 'By')).toBe('process.memory.usage_bytes');
    expect(withUnitSuffix('x_seconds', 's')).toBe('x_seconds');
    expect(withUnitSuffix('continuity.boundaries', '{boundary}')).toBe('continuity.boundaries');
  });
});
