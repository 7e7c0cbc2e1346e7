/**
 * Decode and encode OTLP/HTTP bodies (`application/x-protobuf` and `application/json`) for the
 * trace and metrics export services. Decoding never hangs or crashes on bad input: every failure
 * is an {@link OtlpError} with a code and the field path.
 */
import { fromDecoded, fromJsonLike } from './convert.js';
import { OtlpError } from './errors.js';
import { type OtlpMessageSchema, SCHEMAS } from './schema.js';
import type {
  OtlpFormat,
  OtlpMetricsRequest,
  OtlpMetricsResponse,
  OtlpSpan,
  OtlpTraceRequest,
  OtlpTraceResponse,
} from './types.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

function checkFormat(format: unknown): asserts format is OtlpFormat {
  if (format !== 'protobuf' && format !== 'json') {
    throw new OtlpError('unsupported_format', '', `unsupported OTLP format: expected "protobuf" or "json"`);
  }
}

/** A JSON string, or a number token (whole, so a fraction or exponent is never split). */
const JSON_TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
/** An integer too long to be exact as a double (2^53 has 16 digits). */
const LONG_INTEGER = /^-?\d{16,}$/;

/**
 * Quotes integer literals of 16 digits or more, so `JSON.parse` keeps them exact: the codec reads
 * a 64-bit field from a decimal string as readily as from a number (the proto3 JSON mapping
 * allows both). Strings are matched whole and left alone.
 */
function exactIntegers(text: string): string {
  if (!/\d{16}/.test(text)) return text;
  return text.replace(JSON_TOKEN, (token) =>
    token.charCodeAt(0) !== 34 /* " */ && LONG_INTEGER.test(token) ? `"${token}"` : token,
  );
}

function parseJson(body: Uint8Array | string, message: string): unknown {
  let text: string;
  try {
    text = typeof body === 'string' ? body : utf8.decode(body);
  } catch {
    throw new OtlpError('invalid_json', '', `${message}: expected UTF-8 JSON text`);
  }
  try {
    return JSON.parse(exactIntegers(text));
  } catch (err) {
    // Only the position: V8's message quotes a fragment of the body, which may hold a payload.
    const at = /position (\d+)/.exec(String((err as Error).message))?.[1];
    const where = at === undefined ? '' : ` (at position ${at})`;
    throw new OtlpError('invalid_json', '', `${message}: expected JSON text${where}`);
  }
}

function decode(schema: OtlpMessageSchema, body: Uint8Array | string, format: OtlpFormat): unknown {
  checkFormat(format);
  const name = schema.plan.name;
  if (format === 'json') {
    const doc = parseJson(body, name);
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
      throw new OtlpError('invalid_json', '', `${name}: expected a JSON object at the top level`);
    }
    try {
      return fromJsonLike(schema.plan, doc, 'normal');
    } catch (err) {
      if (err instanceof OtlpError) throw err;
      // A pathological document (e.g. nesting that exhausts the stack) is bad input, not a crash.
      throw new OtlpError('invalid_field', '', `${name}: could not be read (${(err as Error).name})`);
    }
  }
  const bytes = typeof body === 'string' ? Buffer.from(body, 'latin1') : body;
  let message: object;
  try {
    message = schema.type.decode(bytes);
  } catch (err) {
    const detail = String((err as Error).message ?? err);
    const code = /max depth/.test(detail) ? 'too_deep' : 'invalid_protobuf';
    throw new OtlpError(code, '', `${name}: not a valid protobuf ${name} (${detail})`);
  }
  return fromDecoded(schema.plan, message);
}

function encode(schema: OtlpMessageSchema, value: unknown, format: OtlpFormat): Uint8Array | string {
  checkFormat(format);
  if (format === 'json') return JSON.stringify(fromJsonLike(schema.plan, value, 'json'));
  const wire = fromJsonLike(schema.plan, value, 'proto');
  return schema.type.encode(wire).finish();
}

/**
 * Decodes an ExportTraceServiceRequest body into the uniform OTLP/JSON shape (see `types.ts`).
 *
 * JSON input follows the OTLP/HTTP JSON mapping: lowerCamelCase (or snake_case) field names,
 * trace and span ids as hex, 64-bit integers as numbers or decimal strings, enums as integers
 * (names accepted too); unknown fields are ignored.
 *
 * @throws {OtlpError} `invalid_protobuf`, `invalid_json`, `invalid_field`, `too_deep`,
 *   `unsupported_format`; the message names the field path, e.g.
 *   `resourceSpans[0].scopeSpans[1].spans[4].traceId: expected 32 hex characters`.
 */
