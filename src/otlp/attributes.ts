/**
 * Reading and writing span attributes (OTLP KeyValue lists) as plain records, so code that works on
 * OpenTelemetry API attributes (the attribute codec, the correlator) can work on decoded spans.
 */
import type { Attributes, AttributeValue } from '@opentelemetry/api';
import type { OtlpAnyValue, OtlpKeyValue } from './types.js';

type Primitive = string | number | boolean;

function primitiveOf(value: OtlpAnyValue): Primitive | undefined {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.bytesValue !== undefined) return value.bytesValue;
  return undefined;
}

/**
 * Converts an OTLP AnyValue to an OpenTelemetry API attribute value, or `undefined` when the value
 * has no API equivalent (an empty value, a key-value list, a nested or mixed-type array).
 * `intValue` becomes a number (as the JS SDK records integers); `bytesValue` stays base64 text.
 */
export function anyValueToAttribute(value: OtlpAnyValue | undefined): AttributeValue | undefined {
  if (value === undefined) return undefined;
  const primitive = primitiveOf(value);
  if (primitive !== undefined) return primitive;
  if (value.arrayValue === undefined) return undefined;
  const items: Primitive[] = [];
  let kind: string | undefined;
  for (const item of value.arrayValue.values) {
    const p = primitiveOf(item);
    if (p === undefined) return undefined;
    if (kind !== undefined && typeof p !== kind) return undefined;
    kind = typeof p;
    items.push(p);
  }
  return items as AttributeValue;
}

/**
 * A KeyValue list as a record of OpenTelemetry API attribute values. Values without an API
 * equivalent are left out; on a duplicated key the last one wins.
 */
export function attributesToRecord(keyValues: readonly OtlpKeyValue[] | undefined): Attributes {
  const out: Attributes = {};
  if (!keyValues) return out;
  for (const kv of keyValues) {
    const value = anyValueToAttribute(kv.value);
    if (value !== undefined) out[kv.key] = value;
  }
  return out;
}

function primitiveToAnyValue(value: unknown): OtlpAnyValue | undefined {
  switch (typeof value) {
    case 'string':
      return { stringValue: value };
    case 'boolean':
      return { boolValue: value };
    case 'number':
      // Same rule as the OpenTelemetry JS OTLP transformer: integers as intValue.
      return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
    default:
      return undefined;
  }
}

/** Converts an OpenTelemetry API attribute value to an OTLP AnyValue (`undefined` for `undefined`). */
export function attributeToAnyValue(value: AttributeValue | undefined): OtlpAnyValue | undefined {
  if (Array.isArray(value)) {
    const values: OtlpAnyValue[] = [];
    for (const item of value) values.push(primitiveToAnyValue(item) ?? {});
    return { arrayValue: { values } };
  }
  return primitiveToAnyValue(value);
}

/** A record of OpenTelemetry API attribute values as a KeyValue list (undefined values left out). */
export function recordToAttributes(record: Attributes): OtlpKeyValue[] {
  const out: OtlpKeyValue[] = [];
  for (const [key, raw] of Object.entries(record)) {
    const value = attributeToAnyValue(raw);
    if (value !== undefined) out.push({ key, value });
  }
  return out;
}

/**
 * Returns a new KeyValue list with the record's keys set: existing keys are replaced in place,
 * new keys appended. The input list is not modified. Used to enrich decoded post spans.
 */
export function upsertAttributes(keyValues: readonly OtlpKeyValue[], record: Attributes): OtlpKeyValue[] {
  const additions = recordToAttributes(record);
  const index = new Map(additions.map((kv, i) => [kv.key, i]));
  const out: OtlpKeyValue[] = [];
  for (const kv of keyValues) {
    const i = index.get(kv.key);
    if (i === undefined) out.push(kv);
    else {
      out.push(additions[i]!);
      index.delete(kv.key);
    }
  }
  for (const i of index.values()) out.push(additions[i]!);
  return out;
}
