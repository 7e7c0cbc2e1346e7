/**
 * Protobuf trace requests without re-encoding: one walk over the wire bytes checks the structure
 * (as a protobuf decoder would: tags, wire types, lengths, nesting) and finds the compaction spans
 * by name, without building objects; only those spans are decoded. A request with none is
 * forwarded as it came. A request with some is spliced: each compaction span the service changes
 * (a post span enriched with its classification) is re-encoded on its own and put in place of the
 * old bytes, a refused one is cut out, and the length prefixes of its ScopeSpans and ResourceSpans
 * are rewritten. Every other byte — ordinary spans, their unknown fields, empty ids, strings that
 * are not UTF-8, attributes of any size or count — passes exactly as sent, as the Collector passes
 * them.
 *
 * Field numbers and wire types are the OTLP specification's (opentelemetry/proto/trace/v1/trace.proto,
 * common/v1/common.proto, resource/v1/resource.proto), the same as the codec's descriptor.
 * Unknown fields are skipped (and kept) as any protobuf decoder does.
 */
import { isCompactionSpanName } from '../otel/attributes.js';
import { NAMESPACE } from '../otel/semconv.js';

/** A length-delimited message inside the request: where its length varint and content are. */
export interface Frame {
  /** Offset of the field's tag. */
  tagStart: number;
  /** Offset of the length varint. */
  lenStart: number;
  /** First byte of the content. */
  start: number;
  /** One past the last byte of the content. */
  end: number;
}

/** A compaction span found by the walk. */
export interface SpanSite extends Frame {
  /** Index of its ResourceSpans and ScopeSpans in {@link Walked.resources} / {@link Walked.scopes}. */
  resource: number;
  scope: number;
  /** Its index among the spans of its ScopeSpans. */
  index: number;
  name: string;
}

/** What the walk found in a structurally valid request. */
export interface Walked {
  ok: true;
  /** Spans in the request (every kind). */
  spans: number;
  /** Compaction spans, in request order. */
  compaction: SpanSite[];
  resources: Frame[];
  scopes: Frame[];
}

/** The walk's answer: the request's layout, or why it is not a valid ExportTraceServiceRequest. */
export type WalkResult = Walked | { ok: false; error: string };

/** Wire types. */
const VARINT = 0;
const I64 = 1;
const LEN = 2;
const I32 = 5;

/**
 * Known fields per message: a wire type, or a message name to descend into. The walk checks a
 * known field's wire type (a decoder refuses a mismatch) and the structure of every nested message.
 */
const FIELDS: Readonly<Record<string, Readonly<Record<number, number | string>>>> = {
  Request: { 1: 'ResourceSpans' },
  ResourceSpans: { 1: 'Resource', 2: 'ScopeSpans', 3: LEN },
  Resource: { 1: 'KeyValue', 2: VARINT, 3: 'EntityRef' },
  EntityRef: { 1: LEN, 2: LEN, 3: LEN, 4: LEN },
  ScopeSpans: { 1: 'Scope', 2: 'Span', 3: LEN },
  Scope: { 1: LEN, 2: LEN, 3: 'KeyValue', 4: VARINT },
  Span: {
    1: LEN,
    2: LEN,
    3: LEN,
    4: LEN,
    5: LEN,
    6: VARINT,
    7: I64,
    8: I64,
    9: 'KeyValue',
    10: VARINT,
    11: 'Event',
    12: VARINT,
    13: 'Link',
    14: VARINT,
    15: 'Status',
    16: I32,
  },
  Event: { 1: I64, 2: LEN, 3: 'KeyValue', 4: VARINT },
  Link: { 1: LEN, 2: LEN, 3: LEN, 4: 'KeyValue', 5: VARINT, 6: I32 },
  Status: { 2: LEN, 3: VARINT },
  KeyValue: { 1: LEN, 2: 'AnyValue' },
  AnyValue: { 1: LEN, 2: VARINT, 3: VARINT, 4: I64, 5: 'ArrayValue', 6: 'KeyValueList', 7: LEN },
  ArrayValue: { 1: 'AnyValue' },
  KeyValueList: { 1: 'KeyValue' },
};

