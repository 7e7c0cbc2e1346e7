/**
 * The splice path for protobuf trace requests: the walk accepts what a protobuf decoder accepts
 * (unknown fields, empty ids, strings that are not UTF-8, attributes of any size and count) and
 * refuses what it refuses (truncation, wrong wire types, groups); compaction spans are found by
 * name; splicing replaces or cuts out exactly those spans and rewrites the enclosing lengths,
 * every other byte unchanged.
 */
import { readFileSync } from 'node:fs';
import { Writer } from 'protobufjs/light.js';
import { describe, expect, it } from 'vitest';
import { snapshotAttributes } from '../../src/otel/attributes.js';
import {
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import {
  decodeSpan,
  decodeTraceRequest,
  encodeSpan,
  encodeTraceRequest,
  recordToAttributes,
  upsertAttributes,
} from '../../src/otlp/index.js';
import { type SpanSite, splice, walkTraceRequest } from '../../src/service/splice.js';
import { snap } from '../correlate/helpers.js';
import { otlpSpan } from './harness.js';

/** A length-delimited field. */
function len(w: Writer, field: number, bytes: Uint8Array): Writer {
  return w.uint32((field << 3) | 2).bytes(bytes);
}

/**
 * An ordinary span written by hand, with what the Collector passes and a strict codec would not:
 * an empty span id, a name that is not UTF-8, an unknown field of each wire type, a 20 000-byte
 * attribute and `attributes` KeyValues.
 */
function oddSpan(seed: number, attributes: number): Uint8Array {
  const w = Writer.create();
  len(w, 1, Buffer.alloc(16, seed)); // trace id
  len(w, 2, Buffer.alloc(0)); // empty span id
  len(w, 5, Buffer.from([0x6f, 0xff, 0xfe, 0x6b])); // not UTF-8
  w.uint32((7 << 3) | 1).fixed64(1764500000000000000);
  for (let i = 0; i < attributes; i++) {
    const any = Writer.create();
    len(any, 1, Buffer.from(i === 0 ? 'x'.repeat(20_000) : `v${i}`));
    const kv = Writer.create();
    len(kv, 1, Buffer.from(`k${i}`));
    len(kv, 2, any.finish());
    len(w, 9, kv.finish());
  }
  w.uint32((99 << 3) | 0).uint64(123456789); // unknown varint
  w.uint32((100 << 3) | 1).fixed64(7); // unknown fixed64
  len(w, 101, Buffer.from('unknown bytes'));
  w.uint32((102 << 3) | 5).fixed32(9); // unknown fixed32
  return w.finish();
}

function compactionSpan(name: string, sessionId: string, phase: 'pre' | 'post', seed: number): Uint8Array {
  const span = otlpSpan({
    traceId: seed.toString(16).padStart(32, '0'),
    spanId: seed.toString(16).padStart(16, '0'),
    name,
    attributes: recordToAttributes(
      snapshotAttributes(phase, snap(sessionId, '2026-11-30T10:00:00Z'), { boundaryId: `${sessionId}-b` }),
    ),
  });
  return encodeSpan(span);
}

/** A request: resources × scopes, each scope holding the given span encodings. */
function request(resources: Uint8Array[][][]): Buffer {
  const req = Writer.create();
  for (const scopes of resources) {
    const rs = Writer.create();
    const resource = Writer.create();
    len(resource, 1, len(Writer.create(), 1, Buffer.from('service.name')).finish());
    len(rs, 1, resource.finish());
    for (const spans of scopes) {
      const ss = Writer.create();
      len(ss, 1, len(Writer.create(), 1, Buffer.from('scope')).finish());
      for (const s of spans) len(ss, 2, s);
      len(ss, 3, Buffer.from('https://example/schema'));
      len(rs, 2, ss.finish());
    }
    len(rs, 42, Buffer.from('unknown in ResourceSpans'));
    len(req, 1, rs.finish());
  }
  return Buffer.from(req.finish());
}

const contains = (hay: Buffer, needle: Uint8Array) => hay.indexOf(Buffer.from(needle)) >= 0;

describe('walkTraceRequest', () => {
  it('accepts what the Collector accepts in ordinary spans, finding no compaction span', () => {
    const spans = [oddSpan(1, 2000), oddSpan(2, 3)];
    const body = request([[spans]]);
    const walked = walkTraceRequest(body);
    expect(walked).toMatchObject({ ok: true, spans: 2, compaction: [] });
  });

  it('finds compaction spans by name, with their place in the request', () => {
    const body = request([
      [[oddSpan(1, 1)], [oddSpan(2, 1), compactionSpan(SPAN_COMPACTION_PRE, 's1', 'pre', 3)]],
      [[compactionSpan(SPAN_COMPACTION_POST, 's1', 'post', 4)]],
    ]);
    const walked = walkTraceRequest(body);
    if (!walked.ok) throw new Error(walked.error);
    expect(walked.spans).toBe(4);
    expect(walked.compaction.map((c) => [c.name, c.resource, c.scope, c.index])).toEqual([
      [SPAN_COMPACTION_PRE, 0, 1, 1],
      [SPAN_COMPACTION_POST, 1, 2, 0],
    ]);
  });

  it('refuses what a protobuf decoder refuses: truncation, a wrong wire type, a group', () => {
    const good = request([[[oddSpan(1, 2)]]]);
    expect(walkTraceRequest(good.subarray(0, good.length - 3)).ok).toBe(false);
    // ResourceSpans (field 1) sent as a varint.
    expect(walkTraceRequest(Buffer.from([0x08, 0x01]))).toMatchObject({ ok: false });
    // A start-group tag.
    expect(walkTraceRequest(Buffer.from([0x0b]))).toMatchObject({ ok: false });
    expect(walkTraceRequest(Buffer.alloc(0))).toMatchObject({ ok: true, spans: 0 });
  });

  it('never throws on corrupted bodies (mutation test)', () => {
    const good = request([
      [[oddSpan(1, 5), compactionSpan(SPAN_COMPACTION_PRE, 's1', 'pre', 3)], [oddSpan(2, 2)]],
    ]);
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    for (let i = 0; i < 3000; i++) {
      const bad = Buffer.from(good);
      for (let k = 0; k < 1 + (i % 4); k++) bad[rand() % bad.length] = rand() & 0xff;
      const walked = walkTraceRequest(bad);
      if (walked.ok) {
        // A body the walk accepts splices into one it accepts again, with the same span count.
        const out = Buffer.concat(
          splice(bad, walked, new Map(walked.compaction.map((c) => [c, null] as const))),
        );
        const again = walkTraceRequest(out);
        expect(again).toMatchObject({ ok: true, spans: walked.spans - walked.compaction.length });
      }
    }
  });
});

/**
 * A request as the real Collector 0.165.0 forwards it (otlp receiver → otlp_http exporter),
 * recorded from the binary `npm run test:stack` builds: an ordinary span with every field set
 * (status, flags, an event, a link, attributes of each kind), then a pre and a post span. pdata
 * writes each message's fields back to front: status first, a KeyValue's value before its key.
 */
const COLLECTOR_REQUEST = readFileSync(
  new URL('../fixtures/otelcol-0.165.0/traces-request.bin', import.meta.url),
);

describe('walkTraceRequest on what the Collector sends', () => {
  it('walks fields written back to front, finding the compaction spans the codec decodes', () => {
    // What makes the recording worth having: the order SDKs never write.
    expect(COLLECTOR_REQUEST.indexOf(Buffer.from('7a16', 'hex'))).toBeGreaterThan(0);
    const walked = walkTraceRequest(COLLECTOR_REQUEST);
    if (!walked.ok) throw new Error(walked.error);
    const decoded = decodeTraceRequest(COLLECTOR_REQUEST, 'protobuf');
    const spans = decoded.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    expect(walked.spans).toBe(spans.length);
    expect(spans.map((s) => s.name)).toEqual(['llm.call', SPAN_COMPACTION_PRE, SPAN_COMPACTION_POST]);
    expect(spans[0]!.status).toEqual({ code: 2, message: 'upstream timed out' });
    expect(walked.compaction.map((c) => [c.name, c.index])).toEqual([
      [SPAN_COMPACTION_PRE, 1],
      [SPAN_COMPACTION_POST, 2],
    ]);
  });

  it('still refuses a wrong wire type in a value-first attribute or in a status', () => {
    const kv = (value: Uint8Array, key: string) => {
      const w = Writer.create();
      len(w, 2, value);
      return len(w, 1, Buffer.from(key)).finish();
    };
    const spanWith = (...fields: ((w: Writer) => void)[]) => {
      const w = Writer.create();
      for (const f of fields) f(w);
      len(w, 5, Buffer.from('x'));
      return w.finish();
    };
    const good = spanWith(
      (w) => len(w, 15, Writer.create().uint32(0x18).uint32(2).uint32(0x12).string('m').finish()),
      (w) => len(w, 9, kv(Writer.create().uint32(0x18).int64(7).finish(), 'n')),
      (w) => w.uint32((16 << 3) | 5).fixed32(0x301),
    );
    expect(walkTraceRequest(request([[[good]]]))).toMatchObject({ ok: true, spans: 1 });
    // AnyValue.bool_value (field 2, a varint) as bytes, after the value-first order.
    const badValue = spanWith((w) => len(w, 9, kv(len(Writer.create(), 2, Buffer.from('1')).finish(), 'n')));
    expect(walkTraceRequest(request([[[badValue]]]))).toMatchObject({ ok: false });
    // Status.code (field 3, a varint) as bytes.
    const badStatus = spanWith((w) => len(w, 15, len(Writer.create(), 3, Buffer.from('2')).finish()));
    expect(walkTraceRequest(request([[[badStatus]]]))).toMatchObject({ ok: false });
    // flags (field 16, fixed32) cut short at the end of the span.
    const shortFlags = Buffer.concat([spanWith(), Buffer.from([0x85, 0x01, 0x01])]);
    expect(walkTraceRequest(request([[[shortFlags]]]))).toMatchObject({ ok: false });
  });

  it('never throws on corrupted Collector bodies (mutation test)', () => {
    let seed = 11;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    for (let i = 0; i < 3000; i++) {
      const bad = Buffer.from(COLLECTOR_REQUEST);
      for (let k = 0; k < 1 + (i % 4); k++) bad[rand() % bad.length] = rand() & 0xff;
      const walked = walkTraceRequest(bad);
      if (walked.ok) {
        const out = Buffer.concat(
          splice(bad, walked, new Map(walked.compaction.map((c) => [c, null] as const))),
        );
        expect(walkTraceRequest(out)).toMatchObject({
          ok: true,
          spans: walked.spans - walked.compaction.length,
        });
      }
    }
  });
});

describe('splice', () => {
  it('replaces and cuts out compaction spans, rewrites the lengths, and keeps every other byte', () => {
    const ordinary = [oddSpan(1, 300), oddSpan(2, 1), oddSpan(5, 2)];
    const pre = compactionSpan(SPAN_COMPACTION_PRE, 's1', 'pre', 3);
    const post = compactionSpan(SPAN_COMPACTION_POST, 's1', 'post', 4);
    const body = request([[[ordinary[0]!, pre], [ordinary[1]!]], [[post, ordinary[2]!]]]);
    const walked = walkTraceRequest(body);
    if (!walked.ok) throw new Error(walked.error);
    const [preSite, postSite] = walked.compaction as [SpanSite, SpanSite];
    const decoded = decodeSpan(body.subarray(postSite.start, postSite.end));
    decoded.attributes = upsertAttributes(decoded.attributes, { [ATTR_CONTINUITY_STATE]: 'preserved' });
    const enriched = encodeSpan(decoded);
    const parts = splice(
      body,
      walked,
      new Map<SpanSite, Uint8Array | null>([
        [preSite, null],
        [postSite, enriched],
      ]),
    );
    // The request's own bytes are not copied: all of them but the two spans and the length
    // prefixes rewritten (two scopes and two resources, at most 4 bytes each) are views into it.
    const views = parts.filter((p) => p.buffer === body.buffer);
    expect(views.reduce((n, p) => n + p.length, 0)).toBeGreaterThanOrEqual(
      body.length - (preSite.end - preSite.tagStart) - (postSite.end - postSite.tagStart) - 16,
    );
    const out = Buffer.concat(parts);
    const again = walkTraceRequest(out);
    if (!again.ok) throw new Error(again.error);
    expect(again.spans).toBe(4);
    expect(again.compaction.map((c) => c.name)).toEqual([SPAN_COMPACTION_POST]);
    const site = again.compaction[0]!;
    const read = decodeSpan(out.subarray(site.start, site.end));
    expect(read.attributes.find((a) => a.key === ATTR_CONTINUITY_STATE)?.value?.stringValue).toBe(
      'preserved',
    );
    expect(read.attributes.find((a) => a.key === ATTR_SESSION_ID)?.value?.stringValue).toBe('s1');
    // The ordinary spans, unknown fields and all, are in the output byte for byte, and the
    // output is exactly the input less the pre span and with the post span swapped.
    for (const o of ordinary) expect(contains(out, o)).toBe(true);
    expect(contains(out, pre)).toBe(false);
    expect(out.length).toBe(body.length - (preSite.end - preSite.tagStart) + (enriched.length - post.length));
  });

  it('gives a request the codec decodes to the same spans as a decode, edit and re-encode would', () => {
    const pre = compactionSpan(SPAN_COMPACTION_PRE, 's2', 'pre', 8);
    const other = compactionSpan('work', 's2', 'pre', 9);
    const body = request([[[other, pre, other]]]);
    const walked = walkTraceRequest(body);
    if (!walked.ok) throw new Error(walked.error);
    const out = Buffer.concat(splice(body, walked, new Map([[walked.compaction[0]!, null]])));
    const viaCodec = decodeTraceRequest(body, 'protobuf');
    viaCodec.resourceSpans[0]!.scopeSpans[0]!.spans.splice(1, 1);
    expect(decodeTraceRequest(out, 'protobuf')).toEqual(
      decodeTraceRequest(encodeTraceRequest(viaCodec, 'protobuf'), 'protobuf'),
    );
  });
});
