import {
  JsonMetricsSerializer,
  JsonTraceSerializer,
  ProtobufMetricsSerializer,
  ProtobufTraceSerializer,
} from '@opentelemetry/otlp-transformer';
import { describe, expect, it } from 'vitest';
import {
  attributesToRecord,
  decodeMetricsRequest,
  decodeTraceRequest,
  decodeTraceResponse,
  encodeMetricsRequest,
  encodeTraceRequest,
  encodeTraceResponse,
  OtlpError,
  type OtlpTraceRequest,
  otlpRoot,
  recordToAttributes,
  upsertAttributes,
} from '../../src/otlp/index.js';
import { prng, sampleMetrics, sampleSpans } from './helpers.js';

const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;

function expectOtlpError(fn: () => unknown, code: string, message?: string | RegExp): OtlpError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(OtlpError);
    const e = err as OtlpError;
    expect(e.code).toBe(code);
    if (typeof message === 'string') expect(e.message).toBe(message);
    else if (message) expect(e.message).toMatch(message);
    return e;
  }
  throw new Error('expected an OtlpError');
}

/** A minimal valid request with n spans in one scope, hex ids, int64 as strings. */
function request(spans: number, scopes = 1): Record<string, unknown> {
  const scopeSpans = [];
  for (let s = 0; s < scopes; s++) {
    const list = [];
    for (let i = 0; i < spans; i++) {
      list.push({
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: `b7ad6b71692033${String(10 + i).padStart(2, '0')}`,
        name: `span-${i}`,
        kind: 1,
        startTimeUnixNano: '1796076000000000000',
        endTimeUnixNano: '1796076000500000000',
        attributes: [{ key: 'session.id', value: { stringValue: 's-1' } }],
      });
    }
    scopeSpans.push({ scope: { name: 'test' }, spans: list });
  }
  return { resourceSpans: [{ resource: { attributes: [] }, scopeSpans }] };
}