const NAMES = Object.keys(FIELDS);
/** Per message index: field number → wire type (0..5) or 16 + message index. */
const TABLE: Int16Array[] = NAMES.map((n) => {
  const t = new Int16Array(17).fill(-1);
  for (const [no, f] of Object.entries(FIELDS[n]!))
    t[Number(no)] = typeof f === 'number' ? f : 16 + NAMES.indexOf(f);
  return t;
});
const M_REQUEST = NAMES.indexOf('Request');
const M_RESOURCE_SPANS = NAMES.indexOf('ResourceSpans');
const M_SCOPE_SPANS = NAMES.indexOf('ScopeSpans');
const M_SPAN = NAMES.indexOf('Span');
const M_KEY_VALUE = NAMES.indexOf('KeyValue');
const SPAN_NAME = 5;

/** Deeper nesting is refused, as the codec refuses it (`MAX_DEPTH` there). */
const MAX_DEPTH = 100;
/** `continuity.`: every compaction span name starts with it, so other names are never decoded. */
const PREFIX: readonly number[] = [...Buffer.from(`${NAMESPACE}.`, 'utf8')];

class Invalid {
  constructor(readonly error: string) {}
}

class Walk {
  pos = 0;
  spans = 0;
  readonly compaction: SpanSite[] = [];
  readonly resources: Frame[] = [];
  readonly scopes: Frame[] = [];
  constructor(private readonly _b: Buffer) {}

  /** A varint of at most 10 bytes; exact up to 2^49 (tags and lengths are far below). */
  varint(end: number): number {
    const b = this._b;
    if (this.pos >= end) throw new Invalid('truncated varint');
    const first = b[this.pos++]!;
    if (first < 0x80) return first;
    let result = first & 0x7f;
    let mul = 128;
    for (let i = 1; i < 10; i++) {
      if (this.pos >= end) throw new Invalid('truncated varint');
      const byte = b[this.pos++]!;
      if (i < 7) result += (byte & 0x7f) * mul;
      mul *= 128;
      if (byte < 0x80) return result;
    }
    throw new Invalid('varint longer than 10 bytes');
  }

  message(type: number, end: number, depth: number): void {
    if (depth > MAX_DEPTH) throw new Invalid(`messages nested deeper than ${MAX_DEPTH}`);
    if (type === M_SPAN) {
      this._span(end, depth);
      return;
    }
    const table = TABLE[type]!;
    while (this.pos < end) this._field(type, table, end, depth);
  }

  /** One field of a message of `type` at `pos`: checked (and descended into), `pos` moved past it. */
  private _field(type: number, table: Int16Array, end: number, depth: number): void {
    const b = this._b;
    const tagStart = this.pos;
    // Every OTLP tag is one or two bytes; the one-byte case is read inline (the walk's hot path).
    const first = b[tagStart]!;
    let tag: number;
    if (first < 0x80) {
      tag = first;
      this.pos = tagStart + 1;
    } else tag = this.varint(end);
    const no = tag < 0x100000000 ? tag >>> 3 : Math.floor(tag / 8);
    const wire = tag & 7;
    if (no === 0) throw new Invalid('field number 0');
    const known = no < table.length ? table[no]! : -1;
    if (known >= 16 || known === LEN) {
      if (wire !== LEN) throw new Invalid(`field ${no} of ${NAMES[type]}: wrong wire type ${wire}`);
    } else if (known >= 0 && wire !== known) {
      throw new Invalid(`field ${no} of ${NAMES[type]}: wrong wire type ${wire}`);
    }
    switch (wire) {
      case VARINT:
        this.varint(end);
        break;
      case I64:
        this.pos += 8;
        break;
      case I32:
        this.pos += 4;
        break;
      case LEN: {
        const lenStart = this.pos;
        const lenByte = this.pos < end ? b[this.pos]! : 0x80;
        let len: number;
        if (lenByte < 0x80) {
          len = lenByte;
          this.pos++;
        } else len = this.varint(end);
        const start = this.pos;
        const stop = start + len;
        if (stop > end) throw new Invalid(`field ${no} of ${NAMES[type]}: length past the end`);
        if (known >= 16) {
          const child = known - 16;
          if (child === M_SPAN) {
            // Only a span's offsets are kept (no object): a frame is built for compaction spans.
            this._spanTag = tagStart;
            this._spanLen = lenStart;
            this._spanIndex++;
          } else if (child === M_RESOURCE_SPANS)
            this.resources.push({ tagStart, lenStart, start, end: stop });
          else if (child === M_SCOPE_SPANS) {
            this.scopes.push({ tagStart, lenStart, start, end: stop });
            this._spanIndex = 0;
          }
          // A plain attribute is checked here, without a frame of its own (most of a request).
          if (child !== M_KEY_VALUE || !this._plainKeyValue(stop, depth + 1)) {
            this.message(child, stop, depth + 1);
          }
        } else if (type === M_SPAN && no === SPAN_NAME) {
          this._nameStart = start;
          this._nameEnd = stop;
        }
        this.pos = stop;
        break;
      }
      default:
        throw new Invalid(
          `field ${no} of ${NAMES[type]}: wire type ${wire} (${wire === 3 || wire === 4 ? 'groups are not OTLP' : 'no such wire type'})`,
        );
    }
    if (this.pos > end) throw new Invalid(`field ${no} of ${NAMES[type]}: past the end`);
  }

