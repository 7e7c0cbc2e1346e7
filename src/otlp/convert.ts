/**
 * Schema-driven conversions between the three representations of an OTLP message:
 * - JSON-like input (OTLP/JSON as received, or an object a caller built) → the uniform plain
 *   shape of `types.ts` (`normal`), the compact OTLP/JSON wire object (`json`), or the object
 *   protobufjs encodes (`proto`), validating every field on the way;
 * - a message decoded by protobufjs → the uniform plain shape.
 *
 * One pass per conversion; the field path is kept as a stack and formatted only on error.
 * Error messages name the path and what was expected, never the offending value (it may be a
 * payload that must not reach a log).
 */
import { util } from 'protobufjs/light.js';
import { OtlpError, type OtlpErrorCode } from './errors.js';
import type { FieldPlan, MessagePlan } from './schema.js';

/** Deepest message nesting accepted (protoc's default recursion limit, as protobufjs uses). */
export const MAX_DEPTH = 100;

/** What {@link fromJsonLike} produces. */
export type OutputMode = 'normal' | 'json' | 'proto';

type Plain = Record<string, unknown>;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;
const DECIMAL = /^-?\d+$/;
const HEX = /^[0-9a-fA-F]*$/;
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;
const hasOwn = Object.prototype.hasOwnProperty;

/** long.js, which protobufjs depends on and uses for 64-bit fields. */
interface LongStatic {
  fromBits(low: number, high: number, unsigned: boolean): object;
}
const Long = util.Long as unknown as LongStatic;

/** A long.js value as protobufjs decodes 64-bit fields. */
type LongLike = { low: number; high: number };

// BigInt formatting is several times faster than long.js's division-based toString.
function longToString(value: LongLike, unsigned: boolean): string {
  if (value.high === 0 && value.low >= 0) return String(value.low);
  const bits = (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0);
  return (unsigned ? bits : BigInt.asIntN(64, bits)).toString();
}

function bigintToLong(value: bigint, unsigned: boolean): object {
  const bits = BigInt.asUintN(64, value);
  return Long.fromBits(Number(bits & 0xffffffffn) | 0, Number(bits >> 32n) | 0, unsigned);
}

/** The field path stack of one conversion. */
class PathStack {
  private readonly _segments: (string | number)[] = [];
  constructor(private readonly _root: string) {}
  push(segment: string | number): void {
    this._segments.push(segment);
  }
  pop(): void {
    this._segments.pop();
  }
  format(): string {
    let out = this._root;
    for (const s of this._segments) {
      out += typeof s === 'number' ? `[${s}]` : out ? `.${s}` : s;
    }
    return out;
  }
  fail(code: OtlpErrorCode, detail: string): never {
    throw new OtlpError(code, this.format(), detail);
  }
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function defaultOf(field: FieldPlan): unknown {
  switch (field.kind) {
    case 'string':
    case 'bytes':
    case 'id':
      return '';
    case 'bool':
      return false;
    case 'int64':
    case 'uint64':
      return '0';
    default:
      return 0;
  }
}

function isDefault(field: FieldPlan, value: unknown): boolean {
  return value === defaultOf(field);
}

const SHORT_DECIMAL = /^(?:0|-?[1-9]\d{0,14})$/;

function canonicalInteger(field: FieldPlan, value: unknown, path: PathStack): string {
  // Fast paths: values below 1e15 are canonical as they are, and in range of both kinds.
  if (typeof value === 'string' && value.length <= 16 && SHORT_DECIMAL.test(value)) {
    if (field.kind === 'uint64' && value.charCodeAt(0) === 45 /* - */) {
      return path.fail('invalid_field', 'expected a uint64 in range');
    }
    return value;
  }
  if (typeof value === 'number' && Number.isSafeInteger(value) && (value >= 0 || field.kind !== 'uint64')) {
    return String(value);
  }
  let big: bigint;
  if (typeof value === 'number' && Number.isInteger(value)) big = BigInt(value);
  else if (typeof value === 'string' && DECIMAL.test(value)) big = BigInt(value);
  else
    return path.fail(
      'invalid_field',
      `expected a 64-bit integer (number or decimal string), got ${typeName(value)}`,
    );
  const [min, max] = field.kind === 'uint64' ? [0n, UINT64_MAX] : [INT64_MIN, INT64_MAX];
  if (big < min || big > max) {
    return path.fail('invalid_field', `expected a ${field.kind === 'uint64' ? 'u' : ''}int64 in range`);
  }
  return big.toString();
}

function int32(field: FieldPlan, value: unknown, path: PathStack): number {
  const n = typeof value === 'string' && DECIMAL.test(value) ? Number(value) : value;
  const [min, max] = field.kind === 'uint32' ? [0, 0xffffffff] : [-0x80000000, 0x7fffffff];
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    return path.fail('invalid_field', `expected a ${field.kind} integer, got ${typeName(value)}`);
  }
  return n;
}

