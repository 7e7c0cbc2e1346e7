/**
 * The OTLP/HTTP receiver for `POST /v1/traces`: authentication, admission, body, decoding, and the
 * answer the OTLP/HTTP specification asks for.
 *
 * | Situation                                          | Status                         |
 * |----------------------------------------------------|--------------------------------|
 * | accepted (all spans)                               | 200, empty response            |
 * | some spans refused (limits, missing session key)   | 200, `partial_success`         |
 * | undecodable body, bad gzip, wrong field types      | 400                            |
 * | missing or wrong bearer token                      | 401                            |
 * | body did not arrive in `server.requestTimeout`     | 503 + Retry-After (retryable)  |
 * | body over `server.maxRequestBytes` (raw or gunzipped) | 413                         |
 * | Content-Type / Content-Encoding not supported      | 415                            |
 * | forward queue full, downstream healthy             | 429 + Retry-After              |
 * | forward queue full while the downstream fails, shutting down, state not durable | 503 + Retry-After |
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { decodeTraceRequest, OtlpError, type OtlpTraceRequest } from '../otlp/index.js';
import {
  type BodyDecoder,
  BodyError,
  codingOf,
  decodeBody,
  encodingOf,
  type OtlpEncoding,
  readRawBody,
} from './body.js';
import type { BodyPool } from './body-pool.js';
import { sendError, sendSuccess } from './responses.js';

/** A refusal decided by the service after decoding (queue full, state not durable, shutting down). */
export class Refusal extends Error {
  override readonly name = 'Refusal';
  constructor(
    readonly status: 429 | 503,
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** A protobuf body that is not a valid ExportTraceServiceRequest (answered 400). */
export class MalformedRequest extends Error {
  override readonly name = 'MalformedRequest';
}

/** A partial success to report: how many spans were refused, and why (never a value). */
export interface PartialSuccess {
  rejectedSpans: number;
  errorMessage: string;
}

/** What every OTLP/HTTP receiver path needs. */
export interface BodyTarget {
  /** Body limits. */
  maxRequestBytes: number;
  requestTimeoutMs: number;
  /** Where zstd, snappy and LZ4 bodies are decoded off the event loop (else in place). */
  decoder?: BodyDecoder;
  /** SHA-256 of the bearer token, when one is required. */
  tokenHash: Buffer | undefined;
  /**
   * Memory that uncompressed bodies are read into (./body-pool.ts); whoever queues a body gives it
   * back through the forwarder. Without one, every body is read into fresh memory.
   */
  bodies?: BodyPool;
  /** Counts one answered request by status. */
  answered(status: number): void;
}

/** What the trace receiver needs from the service. */
export interface ReceiverTarget extends BodyTarget {
  /** A refusal to give before reading the body (shutting down, queue already full), or undefined. */
  admit(): Refusal | undefined;
  /**
   * A protobuf body: resolves with the partial success to report (or undefined) once its
   * compaction events are durable and its spans queued, or `decode` when it needs the decoded
   * request. Throws {@link Refusal} or {@link MalformedRequest}.
   */
  ingestProtobuf(body: Buffer): Promise<PartialSuccess | undefined | 'decode'>;
  /**
   * Processes a decoded request. Resolves with the partial success to report (or undefined), once
   * the request's compaction events are durable and its spans are queued. Throws {@link Refusal}.
   */
  ingest(
    request: OtlpTraceRequest,
    encoding: OtlpEncoding,
    body: Buffer,
  ): Promise<PartialSuccess | undefined>;
}

/** SHA-256 of a token, so the comparison below is constant-time on equal-length inputs. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** True when `token` is the one whose hash is `tokenHash` (constant-time). */
export function tokenMatches(token: string, tokenHash: Buffer): boolean {
  return timingSafeEqual(hashToken(token), tokenHash);
}

function authorized(req: IncomingMessage, tokenHash: Buffer | undefined): boolean {
  if (tokenHash === undefined) return true;
  const header = req.headers.authorization;
  if (typeof header !== 'string' || !/^Bearer /i.test(header)) return false;
  return tokenMatches(header.slice(7).trim(), tokenHash);
}

/**
 * The steps every OTLP/HTTP export path shares: authentication, content type and coding, an early
 * refusal, the body (size limit, timeout, decompression), then `handle` with the body, and the
 * answer the specification asks for, whatever `handle` throws (Refusal, MalformedRequest,
 * BodyError). Never throws; every path answers exactly once.
 */
async function receive(
  req: IncomingMessage,
  res: ServerResponse,
  target: BodyTarget,
  admit: () => Refusal | undefined,
  handle: (body: Buffer, encoding: OtlpEncoding) => Promise<PartialSuccess | undefined>,
): Promise<void> {
  let encoding: OtlpEncoding | undefined;
  const answer = (status: number, message: string, options: Parameters<typeof sendError>[4] = {}) => {
    target.answered(status);
    sendError(res, status, encoding, message, options);
  };
  try {
    if (!authorized(req, target.tokenHash)) {
      req.resume();
      answer(401, 'missing or wrong bearer token: send Authorization: Bearer <token> (server.bearerToken)', {
        headers: { 'www-authenticate': 'Bearer' },
      });
      return;
    }
    encoding = encodingOf(req.headers['content-type']);
    const coding = codingOf(req.headers['content-encoding']);
    const early = admit();
    if (early) {
      req.resume();
      answer(early.status, early.message, { retryAfterSeconds: early.retryAfterSeconds });
      return;
    }
    // Only an uncompressed body is pooled: a compressed one is decoded into new memory anyway.
    const raw = await readRawBody(
      req,
      { maxBytes: target.maxRequestBytes, timeoutMs: target.requestTimeoutMs },
      coding === 'identity' ? target.bodies : undefined,
    );
    const body = await decodeBody(raw, coding, target.maxRequestBytes, target.decoder);
    const partial = await handle(body, encoding);
    target.answered(200);
    sendSuccess(res, encoding, partial);
  } catch (e) {
    if (e instanceof BodyError) {
      // Drain what the client still sends, so it can read the answer; after a 413 or a timeout
      // close the connection rather than reading an unbounded or stalled body to its end.
      req.resume();
      answer(e.status, e.message, {
        close: e.status === 413 || e.code === 'timeout',
        ...(e.code === 'timeout' && { retryAfterSeconds: 1 }),
      });
    } else if (e instanceof Refusal) {
      answer(e.status, e.message, { retryAfterSeconds: e.retryAfterSeconds });
    } else if (e instanceof MalformedRequest) {
      answer(400, e.message);
    } else {
      answer(500, `internal error: ${(e as Error).message ?? String(e)}`);
    }
  }
}

/** Handles one `POST /v1/traces`. Never throws; every path answers exactly once. */
export function handleTraces(
  req: IncomingMessage,
  res: ServerResponse,
  target: ReceiverTarget,
): Promise<void> {
  return receive(req, res, target, target.admit, async (body, encoding) => {
    if (encoding === 'protobuf') {
      let result: PartialSuccess | undefined | 'decode';
      try {
        result = await target.ingestProtobuf(body);
      } catch (e) {
        if (!(e instanceof MalformedRequest)) throw e;
        throw new MalformedRequest(`cannot decode the ExportTraceServiceRequest (protobuf): ${e.message}`);
      }
      if (result !== 'decode') return result;
    }
    let request: OtlpTraceRequest;
    try {
      request = decodeTraceRequest(body, encoding);
    } catch (e) {
      if (e instanceof OtlpError) {
        throw new MalformedRequest(`cannot decode the ExportTraceServiceRequest (${encoding}): ${e.message}`);
      }
      throw e;
    }
    return target.ingest(request, encoding, body);
  });
}

/** What the pass-through receiver (metrics, logs) needs from the service. */
export interface PassthroughTarget extends BodyTarget {
  /** Queues the request as it came (in its encoding). Throws {@link Refusal}. */
  accept(body: Buffer, encoding: OtlpEncoding): void;
}

/**
 * Handles one `POST /v1/metrics` or `POST /v1/logs`: the body is decompressed and queued for the
 * downstream as it came, never decoded (the service does nothing to metrics and logs); the answer
 * is an empty Export*ServiceResponse in the request's encoding. Never throws.
 */
export function handlePassthrough(
  req: IncomingMessage,
  res: ServerResponse,
  target: PassthroughTarget,
): Promise<void> {
  return receive(
    req,
    res,
    target,
    () => undefined,
    async (body, encoding) => {
      target.accept(body, encoding);
      return undefined;
    },
  );
}