  /**
   * A Span: the fields as SDKs write them (a one-byte tag with the field's own wire type, a length
   * of one or two bytes, a plain attribute) are checked inline, as {@link _field} would check them;
   * any other field, and any that is not well formed, goes to {@link _field}, which reads it (or
   * names what is wrong) as before. Then a compaction span is noted by its name.
   */
  private _span(end: number, depth: number): void {
    const b = this._b;
    const table = TABLE[M_SPAN]!;
    this._nameStart = -1;
    this._nameEnd = -1;
    while (this.pos < end) {
      const p = this.pos;
      let next = -1;
      switch (b[p]) {
        case 0x0a: // trace_id
        case 0x12: // span_id
        case 0x1a: // trace_state
        case 0x22: // parent_span_id
          next = skipLen(b, p + 1, end);
          break;
        case 0x2a: // name
          next = skipLen(b, p + 1, end);
          if (next >= 0) {
            this._nameStart = lenEnd(b, p + 1);
            this._nameEnd = next;
          }
          break;
        case 0x30: // kind
        case 0x50: // dropped_attributes_count
        case 0x60: // dropped_events_count
        case 0x70: // dropped_links_count
          next = skipVarint(b, p + 1, end);
          break;
        case 0x39: // start_time_unix_nano
        case 0x41: // end_time_unix_nano
          next = p + 9 <= end ? p + 9 : -1;
          break;
        case 0x4a: {
          // attributes
          const stop = skipLen(b, p + 1, end);
          if (stop >= 0) {
            this.pos = lenEnd(b, p + 1);
            if (this._plainKeyValue(stop, depth + 1)) next = stop;
          }
          break;
        }
        case 0x7a: {
          // status (the Collector writes it on every span, empty when unset)
          const stop = skipLen(b, p + 1, end);
          if (stop >= 0 && plainStatus(b, lenEnd(b, p + 1), stop)) next = stop;
          break;
        }
        case 0x85: // flags: field 16, fixed32, a two-byte tag
          if (b[p + 1] === 0x01 && p + 6 <= end) next = p + 6;
          break;
      }
      if (next >= 0) this.pos = next;
      else {
        this.pos = p;
        this._field(M_SPAN, table, end, depth);
      }
    }
    this.spans++;
    const nameStart = this._nameStart;
    const nameEnd = this._nameEnd;
    if (nameStart >= 0 && this._prefixed(nameStart, nameEnd)) {
      const name = b.toString('utf8', nameStart, nameEnd);
      if (isCompactionSpanName(name)) {
        const lenStart = this._spanLen;
        this.compaction.push({
          tagStart: this._spanTag,
          lenStart,
          start: lenStart + varintLength(b, lenStart),
          end,
          resource: this.resources.length - 1,
          scope: this.scopes.length - 1,
          index: this._spanIndex - 1,
          name,
        });
      }
    }
  }