function double(value: unknown, path: PathStack): number {
  if (typeof value === 'number') return value;
  if (value === 'NaN') return Number.NaN;
  if (value === 'Infinity') return Number.POSITIVE_INFINITY;
  if (value === '-Infinity') return Number.NEGATIVE_INFINITY;
  if (typeof value === 'string' && value.trim() !== '') {
    const n = Number(value);
    if (Number.isFinite(n)) return n;
  }
  return path.fail(
    'invalid_field',
    `expected a number (or "NaN", "Infinity", "-Infinity"), got ${typeName(value)}`,
  );
}

function enumValue(field: FieldPlan, value: unknown, path: PathStack): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= -0x80000000 && value <= 0x7fffffff) {
    return value;
  }
  if (typeof value === 'string' && field.enumValues && hasOwn.call(field.enumValues, value)) {
    return field.enumValues[value]!;
  }
  return path.fail('invalid_field', `expected an enum value (integer or value name), got ${typeName(value)}`);
}

function idHex(field: FieldPlan, value: unknown, path: PathStack): string {
  const chars = field.idBytes * 2;
  if (typeof value !== 'string' || !HEX.test(value) || (value.length !== chars && value.length !== 0)) {
    return path.fail('invalid_field', `expected ${chars} hex characters`);
  }
  if (value.length === 0 && field.idRequired)
    return path.fail('invalid_field', `expected ${chars} hex characters`);
  return value.toLowerCase();
}

function base64(value: unknown, path: PathStack): string {
  if (value instanceof Uint8Array)
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
  if (typeof value !== 'string' || !BASE64.test(value)) {
    return path.fail('invalid_field', `expected base64 bytes, got ${typeName(value)}`);
  }
  return Buffer.from(value, 'base64').toString('base64');
}

function scalarFromJson(field: FieldPlan, value: unknown, path: PathStack): unknown {
  switch (field.kind) {
    case 'string':
      return typeof value === 'string'
        ? value
        : path.fail('invalid_field', `expected a string, got ${typeName(value)}`);
    case 'bool':
      return typeof value === 'boolean'
        ? value
        : path.fail('invalid_field', `expected true or false, got ${typeName(value)}`);
    case 'int32':
    case 'uint32':
      return int32(field, value, path);
    case 'int64':
    case 'uint64':
      return canonicalInteger(field, value, path);
    case 'double':
      return double(value, path);
    case 'enum':
      return enumValue(field, value, path);
    case 'id':
      return idHex(field, value, path);
    case 'bytes':
      return base64(value, path);
    default:
      return path.fail('invalid_field', 'unexpected field kind');
  }
}

function toWire(field: FieldPlan, value: unknown, mode: OutputMode): unknown {
  if (mode === 'json') {
    if (field.kind === 'double' && !Number.isFinite(value as number)) {
      return Number.isNaN(value) ? 'NaN' : (value as number) > 0 ? 'Infinity' : '-Infinity';
    }
    return value;
  }
  if (mode === 'proto') {
    if (field.kind === 'id') return Buffer.from(value as string, 'hex');
    if (field.kind === 'bytes') return Buffer.from(value as string, 'base64');
    if (field.kind === 'int64' || field.kind === 'uint64') {
      const text = value as string;
      // protobufjs writes a safe-integer number as is; larger values go through long.js bits.
      return text.length <= 15 ? Number(text) : bigintToLong(BigInt(text), field.kind === 'uint64');
    }
  }
  return value;
}

function convertJsonField(
  field: FieldPlan,
  value: unknown,
  path: PathStack,
  depth: number,
  mode: OutputMode,
): unknown {
  if (field.kind === 'message') return messageFromJson(field.message!, value, path, depth + 1, mode);
  return toWire(field, scalarFromJson(field, value, path), mode);
}

function oneofProblem(plan: MessagePlan, members: readonly FieldPlan[]): string {
  const oneof = members[0]?.oneof ?? '';
  const all = plan.oneofs.get(oneof) ?? members;
  return `expected at most one of ${all.map((m) => m.name).join(', ')} (${oneof})`;
}