describe('OTLP codec', () => {
  describe('traces, against the OpenTelemetry JS serializers', () => {
    it('decodes the exporter JSON and protobuf bodies of the same spans to the same object', async () => {
      const spans = await sampleSpans();
      const fromJson = decodeTraceRequest(JsonTraceSerializer.serializeRequest(spans)!, 'json');
      const fromProto = decodeTraceRequest(ProtobufTraceSerializer.serializeRequest(spans)!, 'protobuf');
      expect(fromProto).toEqual(fromJson);
      const decoded = fromProto.resourceSpans[0]!.scopeSpans[0]!.spans;
      expect(decoded).toHaveLength(3);
      for (const span of decoded) {
        expect(span.traceId).toMatch(HEX32);
        expect(span.spanId).toMatch(HEX16);
        expect(span.startTimeUnixNano).toMatch(/^\d{19}$/);
      }
    });

    it('keeps ids, times, kinds, status, events, links and attribute types exactly', async () => {
      const spans = await sampleSpans();
      const decoded = decodeTraceRequest(ProtobufTraceSerializer.serializeRequest(spans)!, 'protobuf');
      const byName = new Map(decoded.resourceSpans[0]!.scopeSpans[0]!.spans.map((s) => [s.name, s]));
      const root = byName.get('root')!;
      const sdkRoot = spans.find((s) => s.name === 'root')!;
      expect(root.traceId).toBe(sdkRoot.spanContext().traceId);
      expect(root.spanId).toBe(sdkRoot.spanContext().spanId);
      expect(root.parentSpanId).toBe('');
      expect(root.kind).toBe(3); // SDK SERVER (1) + 1 in OTLP
      const startNs = BigInt(sdkRoot.startTime[0]) * 1_000_000_000n + BigInt(sdkRoot.startTime[1]);
      expect(root.startTimeUnixNano).toBe(startNs.toString());
      expect(root.status).toEqual({ code: 2, message: 'failed on purpose' });
      expect(root.events[0]!.name).toBe('checkpoint');
      expect(attributesToRecord(root.attributes)).toEqual({
        'session.id': 's-1',
        count: 7,
        ratio: 0.25,
        ok: true,
        names: ['a', 'b'],
        big: 2 ** 53,
      });
      expect(root.attributes.find((a) => a.key === 'big')!.value).toEqual({ intValue: '9007199254740992' });
      const child = byName.get('child')!;
      const linked = byName.get('linked')!;
      expect(child.parentSpanId).toBe(root.spanId);
      expect(child.links[0]!.traceId).toBe(linked.traceId);
      expect(child.links[0]!.spanId).toBe(linked.spanId);
      expect(attributesToRecord(child.links[0]!.attributes)).toEqual({ why: 'compaction' });
    });

    it('round-trips decode → encode → decode in both formats', async () => {
      const spans = await sampleSpans();
      const original = decodeTraceRequest(ProtobufTraceSerializer.serializeRequest(spans)!, 'protobuf');
      const viaProto = decodeTraceRequest(encodeTraceRequest(original, 'protobuf'), 'protobuf');
      const viaJson = decodeTraceRequest(encodeTraceRequest(original, 'json'), 'json');
      expect(viaProto).toEqual(original);
      expect(viaJson).toEqual(original);
    });

    it('encodes protobuf that protobufjs reads back with the same field numbers', () => {
      const bytes = encodeTraceRequest(request(1), 'protobuf');
      const type = otlpRoot.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
      const raw = type.toObject(type.decode(bytes), { longs: String, bytes: String }) as {
        resourceSpans: { scopeSpans: { spans: { traceId: string; startTimeUnixNano: string }[] }[] }[];
      };
      const span = raw.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
      expect(Buffer.from(span.traceId, 'base64').toString('hex')).toBe('0af7651916cd43dd8448eb211c80319c');
      expect(span.startTimeUnixNano).toBe('1796076000000000000');
      // Field 1 of the request, wire type 2: the first byte is 0x0a.
      expect(bytes[0]).toBe(0x0a);
    });
  });

  describe('metrics, against the OpenTelemetry JS serializers', () => {
    it('decodes the exporter JSON and protobuf bodies of the same metrics to the same object', async () => {
      const metrics = await sampleMetrics();
      const fromJson = decodeMetricsRequest(JsonMetricsSerializer.serializeRequest(metrics)!, 'json');
      const fromProto = decodeMetricsRequest(
        ProtobufMetricsSerializer.serializeRequest(metrics)!,
        'protobuf',
      );
      expect(fromProto).toEqual(fromJson);
      const list = fromProto.resourceMetrics[0]!.scopeMetrics[0]!.metrics;
      const byName = new Map(list.map((m) => [m.name, m]));
      const counter = byName.get('c.int')!;
      expect(counter.sum!.isMonotonic).toBe(true);
      expect(counter.sum!.dataPoints[0]!.asInt).toBe('5');
      expect(attributesToRecord(counter.sum!.dataPoints[0]!.attributes)).toEqual({ k: 'v' });
      expect(byName.get('c.double')!.sum!.dataPoints[0]!.asDouble).toBe(1.5);
      expect(byName.get('udc')!.sum!.isMonotonic).toBe(false);
      const hist = byName.get('h')!.histogram!;
      const total = hist.dataPoints.reduce((n, p) => n + Number(p.count), 0);
      expect(total).toBe(2);
      expect(hist.dataPoints.find((p) => p.count === '1' && p.sum === 20)).toBeDefined();
      expect(hist.dataPoints[0]!.explicitBounds).toEqual([0.1, 1, 10]);
      expect(byName.get('exp.hist')!.exponentialHistogram!.dataPoints[0]!.count).toBe('2');
      expect(byName.get('g')!.gauge!.dataPoints[0]!.asInt).toBe('42');
    });

    it('round-trips metrics through both formats', async () => {
      const metrics = await sampleMetrics();
      const original = decodeMetricsRequest(ProtobufMetricsSerializer.serializeRequest(metrics)!, 'protobuf');
      expect(decodeMetricsRequest(encodeMetricsRequest(original, 'protobuf'), 'protobuf')).toEqual(original);
      expect(decodeMetricsRequest(encodeMetricsRequest(original, 'json'), 'json')).toEqual(original);
    });
  });

  describe('the OTLP/JSON mapping', () => {
    it('accepts int64 as number or string, enums as int or name, snake_case names and upper-case hex', () => {
      const body = JSON.stringify({
        resource_spans: [
          {
            scope_spans: [
              {
                spans: [
                  {
                    trace_id: '0AF7651916CD43DD8448EB211C80319C',
                    spanId: 'B7AD6B7169203331',
                    name: 'x',
                    kind: 'SPAN_KIND_CLIENT',
                    startTimeUnixNano: 1796076000000000,
                    endTimeUnixNano: '1796076000000000500',
                    attributes: [{ key: 'n', value: { intValue: 12 } }],
                    status: { code: 1 },
                  },
                ],
              },
            ],
          },
        ],
        somethingUnknown: { ignored: true },
      });
      const span = decodeTraceRequest(body, 'json').resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
      expect(span.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
      expect(span.spanId).toBe('b7ad6b7169203331');
      expect(span.kind).toBe(3);
      expect(span.startTimeUnixNano).toBe('1796076000000000');
      expect(span.endTimeUnixNano).toBe('1796076000000000500');
      expect(span.attributes[0]!.value).toEqual({ intValue: '12' });
      expect(span.status).toEqual({ code: 1, message: '' });
    });

    it('accepts "NaN" and "Infinity" for doubles and writes them back as strings', () => {
      const req = request(1) as { resourceSpans: { scopeSpans: { spans: { attributes: unknown[] }[] }[] }[] };
      req.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.attributes = [
        { key: 'nan', value: { doubleValue: 'NaN' } },
        { key: 'inf', value: { doubleValue: '-Infinity' } },
      ];
      const decoded = decodeTraceRequest(JSON.stringify(req), 'json');
      const attrs = decoded.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.attributes;
      expect(attrs[0]!.value!.doubleValue).toBeNaN();
      expect(attrs[1]!.value!.doubleValue).toBe(Number.NEGATIVE_INFINITY);
      expect(encodeTraceRequest(decoded, 'json')).toContain('"doubleValue":"-Infinity"');
      expect(decodeTraceRequest(encodeTraceRequest(decoded, 'protobuf'), 'protobuf')).toEqual(decoded);
    });
  });

  describe('64-bit integers', () => {
    it('round-trip at the edges of int64 and uint64 through protobuf and JSON', () => {
      const req = request(1) as { resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[] };
      const span = req.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
      span.endTimeUnixNano = '18446744073709551615';
      span.attributes = [
        { key: 'min', value: { intValue: '-9223372036854775808' } },
        { key: 'max', value: { intValue: 9223372036854775807n.toString() } },
        { key: 'neg', value: { intValue: -5 } },
        { key: 'zero', value: { intValue: '0' } },
      ];
      const decoded = decodeTraceRequest(JSON.stringify(req), 'json');
      const again = decodeTraceRequest(encodeTraceRequest(decoded, 'protobuf'), 'protobuf');
      expect(again).toEqual(decoded);
      const s = again.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
      expect(s.endTimeUnixNano).toBe('18446744073709551615');
      expect(s.attributes.map((a) => a.value!.intValue)).toEqual([
        '-9223372036854775808',
        '9223372036854775807',
        '-5',
        '0',
      ]);
      expect(decodeTraceRequest(encodeTraceRequest(decoded, 'json'), 'json')).toEqual(decoded);
    });
  });

  describe('errors name the field path', () => {
    it('reports a bad trace id at its full path', () => {
      const req = request(5, 2) as { resourceSpans: { scopeSpans: { spans: { traceId: string }[] }[] }[] };
      req.resourceSpans[0]!.scopeSpans[1]!.spans[4]!.traceId = 'abc';
      expectOtlpError(
        () => decodeTraceRequest(JSON.stringify(req), 'json'),
        'invalid_field',
        'resourceSpans[0].scopeSpans[1].spans[4].traceId: expected 32 hex characters',
      );
    });

    it('reads a missing span id as empty (as the Collector does), reports a short one, a wrong type and two oneof members', () => {
      const missing = request(1) as {
        resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[];
      };
      delete missing.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.spanId;
      expect(
        decodeTraceRequest(JSON.stringify(missing), 'json').resourceSpans[0]!.scopeSpans[0]!.spans[0]!.spanId,
      ).toBe('');
      const short = request(1) as { resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[] };
      short.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.spanId = 'abcd';
      expectOtlpError(
        () => decodeTraceRequest(JSON.stringify(short), 'json'),
        'invalid_field',
        'resourceSpans[0].scopeSpans[0].spans[0].spanId: expected 16 hex characters',
      );
      const wrong = request(1) as { resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[] };
      wrong.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.name = 42;
      expectOtlpError(
        () => decodeTraceRequest(JSON.stringify(wrong), 'json'),
        'invalid_field',
        'resourceSpans[0].scopeSpans[0].spans[0].name: expected a string, got number',
      );
      const both = request(1) as { resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[] };
      both.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.attributes = [
        { key: 'k', value: { stringValue: 'a', intValue: '1' } },
      ];
      expectOtlpError(
        () => decodeTraceRequest(JSON.stringify(both), 'json'),
        'invalid_field',
        /^resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.attributes\[0\]\.value: expected at most one of/,
      );
    });

    it('rejects out-of-range and non-integer 64-bit values', () => {
      const req = request(1) as { resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[] };
      req.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.startTimeUnixNano = '-1';
      expectOtlpError(
        () => decodeTraceRequest(JSON.stringify(req), 'json'),
        'invalid_field',
        /startTimeUnixNano/,
      );
      req.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.startTimeUnixNano = 1.5;
      expectOtlpError(
        () => decodeTraceRequest(JSON.stringify(req), 'json'),
        'invalid_field',
        /startTimeUnixNano/,
      );
    });

    it('checks id lengths in protobuf bodies too', () => {
      const type = otlpRoot.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
      const bytes = type
        .encode({
          resourceSpans: [
            { scopeSpans: [{ spans: [{ traceId: Buffer.alloc(3), spanId: Buffer.alloc(8) }] }] },
          ],
        })
        .finish();
      expectOtlpError(
        () => decodeTraceRequest(bytes, 'protobuf'),
        'invalid_field',
        'resourceSpans[0].scopeSpans[0].spans[0].traceId: expected a 16-byte id, got 3 bytes',
      );
    });

    it('never quotes the body in a JSON syntax error', () => {
      const e = expectOtlpError(() => decodeTraceRequest('{"secret-prompt": tru', 'json'), 'invalid_json');
      expect(e.message).not.toContain('secret');
      expectOtlpError(() => decodeTraceRequest('[1,2]', 'json'), 'invalid_json', /top level/);
      expectOtlpError(
        () => decodeTraceRequest(new Uint8Array([0x7b, 0xff, 0x7d]), 'json'),
        'invalid_json',
        /UTF-8/,
      );
      expectOtlpError(() => decodeTraceRequest('{}', 'xml' as 'json'), 'unsupported_format');
    });
  });

  describe('bad input never hangs or crashes', () => {
    it('rejects every truncation of a valid protobuf body with an OtlpError or decodes a prefix', async () => {
      const body = ProtobufTraceSerializer.serializeRequest(await sampleSpans())!;
      let rejected = 0;
      for (let len = 0; len < body.length; len++) {
        try {
          decodeTraceRequest(body.subarray(0, len), 'protobuf');
        } catch (err) {
          expect(err).toBeInstanceOf(OtlpError);
          rejected++;
        }
      }
      expect(rejected).toBeGreaterThan(body.length / 2);
    });

    it('survives 3 000 randomly corrupted bodies in both formats', async () => {
      const spans = await sampleSpans();
      const proto = ProtobufTraceSerializer.serializeRequest(spans)!;
      const json = JsonTraceSerializer.serializeRequest(spans)!;
      const random = prng(20261130);
      let failures = 0;
      for (let i = 0; i < 3000; i++) {
        const source = i % 2 === 0 ? proto : json;
        const bytes = Uint8Array.from(source);
        const flips = 1 + Math.floor(random() * 4);
        for (let f = 0; f < flips; f++)
          bytes[Math.floor(random() * bytes.length)] = Math.floor(random() * 256);
        try {
          decodeTraceRequest(bytes, i % 2 === 0 ? 'protobuf' : 'json');
        } catch (err) {
          expect(err).toBeInstanceOf(OtlpError);
          failures++;
        }
      }
      expect(failures).toBeGreaterThan(0);
    });

    it('rejects a length prefix far beyond the body without allocating it', () => {
      // Field 1 (resource_spans), wire type 2, length 2^30: a lie.
      const lie = Uint8Array.from([0x0a, 0x80, 0x80, 0x80, 0x80, 0x04, 0x01]);
      expectOtlpError(() => decodeTraceRequest(lie, 'protobuf'), 'invalid_protobuf', /index out of range/);
    });

    it('rejects nesting deeper than 100 levels in both formats', () => {
      let value: Record<string, unknown> = { stringValue: 'leaf' };
      for (let i = 0; i < 150; i++) value = { arrayValue: { values: [value] } };
      const req = request(1) as { resourceSpans: { scopeSpans: { spans: { attributes: unknown[] }[] }[] }[] };
      req.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.attributes = [{ key: 'deep', value }];
      expectOtlpError(() => decodeTraceRequest(JSON.stringify(req), 'json'), 'too_deep');
      // Build 150 levels by hand-wrapping bytes: AnyValue{array_value=5: ArrayValue{values=1: AnyValue}}.
      let inner: Uint8Array = Uint8Array.from([0x0a, 0x01, 0x78]); // AnyValue{string_value:"x"}
      for (let i = 0; i < 150; i++) {
        const array = Uint8Array.from([0x0a, ...varint(inner.length), ...inner]);
        inner = Uint8Array.from([0x2a, ...varint(array.length), ...array]);
      }
      const kv = Uint8Array.from([0x0a, 0x01, 0x64, 0x12, ...varint(inner.length), ...inner]);
      const span = Uint8Array.from([
        0x0a,
        0x10,
        ...Buffer.alloc(16, 1),
        0x12,
        0x08,
        ...Buffer.alloc(8, 1),
        0x4a,
        ...varint(kv.length),
        ...kv,
      ]);
      const scope = Uint8Array.from([0x12, ...varint(span.length), ...span]);
      const resource = Uint8Array.from([0x12, ...varint(scope.length), ...scope]);
      const body = Uint8Array.from([0x0a, ...varint(resource.length), ...resource]);
      expectOtlpError(() => decodeTraceRequest(body, 'protobuf'), 'too_deep');
    });

    it('turns a JSON document nested 100 000 levels deep into an OtlpError', () => {
      const body = `{"resourceSpans":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
      expect(() => decodeTraceRequest(body, 'json')).toThrow(OtlpError);
    });
  });

  describe('responses', () => {
    it('encodes full and partial success in both formats', () => {
      expect(encodeTraceResponse({}, 'protobuf')).toHaveLength(0);
      expect(encodeTraceResponse({}, 'json')).toBe('{}');
      const partial = {
        partialSuccess: { rejectedSpans: '2', errorMessage: 'spans[1]: missing session key' },
      };
      expect(decodeTraceResponse(encodeTraceResponse(partial, 'protobuf'), 'protobuf')).toEqual(partial);
      expect(JSON.parse(encodeTraceResponse(partial, 'json'))).toEqual(partial);
      expect(decodeTraceResponse(new Uint8Array(0), 'protobuf')).toEqual({});
    });
  });

  describe('attribute helpers', () => {
    it('round-trips a record through KeyValues, integers as intValue', () => {
      const record = { s: 'x', i: 3, d: 0.5, b: false, arr: ['a', 'b'] };
      const kvs = recordToAttributes(record);
      expect(kvs.find((kv) => kv.key === 'i')!.value).toEqual({ intValue: '3' });
      expect(attributesToRecord(kvs)).toEqual(record);
    });

    it('leaves out values with no API equivalent', () => {
      expect(
        attributesToRecord([
          { key: 'empty', value: {} },
          { key: 'map', value: { kvlistValue: { values: [] } } },
          { key: 'mixed', value: { arrayValue: { values: [{ stringValue: 'a' }, { intValue: '1' }] } } },
          { key: 'kept', value: { boolValue: true } },
        ]),
      ).toEqual({ kept: true });
    });

    it('upserts without touching the input list', () => {
      const before = recordToAttributes({ a: 'x', b: 'y' });
      const copy = structuredClone(before);
      const after = upsertAttributes(before, { b: 'z', c: 1 });
      expect(before).toEqual(copy);
      expect(attributesToRecord(after)).toEqual({ a: 'x', b: 'z', c: 1 });
      expect(after.map((kv) => kv.key)).toEqual(['a', 'b', 'c']);
    });

    it('a decoded request can be enriched and re-encoded', () => {
      const decoded: OtlpTraceRequest = decodeTraceRequest(JSON.stringify(request(1)), 'json');
      const span = decoded.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
      span.attributes = upsertAttributes(span.attributes, { 'continuity.state': 'preserved' });
      const again = decodeTraceRequest(encodeTraceRequest(decoded, 'protobuf'), 'protobuf');
      expect(attributesToRecord(again.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.attributes)).toEqual({
        'session.id': 's-1',
        'continuity.state': 'preserved',
      });
    });
  });
});

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}

describe('JSON integers', () => {
  it('keeps 64-bit integers above 2^53 exact, whether sent as numbers or strings', () => {
    const body = `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"${'1'.repeat(32)}","spanId":"${'2'.repeat(16)}","name":"n 12345678901234567890","kind":1,"startTimeUnixNano":1764500000000000001,"endTimeUnixNano":"1764500000000000003","attributes":[{"key":"big","value":{"intValue":9007199254740993}},{"key":"neg","value":{"intValue":-9223372036854775808}},{"key":"d","value":{"doubleValue":1.2345678901234567e3}}]}]}]}]}`;
    const span = decodeTraceRequest(body, 'json').resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
    expect(span.startTimeUnixNano).toBe('1764500000000000001');
    expect(span.endTimeUnixNano).toBe('1764500000000000003');
    expect(span.name).toBe('n 12345678901234567890');
    expect(span.attributes.map((a) => a.value?.intValue ?? a.value?.doubleValue)).toEqual([
      '9007199254740993',
      '-9223372036854775808',
      1234.5678901234567,
    ]);
  });
});