export function decodeTraceRequest(body: Uint8Array | string, format: OtlpFormat): OtlpTraceRequest {
  return decode(SCHEMAS.traceRequest, body, format) as OtlpTraceRequest;
}

/**
 * Encodes an ExportTraceServiceRequest. The input is validated like a JSON body, so a decoded
 * request, an OTLP/JSON document or a hand-built object are all accepted.
 * JSON output omits default values, as the OpenTelemetry exporters do.
 *
 * @throws {OtlpError} `invalid_field` naming the path of a bad field.
 */
export function encodeTraceRequest(request: OtlpTraceRequest | object, format: 'protobuf'): Uint8Array;
export function encodeTraceRequest(request: OtlpTraceRequest | object, format: 'json'): string;
export function encodeTraceRequest(
  request: OtlpTraceRequest | object,
  format: OtlpFormat,
): Uint8Array | string;
export function encodeTraceRequest(
  request: OtlpTraceRequest | object,
  format: OtlpFormat,
): Uint8Array | string {
  return encode(SCHEMAS.traceRequest, request, format);
}

/** Decodes an ExportTraceServiceResponse (what an OTLP/HTTP receiver answered). @throws {OtlpError} */
export function decodeTraceResponse(body: Uint8Array | string, format: OtlpFormat): OtlpTraceResponse {
  if (body.length === 0) return {};
  return decode(SCHEMAS.traceResponse, body, format) as OtlpTraceResponse;
}

/**
 * Encodes an ExportTraceServiceResponse, e.g. `{}` for full success or
 * `{ partialSuccess: { rejectedSpans: '2', errorMessage: '...' } }`. @throws {OtlpError}
 */
export function encodeTraceResponse(response: OtlpTraceResponse, format: 'protobuf'): Uint8Array;
export function encodeTraceResponse(response: OtlpTraceResponse, format: 'json'): string;
export function encodeTraceResponse(response: OtlpTraceResponse, format: OtlpFormat): Uint8Array | string;
export function encodeTraceResponse(response: OtlpTraceResponse, format: OtlpFormat): Uint8Array | string {
  return encode(SCHEMAS.traceResponse, response, format);
}

/** Decodes one protobuf `Span` message (its bytes inside a request). @throws {OtlpError} */
export function decodeSpan(body: Uint8Array): OtlpSpan {
  return decode(SCHEMAS.span, body, 'protobuf') as OtlpSpan;
}

/** Encodes one `Span` message in protobuf (to splice into a request). @throws {OtlpError} */
export function encodeSpan(span: OtlpSpan): Uint8Array {
  return encode(SCHEMAS.span, span, 'protobuf') as Uint8Array;
}

/** Decodes an ExportMetricsServiceRequest body; same rules as {@link decodeTraceRequest}. @throws {OtlpError} */
export function decodeMetricsRequest(body: Uint8Array | string, format: OtlpFormat): OtlpMetricsRequest {
  return decode(SCHEMAS.metricsRequest, body, format) as OtlpMetricsRequest;
}

/** Encodes an ExportMetricsServiceRequest; same rules as {@link encodeTraceRequest}. @throws {OtlpError} */
export function encodeMetricsRequest(request: OtlpMetricsRequest | object, format: 'protobuf'): Uint8Array;
export function encodeMetricsRequest(request: OtlpMetricsRequest | object, format: 'json'): string;
export function encodeMetricsRequest(
  request: OtlpMetricsRequest | object,
  format: OtlpFormat,
): Uint8Array | string;
export function encodeMetricsRequest(
  request: OtlpMetricsRequest | object,
  format: OtlpFormat,
): Uint8Array | string {
  return encode(SCHEMAS.metricsRequest, request, format);
}

/** Decodes an ExportMetricsServiceResponse. @throws {OtlpError} */
export function decodeMetricsResponse(body: Uint8Array | string, format: OtlpFormat): OtlpMetricsResponse {
  if (body.length === 0) return {};
  return decode(SCHEMAS.metricsResponse, body, format) as OtlpMetricsResponse;
}

/** Encodes an ExportMetricsServiceResponse. @throws {OtlpError} */
export function encodeMetricsResponse(response: OtlpMetricsResponse, format: 'protobuf'): Uint8Array;
export function encodeMetricsResponse(response: OtlpMetricsResponse, format: 'json'): string;
export function encodeMetricsResponse(response: OtlpMetricsResponse, format: OtlpFormat): Uint8Array | string;
export function encodeMetricsResponse(
  response: OtlpMetricsResponse,
  format: OtlpFormat,
): Uint8Array | string {
  return encode(SCHEMAS.metricsResponse, response, format);
}