  /** Where the name of the span being walked lies (-1 before one is read). */
  private _nameStart = -1;
  private _nameEnd = -1;

  /**
   * Most of a request is attributes, and nearly every one is a key and one scalar value, encoded
   * the one way SDKs encode them. Those are checked here in one pass (what the generic walk would
   * check: lengths within bounds, wire types, varints of at most 10 bytes); any other shape returns
   * false with nothing consumed, and the generic walk reads it (and names what is wrong).
   */
  private _plainKeyValue(end: number, depth: number): boolean {
    const b = this._b;
    if (depth + 1 > MAX_DEPTH) return false;
    // Key and value in either order: SDKs write the key first, the Collector (pdata marshals
    // each message back to front) the value first; a field repeated is as valid to the generic walk.
    let p = this.pos;
    while (p < end) {
      const tag = b[p]!;
      if (tag === 0x0a /* key */) {
        p = skipLen(b, p + 1, end);
        if (p < 0) return false;
      } else if (tag === 0x12 /* value */) {
        const valueEnd = skipLen(b, p + 1, end);
        if (valueEnd < 0 || !plainAnyValue(b, lenEnd(b, p + 1), valueEnd)) return false;
        p = valueEnd;
      } else return false;
    }
    this.pos = end;
    return true;
  }

  /** Tag and length offsets of the span being walked (set when its field was entered; spans do not nest). */
  private _spanTag = 0;
  private _spanLen = 0;
  private _spanIndex = 0;

  private _prefixed(start: number, stop: number): boolean {
    if (stop - start < PREFIX.length) return false;
    for (let i = 0; i < PREFIX.length; i++) if (this._b[start + i] !== PREFIX[i]) return false;
    return true;
  }
}

/** Walks an ExportTraceServiceRequest in protobuf. Never throws. */
export function walkTraceRequest(body: Uint8Array): WalkResult {
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const walk = new Walk(buf);
  try {
    walk.message(M_REQUEST, buf.length, 0);
  } catch (e) {
    const why = e instanceof Invalid ? e.error : 'unreadable';
    return { ok: false, error: `not a valid protobuf ExportTraceServiceRequest (${why})` };
  }
  return {
    ok: true,
    spans: walk.spans,
    compaction: walk.compaction,
    resources: walk.resources,
    scopes: walk.scopes,
  };
}

/**
 * True when `[p, end)` is an AnyValue's content as SDKs and the Collector write a scalar: empty,
 * or exactly one string, bytes, bool, int or double field (what the generic walk accepts, and less).
 */
function plainAnyValue(b: Buffer, p: number, end: number): boolean {
  if (p === end) return true;
  const tag = b[p]!;
  let q: number;
  if (tag === 0x0a /* string */ || tag === 0x3a /* bytes */) q = skipLen(b, p + 1, end);
  else if (tag === 0x10 /* bool */ || tag === 0x18 /* int */) q = skipVarint(b, p + 1, end);
  else if (tag === 0x21 /* double */) q = p + 9 <= end ? p + 9 : -1;
  else return false;
  return q === end;
}

/**
 * True when `[p, end)` is a Status's content in its usual shape: any of a message (field 2) and a
 * code (field 3), in either order, each once.
 */
function plainStatus(b: Buffer, p: number, end: number): boolean {
  let seen = 0;
  while (p < end) {
    const tag = b[p]!;
    if (tag === 0x12 /* message */ && !(seen & 1)) {
      p = skipLen(b, p + 1, end);
      seen |= 1;
    } else if (tag === 0x18 /* code */ && !(seen & 2)) {
      p = skipVarint(b, p + 1, end);
      seen |= 2;
    } else return false;
    if (p < 0) return false;
  }
  return true;
}

/**
 * Past the length-delimited content whose length varint starts at `p`, or -1 when the varint is
 * longer than 2 bytes (left to the generic walk) or the content runs past `end`.
 */
