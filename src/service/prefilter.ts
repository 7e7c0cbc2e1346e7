/**
 * The fast path for protobuf requests: one read-only walk over the wire bytes that answers "this
 * request holds only ordinary, well-formed spans within the limits" without building objects.
 * Such a request needs no correlation and no change, so its bytes are forwarded as they came.
 *
 * The walk is conservative: anything it does not positively recognise — a compaction span name,
 * an attribute over a limit, an unknown field, an unexpected wire type, a string that is not
 * UTF-8, an id of the wrong size, an enum out of range, a value nested deep — sends the request
 * down the full path (decode with the OTLP codec, inspect, correlate), which gives the
 * authoritative answer and error message. So the fast path never accepts what the full path
 * would refuse or change; it only skips work (test/service/prefilter.test.ts checks this on
 * thousands of mutated bodies).
 *
 * Field numbers and types are the OTLP specification's (opentelemetry/proto/trace/v1/trace.proto,
 * common/v1/common.proto, resource/v1/resource.proto), the same as the codec's descriptor.
 */
import { isUtf8 } from 'node:buffer';
import { Reader } from 'protobufjs/light.js';
import { isCompactionSpanName } from '../otel/attributes.js';
import type { SpanLimits } from './enrich.js';

/** What the walk concluded. */
export type ScanResult =
  /** Only ordinary spans, all well-formed and within the limits: forward the bytes unchanged. */
  | { path: 'plain'; spans: number }
  /** Needs the full path (compaction spans, something over a limit, or anything unusual). */
  | { path: 'full' };

/** How one field is read. */
type Field =
  | { k: 'msg'; m: string }
  | { k: 'string' }
  | { k: 'name' }
  | { k: 'value' }
  | { k: 'bytes' }
  | { k: 'id'; n: number; optional?: boolean }
  | { k: 'varint'; max?: number }
  | { k: 'i64' }
  | { k: 'i32' };

const msg = (m: string): Field => ({ k: 'msg', m });
const STR: Field = { k: 'string' };
const VARINT: Field = { k: 'varint' };
const I64: Field = { k: 'i64' };
const I32: Field = { k: 'i32' };

/** The messages of an ExportTraceServiceRequest, field number → how to read it. */
const MESSAGES: Readonly<Record<string, Readonly<Record<number, Field>>>> = {
  Request: { 1: msg('ResourceSpans') },
  ResourceSpans: { 1: msg('Resource'), 2: msg('ScopeSpans'), 3: STR },
  Resource: { 1: msg('KeyValue'), 2: VARINT, 3: msg('EntityRef') },
  EntityRef: { 1: STR, 2: STR, 3: STR, 4: STR },
  ScopeSpans: { 1: msg('Scope'), 2: msg('Span'), 3: STR },
  Scope: { 1: STR, 2: STR, 3: msg('KeyValue'), 4: VARINT },
  Span: {
    1: { k: 'id', n: 16 },
    2: { k: 'id', n: 8 },
    3: STR,
    4: { k: 'id', n: 8, optional: true },
    5: { k: 'name' },
    6: { k: 'varint', max: 5 },
    7: I64,
    8: I64,
    9: msg('KeyValue'),
    10: VARINT,
    11: msg('Event'),
    12: VARINT,
    13: msg('Link'),
    14: VARINT,
    15: msg('Status'),
    16: I32,
  },
  Event: { 1: I64, 2: STR, 3: msg('KeyValue'), 4: VARINT },
  Link: { 1: { k: 'id', n: 16 }, 2: { k: 'id', n: 8 }, 3: STR, 4: msg('KeyValue'), 5: VARINT, 6: I32 },
  Status: { 2: STR, 3: { k: 'varint', max: 2 } },
  KeyValue: { 1: STR, 2: msg('AnyValue') },
  AnyValue: {
    1: { k: 'value' },
    2: VARINT,
    3: VARINT,
    4: I64,
    5: msg('ArrayValue'),
    6: msg('KeyValueList'),
    7: { k: 'bytes' },
  },
  ArrayValue: { 1: msg('AnyValue') },
  KeyValueList: { 1: msg('KeyValue') },
};

/** Ids that must be present (non-empty) in a message. */
const REQUIRED_IDS: Readonly<Record<string, readonly number[]>> = { Span: [1, 2], Link: [1, 2] };

const WIRE: Readonly<Record<Field['k'], number>> = {
  msg: 2,
  string: 2,
  name: 2,
  value: 2,
  bytes: 2,
  id: 2,
  varint: 0,
  i64: 1,
  i32: 5,
};

/** Messages nested deeper than this are left to the codec (its own depth limit applies there). */
const MAX_DEPTH = 24;
/** `agent.`: every compaction span name starts with it, so other names are never decoded. */
const AGENT_PREFIX = Buffer.from('agent.');
const FULL: ScanResult = { path: 'full' };