function messageFromJson(
  plan: MessagePlan,
  input: unknown,
  path: PathStack,
  depth: number,
  mode: OutputMode,
): Plain {
  if (depth > MAX_DEPTH) path.fail('too_deep', `nested deeper than ${MAX_DEPTH} levels`);
  if (input === null || typeof input !== 'object' || Array.isArray(input) || input instanceof Uint8Array) {
    path.fail('invalid_field', `expected an object (${plan.name}), got ${typeName(input)}`);
  }
  const source = input as Plain;
  const out: Plain = {};
  let seen = 0;
  // Driven by the keys present: an AnyValue has one key, not seven fields to probe twice each.
  for (const key in source) {
    const field = plan.byKey.get(key);
    if (field === undefined) continue; // unknown fields are ignored, as OTLP/JSON requires
    const value = source[key];
    if (value === undefined || value === null) continue;
    const bit = 1 << field.index;
    if ((seen & bit) !== 0) continue; // both spellings given: the first one wins
    if (field.oneofSiblings) {
      for (const m of field.oneofSiblings) {
        if ((seen & (1 << m.index)) !== 0) path.fail('invalid_field', oneofProblem(plan, [m, field]));
      }
    }
    seen |= bit;
    path.push(field.name);
    if (field.repeated) {
      if (!Array.isArray(value)) path.fail('invalid_field', `expected an array, got ${typeName(value)}`);
      const items = value as unknown[];
      if (items.length > 0 || mode === 'normal') {
        const converted = new Array<unknown>(items.length);
        for (let i = 0; i < items.length; i++) {
          path.push(i);
          converted[i] = convertJsonField(field, items[i], path, depth, mode);
          path.pop();
        }
        out[field.name] = converted;
      }
    } else if (field.kind === 'message') {
      out[field.name] = messageFromJson(field.message!, value, path, depth + 1, mode);
    } else {
      const canonical = scalarFromJson(field, value, path);
      if (mode === 'normal' || field.presence || !isDefault(field, canonical)) {
        out[field.name] = toWire(field, canonical, mode);
      }
    }
    path.pop();
  }
  if (seen !== plan.allFields) {
    for (const field of plan.fields) {
      if ((seen & (1 << field.index)) !== 0) continue;
      if (field.kind === 'id' && field.idRequired) {
        path.push(field.name);
        path.fail('invalid_field', `expected ${field.idBytes * 2} hex characters`);
      }
      if (mode === 'normal' && !field.presence) out[field.name] = field.repeated ? [] : defaultOf(field);
    }
  }
  return out;
}

/**
 * Validates a JSON-like message (OTLP/JSON field names, lowerCamelCase or snake_case; ids as hex;
 * 64-bit integers as numbers or decimal strings; enums as integers or names) and converts it.
 * Unknown fields are ignored, as the OTLP/JSON mapping requires.
 *
 * @param root the path prefix used in error messages (`''` for a request body)
 */
export function fromJsonLike(plan: MessagePlan, input: unknown, mode: OutputMode, root = ''): Plain {
  return messageFromJson(plan, input, new PathStack(root), 0, mode);
}

/** A Buffer view of decoded bytes (the prototype default of a bytes field is a plain empty array). */
function bytesOf(bytes: Uint8Array | readonly number[]): Buffer {
  return bytes instanceof Uint8Array
    ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    : Buffer.from(bytes as number[]);
}

function scalarFromDecoded(field: FieldPlan, value: unknown, path: PathStack): unknown {
  switch (field.kind) {
    case 'int64':
    case 'uint64':
      if (typeof value === 'number') return String(value);
      return longToString(value as LongLike, field.kind === 'uint64');
    case 'id': {
      const bytes = value as Uint8Array;
      if (bytes.length !== field.idBytes && (bytes.length !== 0 || field.idRequired)) {
        return path.fail('invalid_field', `expected a ${field.idBytes}-byte id, got ${bytes.length} bytes`);
      }
      return bytesOf(bytes).toString('hex');
    }
    case 'bytes':
      return bytesOf(value as Uint8Array).toString('base64');
    default:
      return value;
  }
}

function messageFromDecoded(plan: MessagePlan, message: Plain, path: PathStack): Plain {
  const out: Plain = {};
  for (const members of plan.oneofGroups) {
    let set = 0;
    for (const m of members) if (hasOwn.call(message, m.name) && message[m.name] != null) set++;
    if (set > 1) path.fail('invalid_field', oneofProblem(plan, members));
  }
  for (const field of plan.fields) {
    const raw = message[field.name];
    // Only fields with explicit presence need the own-property check: for the others the
    // prototype holds the proto3 default (an empty array for repeated fields).
    const present = raw != null && (!field.presence || hasOwn.call(message, field.name));
    if (field.repeated) {
      const items = present ? (raw as unknown[]) : [];
      const converted = new Array<unknown>(items.length);
      if (items.length > 0) {
        path.push(field.name);
        for (let i = 0; i < items.length; i++) {
          path.push(i);
          converted[i] =
            field.kind === 'message'
              ? messageFromDecoded(field.message!, items[i] as Plain, path)
              : scalarFromDecoded(field, items[i], path);
          path.pop();
        }
        path.pop();
      }
      out[field.name] = converted;
      continue;
    }
    if (!present) {
      if (field.kind === 'id' && field.idRequired) {
        path.push(field.name);
        path.fail('invalid_field', `expected a ${field.idBytes}-byte id, got 0 bytes`);
      }
      if (!field.presence) out[field.name] = defaultOf(field);
      continue;
    }
    path.push(field.name);
    out[field.name] =
      field.kind === 'message'
        ? messageFromDecoded(field.message!, raw as Plain, path)
        : scalarFromDecoded(field, raw, path);
    path.pop();
  }
  return out;
}

/** Converts a message decoded by protobufjs into the uniform plain shape, checking id lengths. */
export function fromDecoded(plan: MessagePlan, message: object): Plain {
  return messageFromDecoded(plan, message as Plain, new PathStack(''));
}
