/**
 * Compaction spans read and enriched from their bytes (`span-wire.ts`), against the codec as the
 * oracle: what the fast reader reads is what the codec decodes; what the fast patch writes decodes
 * as the decoded span enriched and re-encoded; every span the reader cannot read exactly as the
 * codec would is left to the codec (undefined), never read differently.
 */
import { Writer } from 'protobufjs/light.js';
import { describe, expect, it } from 'vitest';
import {
  activityAttributes,
  approvalAttributes,
  DECISION_FIELDS_READ,
  readCompactionEvent,
  readCompactionSpan,
  SPAN_LEVEL_KEYS,
  snapshotAttributes,
} from '../../src/otel/attributes.js';
import {
  ATTR_CONTINUITY_ACTION,
  ATTR_CONTINUITY_STATE,
  decisionAttr,
  parseDecisionAttr,
  SPAN_ACTIVITY,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import {
  attributesToRecord,
  decodeSpan,
  encodeSpan,
  encodeTraceRequest,
  recordToAttributes,
} from '../../src/otlp/index.js';
import type { OtlpKeyValue, OtlpSpan } from '../../src/otlp/types.js';
import { applyPostEnrichment } from '../../src/service/enrich.js';
import { patchWireSpan, readWireSpan, type WireSpan } from '../../src/service/span-wire.js';
import { type SpanSite, walkTraceRequest } from '../../src/service/splice.js';
import { snap } from '../correlate/helpers.js';

const LIMITS = { maxAttributeValueLength: 4096, maxAttributesPerSpan: 128 };

/** A deterministic generator, so a failure names its seed. */
function rng(seed: number): () => number {
  let x = seed * 2654435761 + 1;
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
}

const hex = (n: number, len: number) => n.toString(16).padStart(len, '0');

/** Extra attribute values of every kind the fast reader reads. */
function extraAttributes(r: () => number): OtlpKeyValue[] {
  const out: OtlpKeyValue[] = [];
  const n = Math.floor(r() * 8);
  for (let i = 0; i < n; i++) {
    const kind = Math.floor(r() * 8);
    const key = `extra.${i}.${'é'.repeat(Math.floor(r() * 3))}`;
    const values: Array<OtlpKeyValue['value']> = [
      { stringValue: `v${Math.floor(r() * 1e6)}ü✓` },
      { boolValue: r() < 0.5 },
      { intValue: String(Math.floor(r() * 2 ** 40)) },
      { doubleValue: r() * 1000 - 500 },
      { bytesValue: Buffer.from([1, 2, Math.floor(r() * 255)]).toString('base64') },
      { arrayValue: { values: [{ stringValue: 'a' }, { stringValue: 'b' }] } },
      { arrayValue: { values: [{ intValue: '1' }, { stringValue: 'mixed' }] } },
      {},
    ];
    out.push({ key, value: values[kind]! });
  }
  return out;
}

/** A compaction span as an SDK would export it, with extra attributes, events, links and a status. */
function compactionSpan(seed: number, phase: 'pre' | 'post'): OtlpSpan {
  const r = rng(seed);
  const attrs = recordToAttributes(
    snapshotAttributes(phase, snap(`s-${seed}`, '2026-11-30T10:00:00Z'), {
      boundaryId: `b-${seed}`,
      runtime: 'sdk',
      trigger: 'auto',
    }),
  );
  const extra = extraAttributes(r);
  return {
    traceId: hex(seed + 1, 32),
    spanId: hex(seed + 1, 16),
    traceState: r() < 0.5 ? '' : 'k=v',
    parentSpanId: r() < 0.5 ? '' : hex(seed + 7, 16),
    flags: 1,
    name: phase === 'pre' ? SPAN_COMPACTION_PRE : SPAN_COMPACTION_POST,
    kind: 1,
    startTimeUnixNano: String(1764500000000000000n + BigInt(seed)),
    endTimeUnixNano: '1764500000100000000',
    attributes: r() < 0.5 ? [...extra, ...attrs] : [...attrs, ...extra],
    droppedAttributesCount: 0,
    events: r() < 0.5 ? [] : [{ timeUnixNano: '1', name: 'e', attributes: extra, droppedAttributesCount: 0 }],
    droppedEventsCount: 0,
    links:
      r() < 0.5
        ? []
        : [
            {
              traceId: hex(seed + 3, 32),
              spanId: hex(seed + 3, 16),
              traceState: '',
              attributes: [],
              droppedAttributesCount: 0,
              flags: 0,
            },
          ],
    droppedLinksCount: 0,
    status: { message: 'ok', code: 1 },
  } as OtlpSpan;
}

/** A request holding `span`'s bytes (plus `tail` appended to them), and its walked site. */
function inRequest(spanBytes: Uint8Array): { body: Buffer; site: SpanSite } {
  const w = Writer.create();
  w.uint32((1 << 3) | 2).fork(); // resourceSpans
  w.uint32((2 << 3) | 2).fork(); // scopeSpans
  w.uint32((2 << 3) | 2).bytes(spanBytes); // spans
  w.ldelim();
  w.ldelim();
  const body = Buffer.from(w.finish());
  const walked = walkTraceRequest(body);
  if (!walked.ok) throw new Error(walked.error);
  expect(walked.compaction).toHaveLength(1);
  return { body, site: walked.compaction[0]! };
}

/**
 * The wire reader answers what the record of the decoded span holds, for every key the codec
 * reads, and the codec reads the same event from either.
 */
function expectSameReading(wire: WireSpan, decoded: OtlpSpan, what: string): void {
  const record = attributesToRecord(decoded.attributes);
  for (const key of SPAN_LEVEL_KEYS)
    expect(wire.source.attribute(key), `${what}: ${key}`).toEqual(record[key]);
  const names = new Set(
    Object.keys(record)
      .map((k) => parseDecisionAttr(k)?.name)
      .filter((n) => n !== undefined),
  );
  for (const name of names) {
    for (const field of DECISION_FIELDS_READ) {
      expect(wire.source.decision(name)?.[field], `${what}: ${name}.${field}`).toEqual(
        record[decisionAttr(name, field)],
      );
    }
  }
  const ref = { traceId: decoded.traceId, spanId: decoded.spanId };
  expect(readCompactionEvent(wire.name, wire.source, wire.startTimeUnixNano, ref), what).toEqual(
    readCompactionSpan(decoded.name, record, decoded.startTimeUnixNano, ref),
  );
}

describe('readWireSpan reads what the codec decodes', () => {
  it('for 300 generated compaction spans of every attribute kind', () => {
    for (let seed = 0; seed < 300; seed++) {
      const span = compactionSpan(seed, seed % 2 ? 'post' : 'pre');
      const bytes = encodeSpan(span);
      const { body, site } = inRequest(bytes);
      const wire = readWireSpan(body, site, LIMITS);
      const decoded = decodeSpan(bytes);
      expect(wire, `seed ${seed}`).toBeDefined();
      expect(wire!.name).toBe(decoded.name);
      expect(wire!.traceId).toBe(decoded.traceId);
      expect(wire!.spanId).toBe(decoded.spanId);
      expect(wire!.startTimeUnixNano).toBe(decoded.startTimeUnixNano);
      expectSameReading(wire!, decoded, `seed ${seed}`);
      // The same span as an approval and as an activity span, with their own attributes.
      for (const [name, attrs] of [
        [
          SPAN_DECISION_APPROVAL,
          approvalAttributes(`s-${seed}`, {
            decision: 'scope',
            fromDigest: `sha256:${'a'.repeat(64)}`,
            toDigest: `sha256:${'b'.repeat(64)}`,
            approvalRef: `ticket-${seed}`,
            approvedBy: seed % 3 ? 'alice' : 'bad id!',
            approvedAt: '2026-11-30T10:00:00Z',
          }),
        ],
        [SPAN_ACTIVITY, activityAttributes(`s-${seed}`, seed % 3 ? 'working' : ('odd' as never))],
      ] as const) {
        const other = {
          ...span,
          name,
          attributes: [...span.attributes.slice(-3), ...recordToAttributes(attrs)],
        };
        const otherBytes = encodeSpan(other);
        const at = inRequest(otherBytes);
        expectSameReading(
          readWireSpan(at.body, at.site, LIMITS)!,
          decodeSpan(otherBytes),
          `seed ${seed} ${name}`,
        );
      }
      expect(wire!.attributeKeys).toEqual(decoded.attributes.map((kv) => kv.key));
      expect(wire!.attributeSpans).toHaveLength(2 * decoded.attributes.length);
      expect(wire!.links).toEqual(decoded.links.map((l) => ({ traceId: l.traceId, spanId: l.spanId })));
    }
  });

  it('reads every string as the codec does though the short ones are kept: many more than are kept, read again in any order', () => {
    // 6000 distinct short keys and values the codec reads (decision fields of random names; two
    // to three bytes a character, some of them), in spans read three times in shuffled order:
    // slots are shared, overwritten and found again.
    const r = rng(11);
    const spans = Array.from({ length: 200 }, (_, i) => {
      const span = compactionSpan(1000 + i, 'pre');
      for (let k = 0; k < 15; k++) {
        const n = Math.floor(r() * 1e9);
        span.attributes.push({
          key: `continuity.decision.d${n.toString(36)}.${k % 2 ? 'source' : 'observed_at'}`,
          value: { stringValue: `✓${n}${'ü'.repeat(n % 3)}` },
        });
      }
      return inRequest(encodeSpan(span));
    });
    for (let pass = 0; pass < 3; pass++) {
      const order = spans.map((_, i) => i).sort(() => r() - 0.5);
      for (const i of order) {
        const { body, site } = spans[i]!;
        const decoded = decodeSpan(body.subarray(site.start, site.end));
        expectSameReading(readWireSpan(body, site, LIMITS)!, decoded, `span ${i}`);
      }
    }
    // Bytes that are not UTF-8 are never taken for the valid string read before them.
    const odd = compactionSpan(5, 'pre');
    odd.attributes.push({ key: 'continuity.decision.odd.source', value: { stringValue: 'prüfung' } });
    const { body, site } = inRequest(encodeSpan(odd));
    expect(readWireSpan(body, site, LIMITS)!.source.decision('odd')?.source).toBe('prüfung');
    const broken = Buffer.from(body);
    broken[broken.indexOf(Buffer.from('prüfung')) + 3] = 0x28; // 0xc3 0x28: not UTF-8
    expect(readWireSpan(broken, site, LIMITS)).toBeUndefined();
  });

  it('keeps of the attributes only what the codec reads, and the codec reads nothing else', () => {
    // Every key the codec asks for, over spans of every kind with extra attributes, is one the
    // reader keeps: a key missing from SPAN_LEVEL_KEYS would read as absent from the bytes.
    const asked = new Set<string>();
    const decisionFields = new Set<string>();
    for (let seed = 0; seed < 200; seed++) {
      const span = compactionSpan(seed, seed % 2 ? 'post' : 'pre');
      const names = [SPAN_COMPACTION_PRE, SPAN_COMPACTION_POST, SPAN_DECISION_APPROVAL, SPAN_ACTIVITY];
      const record = attributesToRecord(span.attributes);
      const fields: Record<string, unknown> = {};
      readCompactionEvent(
        names[seed % 4]!,
        {
          attribute: (key) => {
            asked.add(key);
            return record[key];
          },
          decision: (name) =>
            new Proxy(fields, {
              get: (_t, field) => {
                decisionFields.add(String(field));
                return record[decisionAttr(name, field as 'digest')];
              },
            }),
        },
        span.startTimeUnixNano,
      );
    }
    expect([...asked].every((k) => SPAN_LEVEL_KEYS.includes(k))).toBe(true);
    expect(asked.size).toBeGreaterThan(10);
    expect([...decisionFields].sort()).toEqual([...DECISION_FIELDS_READ].sort());
  });

  /** A post span's bytes with one more attribute written by hand. */
  const withAttribute = (write: (w: Writer) => void): Uint8Array => {
    const w = Writer.create();
    w.uint32((9 << 3) | 2).fork();
    w.uint32((1 << 3) | 2).string('odd');
    w.uint32((2 << 3) | 2).fork();
    write(w);
    w.ldelim();
    w.ldelim();
    return Buffer.concat([encodeSpan(compactionSpan(1, 'post')), w.finish()]);
  };
  const cases: Array<[string, Uint8Array]> = [
    [
      'a string that is not UTF-8',
      withAttribute((w) => w.uint32((1 << 3) | 2).bytes(Buffer.from([0xc3, 0x28]))),
    ],
    [
      'two values of the oneof',
      withAttribute((w) =>
        w
          .uint32((1 << 3) | 2)
          .string('a')
          .uint32(2 << 3)
          .bool(true),
      ),
    ],
    [
      'a key-value list',
      withAttribute((w) =>
        w
          .uint32((6 << 3) | 2)
          .fork()
          .ldelim(),
      ),
    ],
    ['a negative integer', withAttribute((w) => w.uint32(3 << 3).int64(-5))],
    ['an integer above 2^49', withAttribute((w) => w.uint32(3 << 3).int64('1125899906842625'))],
    [
      'a nested array',
      withAttribute((w) =>
        w
          .uint32((5 << 3) | 2)
          .fork()
          .uint32((1 << 3) | 2)
          .fork()
          .uint32((5 << 3) | 2)
          .fork()
          .ldelim()
          .ldelim()
          .ldelim(),
      ),
    ],
    ['a value over the length limit', withAttribute((w) => w.uint32((1 << 3) | 2).string('x'.repeat(5000)))],
    [
      'a repeated key',
      Buffer.concat([
        encodeSpan(compactionSpan(4, 'post')),
        encodeSpan({
          ...compactionSpan(4, 'post'),
          attributes: compactionSpan(4, 'post').attributes.slice(0, 1),
        }),
      ]),
    ],
    [
      'a 5-byte trace id',
      Buffer.concat([
        encodeSpan(compactionSpan(2, 'post')),
        Writer.create()
          .uint32((1 << 3) | 2)
          .bytes(Buffer.alloc(5, 1))
          .finish(),
      ]),
    ],
  ];
  for (const [what, bytes] of cases) {
    it(`leaves ${what} to the codec`, () => {
      const { body, site } = inRequest(bytes);
      expect(readWireSpan(body, site, LIMITS)).toBeUndefined();
    });
  }

  it('leaves a span with more attributes than the limit to the codec', () => {
    const span = compactionSpan(3, 'post');
    const { body, site } = inRequest(encodeSpan(span));
    expect(
      readWireSpan(body, site, { ...LIMITS, maxAttributesPerSpan: span.attributes.length - 1 }),
    ).toBeUndefined();
    expect(
      readWireSpan(body, site, { ...LIMITS, maxAttributesPerSpan: span.attributes.length }),
    ).toBeDefined();
  });
});

describe('patchWireSpan writes what the codec path writes', () => {
  it('for 300 generated post spans, replacing keys in place, adding only missing links, other bytes kept', () => {
    for (let seed = 0; seed < 300; seed++) {
      const r = rng(seed + 1000);
      const span = compactionSpan(seed, 'post');
      // An unknown field (number 99) the service must pass through.
      const unknown = Writer.create()
        .uint32((99 << 3) | 2)
        .string(`unknown-${seed}`)
        .finish();
      const bytes = Buffer.concat([encodeSpan(span), unknown]);
      const { body, site } = inRequest(bytes);
      const wire = readWireSpan(body, site, LIMITS)!;
      const record = {
        [ATTR_CONTINUITY_STATE]: 'preserved',
        [ATTR_CONTINUITY_ACTION]: 'continue',
        // Sometimes a key the span already has: it is replaced where it was.
        ...(r() < 0.5 && span.attributes[0] && { [span.attributes[0].key]: 'replaced' }),
        // Sometimes values of other kinds, written as the codec writes them.
        ...(r() < 0.3 && {
          'continuity.test.count': Math.floor(r() * 1000),
          'continuity.test.flag': r() < 0.5,
        }),
        ...(r() < 0.2 && { 'continuity.test.list': ['a', 'b'], 'continuity.test.ratio': r() }),
      };
      const links = [
        { traceId: hex(seed + 9, 32), spanId: hex(seed + 9, 16) },
        // Sometimes a link the span already has: not added twice.
        ...span.links.map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
      ];
      const patched = Buffer.concat(patchWireSpan(body, site, wire, record, links));

      const expected = decodeSpan(bytes);
      applyPostEnrichment(expected, { attributes: record, links });
      expect(decodeSpan(patched), `seed ${seed}`).toEqual(decodeSpan(encodeSpan(expected)));
      expect(Buffer.from(patched).includes(Buffer.from(unknown)), `seed ${seed}: unknown field kept`).toBe(
        true,
      );
    }
  });

  it('a spliced request with patched post spans decodes as the codec path', () => {
    const spans = [compactionSpan(1, 'pre'), compactionSpan(2, 'post')];
    const body = Buffer.from(
      encodeTraceRequest({ resourceSpans: [{ scopeSpans: [{ spans }] }] }, 'protobuf'),
    );
    const walked = walkTraceRequest(body);
    if (!walked.ok) throw new Error(walked.error);
    const site = walked.compaction[1]!;
    const wire = readWireSpan(body, site, LIMITS)!;
    const patched = Buffer.concat(
      patchWireSpan(body, site, wire, { [ATTR_CONTINUITY_STATE]: 'dropped' }, []),
    );
    const expected = decodeSpan(body.subarray(site.start, site.end));
    applyPostEnrichment(expected, { attributes: { [ATTR_CONTINUITY_STATE]: 'dropped' }, links: [] });
    expect(decodeSpan(patched)).toEqual(expected);
  });
});
