/**
 * Compaction spans read and enriched straight from their protobuf bytes, so a request with
 * compaction spans costs little more than one without (issue: "splice, do not re-encode").
 *
 * {@link readWireSpan} reads only what the service uses (name, ids, start time, the ids of the
 * links, and of the attributes only those the attribute codec reads: its span-level keys and each
 * decision's fields, as a {@link CompactionAttributeSource}, never a record of every attribute)
 * from a span the walk (`splice.ts`) has already checked structurally;
 * {@link patchWireSpan} writes a post span's classification onto its bytes: a replaced attribute
 * takes its old place, new attributes and the link to the pre span are appended as new fields,
 * and every other byte (events, status, unknown fields) is copied as it came. Protobuf decoders
 * gather repeated fields in order of appearance, so the result decodes as the decoded-and-
 * re-encoded span would.
 *
 * The fast reader answers only for spans it reads exactly as the codec would (`codec.ts`); for
 * anything unusual (a string that is not UTF-8, an id of another length, an AnyValue with two
 * values set, a key-value list, a negative or very large integer, a value over the limits, a
 * repeated key) it answers undefined and the caller decodes the span with the codec, which decides
 * as before.
 */
import type { Attributes, AttributeValue } from '@opentelemetry/api';
import protobuf from 'protobufjs/minimal.js';
import {
  type CompactionAttributeSource,
  DECISION_FIELDS_READ,
  type DecisionAttributes,
  SPAN_LEVEL_KEYS,
} from '../otel/attributes.js';
import { parseDecisionAttr } from '../otel/semconv.js';
import { type OtlpAnyValue, type OtlpKeyValue, recordToAttributes } from '../otlp/index.js';
import type { SpanLimits } from './enrich.js';
import type { SpanSite } from './splice.js';

/** What the service reads from a compaction span (the fields `inspectSpans` and the enrichment use). */
export interface WireSpan {
  name: string;
  traceId: string;
  spanId: string;
  /** Decimal nanoseconds, as the codec's uniform shape has them. */
  startTimeUnixNano: string;
  /**
   * The attributes the codec reads, as OpenTelemetry API values, each as `attributesToRecord`
   * makes it of the decoded span (see {@link WireAttributes}).
   */
  source: WireAttributes;
  /** Read only when within the service's limits (else the codec decides): `inspectSpans` need not check. */
  withinLimits: true;
  links: Array<{ traceId: string; spanId: string }>;
  /** Each attribute field's key, in order. */
  attributeKeys: string[];
  /**
   * Where each attribute field lies in the body (tag to end): `from` at 2i, `to` at 2i + 1. Two
   * flat arrays, not an object per field: a compaction span has dozens.
   */
  attributeSpans: number[];
}

const LEN = 2;
/** Span fields read (trace.proto). */
const SPAN = { traceId: 1, spanId: 2, name: 5, startTime: 7, attributes: 9, links: 13 } as const;
/** AnyValue fields (common.proto). */
const ANY = { string: 1, bool: 2, int: 3, double: 4, array: 5, kvlist: 6, bytes: 7 } as const;

/** Not read here: the codec decides (the message says why, for whoever debugs a span that falls back). */
class Unusual extends Error {}
function unusual(why: string): never {
  throw new Unusual(why);
}

/** `b[start..stop]` as a string; the codec decides bytes that are not UTF-8 (see the module comment). */
function utf8(b: Buffer, start: number, stop: number): string {
  const s = b.toString('utf8', start, stop);
  // Node replaces bytes that are not UTF-8 with U+FFFD; the codec refuses them, so it decides.
  if (s.includes('\uFFFD')) unusual('not UTF-8');
  return s;
}

/**
 * Strings of up to {@link SHORT_STRING_BYTES} bytes read before, kept by their bytes. Why: a
 * compaction span's keys (27 with five decisions) and many of its values (runtime, source,
 * trigger, decision names) are the same from span to span, and decoding each one anew (a call
 * into C++, a new string, a scan for U+FFFD) was half of this reader's time. A slot is found by
 * a hash of the bytes and used only when its bytes are the same, so a collision costs a decode,
 * never a wrong string; only strings that decoded as UTF-8 are kept. Bounded: the slots are
 * overwritten, never grown. The strings are what the spans carry (digests and opaque ids), held
 * only in memory, like the correlator's own copies.
 */
