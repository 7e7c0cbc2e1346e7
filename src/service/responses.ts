/**
 * OTLP/HTTP answers, as the specification words them: success is an ExportTraceServiceResponse
 * (empty, or with `partial_success`); failures carry a `google.rpc.Status` with a message a
 * developer can act on; both in the request's encoding (protobuf or JSON). Retryable refusals
 * (429, 503) carry `Retry-After`.
 */
import type { ServerResponse } from 'node:http';
import { Writer } from 'protobufjs/light.js';
import { encodeTraceResponse } from '../otlp/index.js';
import { OTLP_CONTENT_TYPES, type OtlpEncoding } from './body.js';

/** gRPC status codes for the `google.rpc.Status.code` of each HTTP status we answer. */
const RPC_CODES: Readonly<Record<number, number>> = {
  400: 3, // INVALID_ARGUMENT
  401: 16, // UNAUTHENTICATED
  404: 5, // NOT_FOUND
  405: 12, // UNIMPLEMENTED
  408: 4, // DEADLINE_EXCEEDED
  413: 8, // RESOURCE_EXHAUSTED
  415: 3, // INVALID_ARGUMENT
  429: 8, // RESOURCE_EXHAUSTED
  500: 13, // INTERNAL
  503: 14, // UNAVAILABLE
};

/** `google.rpc.Status { int32 code = 1; string message = 2; }` in protobuf. */
export function encodeRpcStatus(code: number, message: string): Uint8Array {
  return Writer.create().uint32(8).int32(code).uint32(18).string(message).finish();
}

/** Options of {@link sendError}. */
export interface ErrorOptions {
  /** Seconds for `Retry-After` (429, 503). */
  retryAfterSeconds?: number;
  /** Close the connection after the answer (the body was not read to its end). */
  close?: boolean;
  /** Extra headers, e.g. `WWW-Authenticate` or `Allow`. */
  headers?: Readonly<Record<string, string>>;
}

/**
 * Answers a refused request: `status`, a `google.rpc.Status` in the request's encoding (JSON when
 * the encoding is unknown, e.g. for a 415), and `Retry-After` when given.
 */
export function sendError(
  res: ServerResponse,
  status: number,
  encoding: OtlpEncoding | undefined,
  message: string,
  options: ErrorOptions = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const code = RPC_CODES[status] ?? 2; // UNKNOWN
  const body =
    encoding === 'protobuf'
      ? Buffer.from(encodeRpcStatus(code, message))
      : Buffer.from(JSON.stringify({ code, message }));
  const headers: Record<string, string | number> = {
    'content-type': encoding === 'protobuf' ? OTLP_CONTENT_TYPES.protobuf : OTLP_CONTENT_TYPES.json,
    'content-length': body.length,
    ...options.headers,
  };
  if (options.retryAfterSeconds !== undefined)
    headers['retry-after'] = String(Math.ceil(options.retryAfterSeconds));
  if (options.close) headers.connection = 'close';
  res.writeHead(status, headers);
  res.end(body);
}

/** The body of a full success, per encoding, encoded once. */
const EMPTY_SUCCESS: Record<OtlpEncoding, Buffer> = {
  protobuf: Buffer.alloc(0),
  json: Buffer.from('{}'),
};

/**
 * Answers 200 with an ExportTraceServiceResponse: empty for full success, or with
 * `partial_success` (rejected span count and a message naming what was wrong).
 */
export function sendSuccess(
  res: ServerResponse,
  encoding: OtlpEncoding,
  partial?: { rejectedSpans: number; errorMessage: string },
): void {
  let body: Buffer;
  if (partial && partial.rejectedSpans > 0) {
    const response = {
      partialSuccess: { rejectedSpans: String(partial.rejectedSpans), errorMessage: partial.errorMessage },
    };
    const encoded = encodeTraceResponse(response, encoding);
    body = typeof encoded === 'string' ? Buffer.from(encoded) : Buffer.from(encoded);
  } else {
    body = EMPTY_SUCCESS[encoding];
  }
  res.writeHead(200, { 'content-type': OTLP_CONTENT_TYPES[encoding], 'content-length': body.length });
  res.end(body);
}

/** Answers a plain-text endpoint (`/healthz`, `/readyz`). */
export function sendText(res: ServerResponse, status: number, text: string): void {
  const body = Buffer.from(`${text}\n`);
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': body.length });
  res.end(body);
}
