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
import { NAMESPACE } from '../otel/semconv.js';
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

// The table above compiled into arrays of one object shape, so the walk's property reads stay
// monomorphic (the walk runs for every span of every request).
const K_MSG = 0;
const K_STRING = 1;
const K_NAME = 2;
const K_VALUE = 3;
const K_BYTES = 4;
const K_ID = 5;
const K_VARINT = 6;
const K_I64 = 7;
const K_I32 = 8;
const KINDS: Readonly<Record<Field['k'], number>> = {
  msg: K_MSG,
  string: K_STRING,
  name: K_NAME,
  value: K_VALUE,
  bytes: K_BYTES,
  id: K_ID,
  varint: K_VARINT,
  i64: K_I64,
  i32: K_I32,
};

interface Compiled {
  kind: number;
  wire: number;
  /** Message index for K_MSG, else -1. */
  msg: number;
  /** Id byte length for K_ID. */
  n: number;
  /** Empty id allowed. */
  optional: boolean;
  /** Largest single-byte value for a bounded enum, else -1. */
  max: number;
}

const TYPE_NAMES = Object.keys(MESSAGES);
const TABLES: Array<Array<Compiled | undefined>> = TYPE_NAMES.map((t) => {
  const out: Array<Compiled | undefined> = [];
  for (const [no, f] of Object.entries(MESSAGES[t]!)) {
    out[Number(no)] = {
      kind: KINDS[f.k],
      wire: WIRE[f.k],
      msg: f.k === 'msg' ? TYPE_NAMES.indexOf(f.m) : -1,
      n: f.k === 'id' ? f.n : 0,
      optional: f.k === 'id' ? f.optional === true : false,
      max: f.k === 'varint' && f.max !== undefined ? f.max : -1,
    };
  }
  return out;
});
const T_REQUEST = TYPE_NAMES.indexOf('Request');
const T_SPAN = TYPE_NAMES.indexOf('Span');
const T_LINK = TYPE_NAMES.indexOf('Link');
const T_ANY = TYPE_NAMES.indexOf('AnyValue');
/** Span and Link need a trace id (field 1) and a span id (field 2). */
const REQUIRED_IDS = 2;
/** The span's attributes field. */
const SPAN_ATTRIBUTES = 9;

/** Messages nested deeper than this are left to the codec (its own depth limit applies there). */
const MAX_DEPTH = 24;
/** `continuity.`: every compaction span name starts with it, so other names are never decoded. */
const NAME_PREFIX: readonly number[] = [...Buffer.from(`${NAMESPACE}.`, 'utf8')];
const FULL: ScanResult = { path: 'full' };

/** UTF-8 check: a JS loop for the common short ASCII string, the native check otherwise. */
function utf8(buf: Buffer, start: number, stop: number): boolean {
  for (let i = start; i < stop; i++) {
    if (buf[i]! & 0x80) return isUtf8(buf.subarray(i, stop));
  }
  return true;
}

function namespacePrefixed(buf: Buffer, start: number, stop: number): boolean {
  if (stop - start < NAME_PREFIX.length) return false;
  for (let i = 0; i < NAME_PREFIX.length; i++) if (buf[start + i] !== NAME_PREFIX[i]) return false;
  return true;
}

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

  message(type: number, end: number, depth: number): void {
    if (depth > MAX_DEPTH) throw NEEDS_FULL;
    const fields = TABLES[type]!;
    const r = this._r;
    const isAny = type === T_ANY;
    const isSpan = type === T_SPAN;
    const needsIds = isSpan || type === T_LINK;
    let attributes = 0;
    let members = 0;
    let ids = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      const no = tag >>> 3;
      const field = fields[no];
      if (field === undefined || (tag & 7) !== field.wire) throw NEEDS_FULL;
      // AnyValue is a oneof: a second member is the codec's to judge.
      if (isAny && ++members > 1) throw NEEDS_FULL;
      switch (field.kind) {
        case K_VARINT:
          this._varint(end, field.max);
          break;
        case K_I64:
          r.skip(8);
          break;
        case K_I32:
          r.skip(4);
          break;
        default: {
          const len = r.uint32();
          const start = r.pos;
          const stop = start + len;
          if (stop > end) throw NEEDS_FULL;
          this._bytes(field, start, stop, depth);
          if (needsIds && field.kind === K_ID && (no === 1 || no === 2) && len > 0) ids++;
          if (isSpan && no === SPAN_ATTRIBUTES && ++attributes > this._limits.maxAttributesPerSpan)
            throw NEEDS_FULL;
          r.pos = stop;
        }
      }
    }
    if (r.pos !== end) throw NEEDS_FULL;
    if (needsIds && ids < REQUIRED_IDS) throw NEEDS_FULL;
    if (isSpan) this.spans++;
  }

  /**
   * Skips a varint of at most 10 bytes (the codec refuses longer ones). A bounded enum must be a
   * single byte within range: anything else (e.g. a negative value, 10 bytes) goes the full way.
   */
  private _varint(end: number, max: number): void {
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
    if (max >= 0 && (n !== 1 || b > max)) throw NEEDS_FULL;
  }

  private _bytes(f: Compiled, start: number, stop: number, depth: number): void {
    const buf = this._buf;
    switch (f.kind) {
      case K_MSG:
        this.message(f.msg, stop, depth + 1);
        return;
      case K_ID: {
        const len = stop - start;
        if (len !== f.n && !(f.optional && len === 0)) throw NEEDS_FULL;
        return;
      }
      case K_BYTES:
        // The decoded form is base64; its length is what the limit applies to.
        if (4 * Math.ceil((stop - start) / 3) > this._limits.maxAttributeValueLength) throw NEEDS_FULL;
        return;
      case K_NAME:
        if (!utf8(buf, start, stop)) throw NEEDS_FULL;
        if (namespacePrefixed(buf, start, stop) && isCompactionSpanName(buf.toString('utf8', start, stop))) {
          throw NEEDS_FULL;
        }
        return;
      case K_VALUE: {
        if (!utf8(buf, start, stop)) throw NEEDS_FULL;
        // UTF-8 bytes ≥ UTF-16 units, so only a long value needs decoding to be measured.
        const max = this._limits.maxAttributeValueLength;
        if (stop - start > max && buf.toString('utf8', start, stop).length > max) throw NEEDS_FULL;
        return;
      }
      default:
        if (!utf8(buf, start, stop)) throw NEEDS_FULL;
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
    walk.message(T_REQUEST, buf.length, 0);
  } catch {
    // NEEDS_FULL, or the reader ran past the end (a truncated varint): the codec names the problem.
    return FULL;
  }
  return { path: 'plain', spans: walk.spans };
}