const SHORT_STRING_BYTES = 96;
const STRING_SLOTS = 4096;

/** What an attribute key means to the codec, worked out once per key kept (see {@link meaningOf}). */
interface KeyMeaning {
  /** Index in {@link SPAN_LEVEL_KEYS}, or -1. */
  top: number;
  /** For `continuity.decision.<name>.<field>` with a field the codec reads: the name and field. */
  decision: string | undefined;
  field: (typeof DECISION_FIELDS_READ)[number] | undefined;
}

/**
 * The kept strings, slot by slot in flat arrays: each slot's bytes at a fixed place in one arena,
 * its hash, length, string and key meaning beside. Why flat: between two requests the service
 * touches a few hundred KiB of other memory, and a slot found through objects (slot, a view of
 * its bytes, their memory) cost a cache miss at each step; here a lookup reads a hash, a length
 * and the bytes in place.
 */
const slotBytes = new Uint8Array(STRING_SLOTS * SHORT_STRING_BYTES);
const slotView = new DataView(slotBytes.buffer);
const slotHash = new Int32Array(STRING_SLOTS);
/** -1: empty. */
const slotLength = new Int16Array(STRING_SLOTS).fill(-1);
const slotText: string[] = new Array(STRING_SLOTS).fill('');
/** Set the first time the slot's string is read as a key. */
const slotMeaning: Array<KeyMeaning | undefined> = new Array(STRING_SLOTS).fill(undefined);

/**
 * A hash of `v[start..stop]` four bytes at a time (unaligned 32-bit reads compile to one load),
 * seeded with the length and mixed at the end so that the slot index (its low bits) depends on
 * every byte. Measured against FNV-1a byte by byte with a byte-wise comparison: 56 against 142 ns
 * for a key or a digest, a third of this reader's time.
 */
