/**
 * The protobuf fast path never accepts what the full path (decode with the OTLP codec, inspect)
 * would refuse or change: checked on hand-made requests and on thousands of mutated bodies.
 */
import { describe, expect, it } from 'vitest';
import { snapshotAttributes } from '../../src/otel/attributes.js';
import { SPAN_COMPACTION_PRE } from '../../src/otel/semconv.js';
import { decodeTraceRequest, encodeTraceRequest, recordToAttributes } from '../../src/otlp/index.js';
import { inspectRequest } from '../../src/service/enrich.js';
import { scanTraceRequest } from '../../src/service/prefilter.js';
import { loadSixCases } from './six-cases.js';

const LIMITS = { maxAttributeValueLength: 64, maxAttributesPerSpan: 8 };
let seq = 1;

function span(name: string, attributes: Record<string, unknown> = {}, extra: object = {}) {
  const n = seq++;
  return {
    traceId: n.toString(16).padStart(32, '0'),
    spanId: n.toString(16).padStart(16, '0'),
    name,
    kind: 2,
    startTimeUnixNano: '1764500000000000000',
    endTimeUnixNano: '1764500000100000000',
    attributes: recordToAttributes(attributes as never),
    ...extra,
  };
}

function body(spans: object[]): Buffer {
  return Buffer.from(
    encodeTraceRequest(
      {
        resourceSpans: [
          {
            resource: { attributes: recordToAttributes({ 'service.name': 'x' }) },
            scopeSpans: [{ scope: { name: 's', version: '1' }, spans }],
            schemaUrl: 'https://opentelemetry.io/schemas/1.26.0',
          },
        ],
      },
      'protobuf',
    ),
  );
}

/** What the full path makes of a body: plain (count), or not plain (events, rejections, errors). */
function fullPath(bytes: Uint8Array): { plain: boolean; spans: number } {
  try {
    const r = inspectRequest(decodeTraceRequest(bytes, 'protobuf'), LIMITS);
    return { plain: r.events.length === 0 && r.rejectedByReason.size === 0, spans: r.accepted };
  } catch {
    return { plain: false, spans: 0 };
  }
}

const ORDINARY = body([
  span('llm.call', { 'gen_ai.request.model': 'm', tokens: 12, ratio: 0.5, ok: true, tags: ['a', 'b'] }),
  span(
    'agent.run',
    { 'session.id': 's-1' },
    {
      parentSpanId: 'aa'.repeat(8),
      events: [{ timeUnixNano: '1', name: 'e', attributes: [] }],
      links: [{ traceId: 'bb'.repeat(16), spanId: 'cc'.repeat(8) }],
      status: { code: 2, message: 'boom' },
      flags: 257,
    },
  ),
  span('tool.call'),
]);

describe('scanTraceRequest', () => {
  it('takes ordinary, well-formed spans as plain and counts them', () => {
    expect(scanTraceRequest(ORDINARY, LIMITS)).toEqual({ path: 'plain', spans: 3 });
    expect(fullPath(ORDINARY)).toEqual({ plain: true, spans: 3 });
    expect(scanTraceRequest(new Uint8Array(), LIMITS)).toEqual({ path: 'plain', spans: 0 });
  });

  it('sends compaction spans, limit breaches and malformed bodies down the full path', () => {
    const b = loadSixCases()[0]!;
    const cases = [
      body([
        span('llm.call'),
        span(SPAN_COMPACTION_PRE, snapshotAttributes('pre', { ...b.pre!, sessionId: 's' })),
      ]),
      body([span(SPAN_COMPACTION_PRE)]), // no session key: the full path rejects it by name
      body([span('x', { big: 'y'.repeat(65) })]),
      body([span('x', { big: 'é'.repeat(40) })]), // 80 bytes but 40 units: plain after measuring
      body([span('x', Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`k${i}`, i])))]),
      body([span('x', { nested: [['deep']] as never })]), // an array holding an empty value: forwarded either way
      ORDINARY.subarray(0, ORDINARY.length - 3),
    ];
    expect(cases.map((c) => scanTraceRequest(c, LIMITS).path)).toEqual([
      'full',
      'full',
      'full',
      'plain',
      'full',
      'plain',
      'full',
    ]);
    // Wherever the walk says plain, the full path agrees.
    for (const c of cases)
      if (scanTraceRequest(c, LIMITS).path === 'plain') expect(fullPath(c).plain).toBe(true);
  });

  it('never says plain where the full path would not forward the body unchanged (mutation test)', () => {
    let state = 12345;
    const rand = (n: number) => {
      state = (state * 1103515245 + 12345) >>> 0;
      return state % n;
    };
    let plain = 0;
    for (let i = 0; i < 20_000; i++) {
      const m = Buffer.from(ORDINARY);
      // One to three byte changes, anywhere.
      for (let k = 0, n = 1 + rand(3); k < n; k++) m[rand(m.length)] = rand(256);
      const scan = scanTraceRequest(m, LIMITS);
      if (scan.path === 'plain') {
        plain++;
        const f = fullPath(m);
        expect(f.plain, `mutation ${i}: ${m.toString('hex')}`).toBe(true);
        expect(f.spans).toBe(scan.spans);
      }
    }
    // Many mutations only touch a value: the fast path still takes those.
    expect(plain).toBeGreaterThan(100);
  });
});