function skipLen(b: Buffer, p: number, end: number): number {
  if (p >= end) return -1;
  let len = b[p++]!;
  if (len >= 0x80) {
    if (p >= end || b[p]! >= 0x80) return -1;
    len = (len & 0x7f) + b[p++]! * 128;
  }
  return p + len <= end ? p + len : -1;
}

/** Where the content starts after the (already checked, 1 or 2 byte) length varint at `p`. */
function lenEnd(b: Buffer, p: number): number {
  return b[p]! >= 0x80 ? p + 2 : p + 1;
}

/** Past a varint of at most 10 bytes starting at `p`, or -1. */
function skipVarint(b: Buffer, p: number, end: number): number {
  for (let i = 0; i < 10 && p < end; i++) if (b[p++]! < 0x80) return p;
  return -1;
}

/** How many bytes the (already checked) varint at `at` takes. */
function varintLength(b: Buffer, at: number): number {
  let n = 1;
  while (b[at + n - 1]! >= 0x80) n++;
  return n;
}

/** Bytes of a protobuf varint. */
function varintBytes(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}

/** The `Span` field of ScopeSpans (field 2, length-delimited). */
const SPAN_TAG = Buffer.from([(2 << 3) | LEN]);

/**
 * The request with each span in `replace` swapped for its new encoding (one buffer or its parts in
 * order; or cut out, for null),
 * and the lengths of the ScopeSpans and ResourceSpans around them rewritten. Everything else is
 * the request's own bytes. Returned as the parts that make the new request back to back (views
 * into `body` between the new pieces), not copied into one buffer: the forwarder writes parts as
 * they are, and a request body is hundreds of KiB where the edits are a few small pieces.
 */
export function splice(
  body: Buffer,
  walked: Walked,
  replace: ReadonlyMap<SpanSite, Uint8Array | readonly Uint8Array[] | null>,
): Uint8Array[] {
  if (replace.size === 0) return [body];
  const edits: Array<{ from: number; to: number; bytes: Uint8Array[] }> = [];
  const scopeDelta = new Map<number, number>();
  for (const [site, bytes] of replace) {
    const oldSize = site.end - site.tagStart;
    let fresh: Uint8Array[] = [];
    let size = 0;
    if (bytes !== null) {
      // A new encoding in one piece, or as parts back to back (see `patchWireSpan`).
      const pieces: readonly Uint8Array[] = bytes instanceof Uint8Array ? [bytes] : bytes;
      let length = 0;
      for (const p of pieces) length += p.length;
      const len = varintBytes(length);
      fresh = [SPAN_TAG, len, ...pieces];
      size = SPAN_TAG.length + len.length + length;
    }
    edits.push({ from: site.tagStart, to: site.end, bytes: fresh });
    scopeDelta.set(site.scope, (scopeDelta.get(site.scope) ?? 0) + size - oldSize);
  }
  const resourceDelta = new Map<number, number>();
  for (const [s, delta] of scopeDelta) {
    const f = walked.scopes[s]!;
    const len = varintBytes(f.end - f.start + delta);
    edits.push({ from: f.lenStart, to: f.start, bytes: [len] });
    const r = resourceOf(walked, f);
    resourceDelta.set(r, (resourceDelta.get(r) ?? 0) + delta + len.length - (f.start - f.lenStart));
  }
  for (const [r, delta] of resourceDelta) {
    const f = walked.resources[r]!;
    edits.push({ from: f.lenStart, to: f.start, bytes: [varintBytes(f.end - f.start + delta)] });
  }
  edits.sort((a, b) => a.from - b.from);
  const parts: Uint8Array[] = [];
  let at = 0;
  for (const e of edits) {
    if (e.from > at) parts.push(body.subarray(at, e.from));
    parts.push(...e.bytes);
    at = e.to;
  }
  if (at < body.length) parts.push(body.subarray(at));
  return parts;
}

/** The ResourceSpans that holds a ScopeSpans frame. */
function resourceOf(walked: Walked, scope: Frame): number {
  const rs = walked.resources;
  for (let i = rs.length - 1; i >= 0; i--)
    if (rs[i]!.start <= scope.tagStart && scope.end <= rs[i]!.end) return i;
  return 0;
}