function wordHash(v: DataView, start: number, stop: number): number {
  let h = 0x811c9dc5 ^ (stop - start);
  let i = start;
  for (; i + 4 <= stop; i += 4) {
    h = Math.imul(h ^ v.getUint32(i, true), 0x01000193);
    h = (h << 13) | (h >>> 19);
  }
  for (; i < stop; i++) h = Math.imul(h ^ v.getUint8(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  return h ^ (h >>> 13);
}

/** Whether slot `at` holds exactly the `n` bytes at `v[start..]`. */
function sameBytes(at: number, v: DataView, start: number, n: number): boolean {
  const base = at * SHORT_STRING_BYTES;
  let i = 0;
  for (; i + 4 <= n; i += 4)
    if (slotView.getUint32(base + i, true) !== v.getUint32(start + i, true)) return false;
  for (; i < n; i++) if (slotView.getUint8(base + i) !== v.getUint8(start + i)) return false;
  return true;
}

/** The slot holding the string of `c.b[start..stop]` (at most {@link SHORT_STRING_BYTES}), filled when missing. */
function shortSlot(c: Cursor, start: number, stop: number, hash: number): number {
  const at = hash & (STRING_SLOTS - 1);
  const n = stop - start;
  if (slotLength[at] === n && slotHash[at] === hash && sameBytes(at, c.v, start, n)) return at;
  // Decoded first: bytes that are not UTF-8 throw here, and the slot keeps what it had.
  const text = utf8(c.b, start, stop);
  slotBytes.set(c.b.subarray(start, stop), at * SHORT_STRING_BYTES);
  slotHash[at] = hash;
  slotLength[at] = n;
  slotText[at] = text;
  slotMeaning[at] = undefined;
  return at;
}

const TOP_INDEX = new Map(SPAN_LEVEL_KEYS.map((k, i) => [k, i]));
const NO_MEANING: KeyMeaning = Object.freeze({ top: -1, decision: undefined, field: undefined });
/** The hash of the empty key (a KeyValue without its key field reads as ""). */
const EMPTY_KEY_HASH = wordHash(new DataView(new ArrayBuffer(0)), 0, 0);
const FIELDS_READ: ReadonlySet<string> = new Set(DECISION_FIELDS_READ);

/** What `key` means to the codec: a span-level key it reads, a decision's field, or nothing. */
function meaningOf(key: string): KeyMeaning {
  const top = TOP_INDEX.get(key) ?? -1;
  const d = top < 0 ? parseDecisionAttr(key) : undefined;
  return d !== undefined && FIELDS_READ.has(d.field)
    ? { top, decision: d.name, field: d.field as KeyMeaning['field'] }
    : { top, decision: undefined, field: undefined };
}

/**
 * The attributes of one span the codec reads ({@link SPAN_LEVEL_KEYS} and each decision's
 * fields), as a {@link CompactionAttributeSource}: the reader answers for each key what
 * `attributesToRecord` of the decoded span holds, because it reads each value as that does and
 * leaves any span with a repeated key to the codec.
 */
export class WireAttributes implements CompactionAttributeSource {
  /** By index in {@link SPAN_LEVEL_KEYS}. */
  readonly values: Array<AttributeValue | undefined> = new Array(SPAN_LEVEL_KEYS.length);
  private _decisions: Map<string, DecisionAttributes> | undefined;

  attribute(key: string): AttributeValue | undefined {
    const i = TOP_INDEX.get(key);
    return i === undefined ? undefined : this.values[i];
  }

  decision(name: string): DecisionAttributes | undefined {
    return this._decisions?.get(name);
  }

  /** Keeps the value of an attribute whose key means `m`. */
  set(m: KeyMeaning, value: AttributeValue): void {
    if (m.top >= 0) this.values[m.top] = value;
    else if (m.decision !== undefined) {
      this._decisions ??= new Map();
      let d = this._decisions.get(m.decision);
      if (d === undefined) {
        d = {};
        this._decisions.set(m.decision, d);
      }
      d[m.field!] = value;
    }
  }
}

/**
 * Hashes of the keys seen in the span being read, to find a repeated key without a set per span:
 * open addressing over 2^8 cells, a cell in use when its mark is the current span's. A repeated
 * hash is checked against the keys read so far, so a collision costs a comparison, never a
 * wrong answer.
 */
const SEEN_CELLS = 256;
const seenHash = new Int32Array(SEEN_CELLS);
const seenMark = new Int32Array(SEEN_CELLS);
let mark = 0;

/** Whether `hash` was seen in this span already (and marks it seen). Up to half the cells. */
function seenBefore(hash: number): boolean {
  let at = hash & (SEEN_CELLS - 1);
  while (seenMark[at] === mark) {
    if (seenHash[at] === hash) return true;
    at = (at + 1) & (SEEN_CELLS - 1);
  }
  seenMark[at] = mark;
  seenHash[at] = hash;
  return false;
}

/** A reader over `b` from `pos`, for bytes already checked by the walk (each caller knows its end). */
class Cursor {
  /** The same bytes, for reads four at a time. */
  readonly v: DataView;
  constructor(
    readonly b: Buffer,
    public pos: number,
  ) {
    this.v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }

  varint(): number {
    const b = this.b;
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 7; i++) {
      const byte = b[this.pos++]!;
      result += (byte & 0x7f) * mul;
      if (byte < 0x80) return result;
      mul *= 128;
    }
    // 2^49 or more (or negative, as int64 varints are): left to the codec.
    return unusual('varint of 2^49 or more');
  }

  skip(wire: number): void {
    if (wire === 0) while (this.b[this.pos++]! >= 0x80);
    else if (wire === 1) this.pos += 8;
    else if (wire === 5) this.pos += 4;
    else if (wire === LEN) {
      const len = this.varint();
      this.pos += len;
    } else unusual(`wire type ${wire}`);
  }

  /** Enters a length-delimited field whose tag was just read: returns where it ends. */
  enter(): number {
    const len = this.varint();
    return this.pos + len;
  }

  /** Start of the content {@link frame} moved past. */
  start = 0;

  /** The key of the KeyValue {@link keyValue} read last, its hash and what it means to the codec. */
  key = '';
  keyHash = 0;
  keyMeaning: KeyMeaning = NO_MEANING;

  /** Moves past a length-delimited field whose tag was just read; its content is `start`..`pos`. */
  frame(): void {
    const len = this.varint();
    this.start = this.pos;
    this.pos += len;
  }

  string(start: number, stop: number): string {
    return stop - start <= SHORT_STRING_BYTES
      ? slotText[shortSlot(this, start, stop, wordHash(this.v, start, stop))]!
      : utf8(this.b, start, stop);
  }

  id(start: number, stop: number, bytes: number): string {
    const n = stop - start;
    if (n !== bytes && n !== 0) unusual(`a ${n}-byte id`);
    return this.b.toString('hex', start, stop);
  }
}

type Primitive = string | number | boolean;

/** One scalar AnyValue member as an API attribute value, or undefined for a member read elsewhere. */
function scalar(c: Cursor, no: number, wire: number, limits: SpanLimits): Primitive | undefined {
  if (no === ANY.string && wire === LEN) {
    c.frame();
    // Byte length bounds the UTF-16 length: under it the value is within the limit.
    if (c.pos - c.start > limits.maxAttributeValueLength) unusual('a long string');
    return c.string(c.start, c.pos);
  }
  if (no === ANY.bool && wire === 0) return c.varint() !== 0;
  if (no === ANY.int && wire === 0) return c.varint();
  if (no === ANY.double && wire === 1) {
    const d = c.b.readDoubleLE(c.pos);
    c.pos += 8;
    return d;
  }
  if (no === ANY.bytes && wire === LEN) {
    c.frame();
    const text = c.b.toString('base64', c.start, c.pos);
    if (text.length > limits.maxAttributeValueLength) unusual('long bytes');
    return text;
  }
  return undefined;
}

/**
 * An AnyValue as `anyValueToAttribute` converts the decoded one: a primitive, a homogeneous
 * array of primitives, or undefined (empty, or a mixed array).
 */
function anyValue(c: Cursor, stop: number, limits: SpanLimits): AttributeValue | undefined {
  let value: AttributeValue | undefined;
  let set = false;
  while (c.pos < stop) {
    const tag = c.varint();
    const no = tag >>> 3;
    const wire = tag & 7;
    if (no === ANY.array && wire === LEN) {
      if (set) unusual('two members of the oneof');
      set = true;
      const arrayEnd = c.enter();
      const items: Primitive[] = [];
      let mixed = false;
      while (c.pos < arrayEnd) {
        const t = c.varint();
        if (t >>> 3 !== 1 || (t & 7) !== LEN) {
          c.skip(t & 7);
          continue;
        }
        const itemEnd = c.enter();
        let item: Primitive | undefined;
        let itemSet = false;
        while (c.pos < itemEnd) {
          const it = c.varint();
          const p = scalar(c, it >>> 3, it & 7, limits);
          if (p !== undefined) {
            if (itemSet) unusual('two members of the oneof');
            itemSet = true;
            item = p;
          } else if (it >>> 3 === ANY.array || it >>> 3 === ANY.kvlist)
            unusual('a nested array or a key-value list');
          else c.skip(it & 7);
        }
        c.pos = itemEnd;
        if (item === undefined || (items.length > 0 && typeof item !== typeof items[0])) mixed = true;
        else items.push(item);
      }
      value = mixed ? undefined : (items as AttributeValue);
      continue;
    }
    if (no === ANY.kvlist) unusual('a key-value list');
    const p = scalar(c, no, wire, limits);
    if (p === undefined) {
      c.skip(wire);
      continue;
    }
    if (set) unusual('two members of the oneof');
    set = true;
    value = p;
  }
  return value;
}

/** The key of a KeyValue, with its hash and meaning, into `c` (kept keys are found by their bytes). */
function readKey(c: Cursor, start: number, stop: number): void {
  const hash = wordHash(c.v, start, stop);
  c.keyHash = hash;
  if (stop - start <= SHORT_STRING_BYTES) {
    const at = shortSlot(c, start, stop, hash);
    const key = slotText[at]!;
    c.key = key;
    let meaning = slotMeaning[at];
    if (meaning === undefined) {
      meaning = meaningOf(key);
      slotMeaning[at] = meaning;
    }
    c.keyMeaning = meaning;
  } else {
    c.key = utf8(c.b, start, stop);
    c.keyMeaning = meaningOf(c.key);
  }
}

/**
 * A KeyValue's value as an API attribute value (undefined when it has none); its key is left in
 * `c.key`, `c.keyHash` and `c.keyMeaning` (no pair object per attribute: a compaction span has dozens).
 */
function keyValue(c: Cursor, stop: number, limits: SpanLimits): AttributeValue | undefined {
  c.key = '';
  c.keyHash = EMPTY_KEY_HASH;
  c.keyMeaning = NO_MEANING;
  let value: AttributeValue | undefined;
  while (c.pos < stop) {
    const tag = c.varint();
    const no = tag >>> 3;
    const wire = tag & 7;
    if (no === 1 && wire === LEN) {
      c.frame();
      readKey(c, c.start, c.pos);
    } else if (no === 2 && wire === LEN) {
      const e = c.enter();
      value = anyValue(c, e, limits);
      c.pos = e;
    } else c.skip(wire);
  }
  return value;
}

function link(c: Cursor, stop: number): { traceId: string; spanId: string } {
  let traceId = '';
  let spanId = '';
  while (c.pos < stop) {
    const tag = c.varint();
    const no = tag >>> 3;
    const wire = tag & 7;
    if (no === 1 && wire === LEN) {
      c.frame();
      traceId = c.id(c.start, c.pos, 16);
    } else if (no === 2 && wire === LEN) {
      c.frame();
      spanId = c.id(c.start, c.pos, 8);
    } else c.skip(wire);
  }
  return { traceId, spanId };
}

/**
 * The span at `site` as the service reads it, or undefined when the codec must decode it (see the
 * module comment). `limits` are the service's: a span over them is the codec's path too, which
 * names the problem. Never throws.
 */
export function readWireSpan(body: Buffer, site: SpanSite, limits: SpanLimits): WireSpan | undefined {
  const c = new Cursor(body, site.start);
  const span: WireSpan = {
    name: '',
    traceId: '',
    spanId: '',
    startTimeUnixNano: '0',
    source: new WireAttributes(),
    withinLimits: true,
    links: NO_LINKS,
    attributeKeys: NO_KEYS,
    attributeSpans: NO_SPANS,
  };
  if (mark === 0x7fffffff) {
    // Wrapped: no cell may look marked by an earlier span.
    seenMark.fill(0);
    mark = 0;
  }
  mark++;
  // Keys and offsets go to scratch arrays first, copied out at their size (no growth per span).
  let n = 0;
  try {
    while (c.pos < site.end) {
      const from = c.pos;
      const tag = c.varint();
      const no = tag >>> 3;
      const wire = tag & 7;
      if (wire === LEN && no === SPAN.attributes) {
        const e = c.enter();
        const value = keyValue(c, e, limits);
        const key = c.key;
        // Past the limit the codec names the problem (and the seen table is only half filled).
        if (n >= limits.maxAttributesPerSpan || n >= SEEN_CELLS / 2)
          unusual('more attributes than the limit');
        // A repeated key: which one counts is the codec's to say (last defined value wins there).
        if (seenBefore(c.keyHash) && keptBefore(key, n)) unusual('a repeated key');
        if (value !== undefined) span.source.set(c.keyMeaning, value);
        scratchKeys[n] = key;
        scratchSpans[2 * n] = from;
        scratchSpans[2 * n + 1] = e;
        n++;
        c.pos = e;
      } else if (wire === LEN && (no === SPAN.name || no === SPAN.traceId || no === SPAN.spanId)) {
        c.frame();
        if (no === SPAN.name) span.name = c.string(c.start, c.pos);
        else if (no === SPAN.traceId) span.traceId = c.id(c.start, c.pos, 16);
        else span.spanId = c.id(c.start, c.pos, 8);
      } else if (wire === LEN && no === SPAN.links) {
        const e = c.enter();
        if (span.links === NO_LINKS) span.links = [];
        span.links.push(link(c, e));
        c.pos = e;
      } else if (wire === 1 && no === SPAN.startTime) {
        span.startTimeUnixNano = body.readBigUInt64LE(c.pos).toString();
        c.pos += 8;
      } else c.skip(wire);
    }
  } catch {
    // UNUSUAL, or anything else this reader did not expect: the codec decides.
    return undefined;
  }
  if (n > 0) {
    span.attributeKeys = scratchKeys.slice(0, n);
    span.attributeSpans = scratchSpans.slice(0, 2 * n);
  }
  return span;
}

// Shared by every span without links or attributes: frozen, so nothing can add to them.
const NO_LINKS = Object.freeze([]) as unknown as WireSpan['links'];
const NO_KEYS = Object.freeze([]) as unknown as string[];
const NO_SPANS = Object.freeze([]) as unknown as number[];
/** Where {@link readWireSpan} gathers a span's keys and offsets (one span at a time). */
const scratchKeys: string[] = [];
const scratchSpans: number[] = [];

/** Whether `key` is among the first `n` keys of the span being read. */
function keptBefore(key: string, n: number): boolean {
  for (let i = 0; i < n; i++) if (scratchKeys[i] === key) return true;
  return false;
}

/** The protobuf encoding of one AnyValue's fields into `w`. */
function writeAnyValue(w: protobuf.Writer, v: OtlpAnyValue): void {
  if (v.stringValue !== undefined) w.uint32((ANY.string << 3) | LEN).string(v.stringValue);
  else if (v.boolValue !== undefined) w.uint32(ANY.bool << 3).bool(v.boolValue);
  else if (v.intValue !== undefined) w.uint32(ANY.int << 3).int64(v.intValue);
  else if (v.doubleValue !== undefined) w.uint32((ANY.double << 3) | 1).double(v.doubleValue);
  else if (v.bytesValue !== undefined) w.uint32((ANY.bytes << 3) | LEN).bytes(v.bytesValue);
  else if (v.arrayValue !== undefined) {
    w.uint32((ANY.array << 3) | LEN).fork();
    for (const item of v.arrayValue.values) {
      w.uint32((1 << 3) | LEN).fork();
      writeAnyValue(w, item);
      w.ldelim();
    }
    w.ldelim();
  }
}

/** Bytes of a varint. */
function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

function putVarint(out: Buffer, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[at++] = n;
  return at;
}

/**
 * One Span `attributes` field (tag, length, KeyValue). A string value (every attribute the service
 * writes) is laid out by hand, one allocation; other kinds go through the protobuf writer.
 */
function attributeField(kv: OtlpKeyValue): Uint8Array {
  const value = kv.value?.stringValue;
  if (value === undefined) {
    const w = protobuf.Writer.create();
    w.uint32((SPAN.attributes << 3) | LEN).fork();
    w.uint32((1 << 3) | LEN).string(kv.key);
    w.uint32((2 << 3) | LEN).fork();
    writeAnyValue(w, kv.value ?? {});
    w.ldelim();
    w.ldelim();
    return w.finish();
  }
  const keyLen = Buffer.byteLength(kv.key);
  const valueLen = Buffer.byteLength(value);
  const anyLen = 1 + varintSize(valueLen) + valueLen;
  const kvLen = 1 + varintSize(keyLen) + keyLen + 1 + varintSize(anyLen) + anyLen;
  const out = Buffer.allocUnsafe(1 + varintSize(kvLen) + kvLen);
  let at = 0;
  out[at++] = (SPAN.attributes << 3) | LEN;
  at = putVarint(out, at, kvLen);
  out[at++] = (1 << 3) | LEN;
  at = putVarint(out, at, keyLen);
  at += out.write(kv.key, at, 'utf8');
  out[at++] = (2 << 3) | LEN;
  at = putVarint(out, at, anyLen);
  out[at++] = (ANY.string << 3) | LEN;
  at = putVarint(out, at, valueLen);
  out.write(value, at, 'utf8');
  return out;
}

/**
 * Encoded string attributes the service writes, by key and value: the continuity attributes of a
 * post span take few values (states, actions, reasons, verdicts, decision names), so each field is
 * encoded once and its bytes shared by every span that carries it (they are only ever read).
 * Bounded: past {@link MAX_FIELDS} fields new ones are encoded each time.
 */
const fieldCache = new Map<string, Map<string, Uint8Array>>();
let fieldsCached = 0;
const MAX_FIELDS = 4096;

/** The `attributes` field of a string attribute, from {@link fieldCache} where it can be. */
function stringField(key: string, value: string): Uint8Array {
  let byValue = fieldCache.get(key);
  const hit = byValue?.get(value);
  if (hit !== undefined) return hit;
  const field = attributeField({ key, value: { stringValue: value } });
  if (fieldsCached < MAX_FIELDS) {
    if (byValue === undefined) {
      byValue = new Map();
      fieldCache.set(key, byValue);
    }
    byValue.set(value, field);
    fieldsCached++;
  }
  return field;
}

/** The `links` field of a link to `to` (trace id, span id; no trace state, attributes or flags). */
function linkField(to: { traceId: string; spanId: string }): Uint8Array {
  const out = Buffer.allocUnsafe(30);
  out[0] = (SPAN.links << 3) | LEN;
  out[1] = 28;
  out[2] = (1 << 3) | LEN;
  out[3] = 16;
  out[20] = (2 << 3) | LEN;
  out[21] = 8;
  // An id of another length, or not hex (it writes fewer bytes): then the writer decides, as before.
  if (
    to.traceId.length !== 32 ||
    to.spanId.length !== 16 ||
    out.write(to.traceId, 4, 16, 'hex') !== 16 ||
    out.write(to.spanId, 22, 8, 'hex') !== 8
  ) {
    const w = protobuf.Writer.create();
    w.uint32((SPAN.links << 3) | LEN).fork();
    w.uint32((1 << 3) | LEN).bytes(Buffer.from(to.traceId, 'hex'));
    w.uint32((2 << 3) | LEN).bytes(Buffer.from(to.spanId, 'hex'));
    w.ldelim();
    return w.finish();
  }
  return out;
}

/**
 * The span's content bytes with `record` set on its attributes (an existing key is replaced where
 * it was, as `upsertAttributes` does; new keys are appended in the record's order) and a link to
 * each of `links` it does not have yet (as `applyPostEnrichment` does to a decoded span), as the
 * parts that make it back to back: views into `body` between the new fields.
 */
export function patchWireSpan(
  body: Buffer,
  site: SpanSite,
  span: WireSpan,
  record: Attributes,
  links: ReadonlyArray<{ traceId: string; spanId: string }>,
): Uint8Array[] {
  const fields: Uint8Array[] = [];
  const index = new Map<string, number>();
  for (const key in record) {
    if (!Object.hasOwn(record, key)) continue;
    const value = record[key];
    let field: Uint8Array | undefined;
    if (typeof value === 'string') field = stringField(key, value);
    else {
      // The codec's conversion for every other kind (and nothing for a value it drops).
      const kv = recordToAttributes({ [key]: value })[0];
      if (kv !== undefined) field = attributeField(kv);
    }
    if (field === undefined) continue;
    index.set(key, fields.length);
    fields.push(field);
  }
  const parts: Uint8Array[] = [];
  let at = site.start;
  const spans = span.attributeSpans;
  span.attributeKeys.forEach((key, i) => {
    const k = index.get(key);
    if (k === undefined) return;
    index.delete(key);
    parts.push(body.subarray(at, spans[2 * i]), fields[k]!);
    at = spans[2 * i + 1]!;
  });
  parts.push(body.subarray(at, site.end));
  for (const k of index.values()) parts.push(fields[k]!);
  const linked = [...span.links];
  for (const to of links) {
    if (linked.some((l) => l.traceId === to.traceId && l.spanId === to.spanId)) continue;
    linked.push(to);
    parts.push(linkField(to));
  }
  return parts;
}