/** Thrown inside the walk to leave it at once; never escapes {@link scanTraceRequest}. */
class NeedsFull {}
const NEEDS_FULL = new NeedsFull();

class Walk {
  spans = 0;
  constructor(
    private readonly _r: Reader,
    private readonly _buf: Buffer,
    private readonly _limits: SpanLimits,
  ) {}

  message(type: string, end: number, depth: number): void {
    if (depth > MAX_DEPTH) throw NEEDS_FULL;
    const fields = MESSAGES[type]!;
    const r = this._r;
    let attributes = 0;
    let members = 0;
    const required = REQUIRED_IDS[type];
    let ids = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      const field = fields[tag >>> 3];
      if (field === undefined || (tag & 7) !== WIRE[field.k]) throw NEEDS_FULL;
      // AnyValue is a oneof: a second member is the codec's to judge.
      if (type === 'AnyValue' && ++members > 1) throw NEEDS_FULL;
      switch (field.k) {
        case 'varint':
          this._varint(end, field.max);
          break;
        case 'i64':
          r.skip(8);
          break;
        case 'i32':
          r.skip(4);
          break;
        default: {
          const len = r.uint32();
          const start = r.pos;
          const stop = start + len;
          if (stop > end) throw NEEDS_FULL;
          this._bytes(type, tag >>> 3, field, start, stop, depth);
          if (field.k === 'id' && required?.includes(tag >>> 3) && len > 0) ids++;
          if (type === 'Span' && tag >>> 3 === 9 && ++attributes > this._limits.maxAttributesPerSpan)
            throw NEEDS_FULL;
          r.pos = stop;
        }
      }
    }
    if (r.pos !== end) throw NEEDS_FULL;
    if (required && ids < required.length) throw NEEDS_FULL;
    if (type === 'Span') this.spans++;
  }

  /**
   * Skips a varint of at most 10 bytes (the codec refuses longer ones). A bounded enum must be a
   * single byte within range: anything else (e.g. a negative value, 10 bytes) goes the full way.
   */
  private _varint(end: number, max: number | undefined): void {
    const r = this._r;
    const buf = this._buf;
    let n = 0;
    let b: number;
    do {
      if (r.pos >= end) throw NEEDS_FULL;
      b = buf[r.pos++]!;
      n++;
    } while (b & 0x80 && n < 10);
    if (b & 0x80) throw NEEDS_FULL;
    if (max !== undefined && (n !== 1 || b > max)) throw NEEDS_FULL;
  }

  private _bytes(_type: string, _field: number, f: Field, start: number, stop: number, depth: number): void {
    const len = stop - start;
    const buf = this._buf;
    switch (f.k) {
      case 'msg':
        this.message(f.m, stop, depth + 1);
        return;
      case 'id':
        if (len !== f.n && !(f.optional && len === 0)) throw NEEDS_FULL;
        return;
      case 'bytes':
        // The decoded form is base64; its length is what the limit applies to.
        if (4 * Math.ceil(len / 3) > this._limits.maxAttributeValueLength) throw NEEDS_FULL;
        return;
      case 'name':
        if (!isUtf8(buf.subarray(start, stop))) throw NEEDS_FULL;
        if (
          len >= AGENT_PREFIX.length &&
          buf.compare(AGENT_PREFIX, 0, AGENT_PREFIX.length, start, start + AGENT_PREFIX.length) === 0
        ) {
          if (isCompactionSpanName(buf.toString('utf8', start, stop))) throw NEEDS_FULL;
        }
        return;
      case 'value': {
        if (!isUtf8(buf.subarray(start, stop))) throw NEEDS_FULL;
        // UTF-8 bytes ≥ UTF-16 units, so only a long value needs decoding to be measured.
        if (
          len > this._limits.maxAttributeValueLength &&
          buf.toString('utf8', start, stop).length > this._limits.maxAttributeValueLength
        ) {
          throw NEEDS_FULL;
        }
        return;
      }
      default:
        if (!isUtf8(buf.subarray(start, stop))) throw NEEDS_FULL;
    }
  }
}

/**
 * Walks an ExportTraceServiceRequest in protobuf. Returns `plain` with the span count only when
 * the request can be forwarded as is; `full` otherwise. Never throws.
 */
export function scanTraceRequest(body: Uint8Array, limits: SpanLimits): ScanResult {
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const walk = new Walk(Reader.create(buf), buf, limits);
  try {
    walk.message('Request', buf.length, 0);
  } catch {
    // NEEDS_FULL, or the reader ran past the end (a truncated varint): the codec names the problem.
    return FULL;
  }
  return { path: 'plain', spans: walk.spans };
}
