/**
 * One export attempt to the downstream, over OTLP/HTTP or OTLP/gRPC, and what the OTLP
 * specification says about retrying its outcome:
 *
 * - HTTP: 2xx succeeds; 429, 502, 503 and 504 are retryable (after `Retry-After` when sent);
 *   any other status is final.
 * - gRPC: OK succeeds; CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE and
 *   DATA_LOSS are retryable, RESOURCE_EXHAUSTED only when the server sent a RetryInfo (then not
 *   before its delay); any other code is final.
 * - Network errors and timeouts are retryable on both.
 *
 * Messages are passed as bytes both ways (already-encoded OTLP), so nothing is re-encoded here.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { gzipSync } from 'node:zlib';
import { Client, credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { Reader, Writer } from 'protobufjs/light.js';

/** The outcome of one attempt. */
export type Attempt =
  | { kind: 'ok'; body: Buffer }
  | {
      kind: 'fail';
      /** A low-cardinality code for the failure counter: `status_503`, `grpc_14`, `network`, `timeout`. */
      reason: string;
      /** For the log: a status and a size, never the downstream's text (it may quote the payload). */
      detail: string;
      retryable: boolean;
      /** The server's own wait (Retry-After, RetryInfo), ms. */
      retryAfterMs?: number;
      /** The attempt was cut at the shutdown deadline. */
      aborted?: boolean;
    };

/**
 * An export request's body: one buffer, or several sent back to back as one body. Queue items of
 * one export join by concatenation (see `queue.ts`); handing them over as parts spares a copy of
 * the whole batch, and with it a second batch-sized buffer alive while the export is in flight.
 */
export type ExportBody = Uint8Array | readonly Uint8Array[];

/** The parts of a body (one buffer is one part). */
export function partsOf(body: ExportBody): readonly Uint8Array[] {
  return Array.isArray(body) ? body : [body as Uint8Array];
}

/** Parts at least this large are written as they are; smaller neighbours are joined first. */
const WRITE_AS_IS_BYTES = 16 * 1024;

/**
 * The parts of a body with each run of small neighbours joined into one buffer. Why: a spliced
 * request is the request's own large stretches (views) with many small new pieces between them
 * (about a hundred for eight enriched post spans), and each `write` on an HTTP request has its
 * own stream bookkeeping and iovec; joining the small ones copies a few KiB and makes the body
 * a handful of writes. Large parts are never copied.
 */
export function writableParts(body: ExportBody): readonly Uint8Array[] {
  const parts = partsOf(body);
  if (parts.length <= 2) return parts;
  const out: Uint8Array[] = [];
  let run: Uint8Array[] = [];
  const flush = () => {
    if (run.length === 1) out.push(run[0]!);
    else if (run.length > 1) out.push(Buffer.concat(run));
    run = [];
  };
  for (const p of parts) {
    if (p.byteLength >= WRITE_AS_IS_BYTES) {
      flush();
      out.push(p);
    } else run.push(p);
  }
  flush();
  return out;
}

/** The body as one buffer (a copy only when it has several parts). */
function joined(body: ExportBody): Uint8Array {
  const parts = partsOf(body);
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/** A way to send export requests of one signal. */
export interface Transport {
  /** One attempt; `json` marks an OTLP/JSON body (OTLP/HTTP only). */
  send(body: ExportBody, json: boolean): Promise<Attempt>;
  /** Cuts every attempt in flight (shutdown deadline). */
  abortAll(): void;
  close(): void;
}

/** The three OTLP signals. */
export type Signal = 'traces' | 'metrics' | 'logs';

/** gRPC method paths of the OTLP collector services. */
export const GRPC_PATHS: Readonly<Record<Signal, string>> = {
  traces: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
  metrics: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
  logs: '/opentelemetry.proto.collector.logs.v1.LogsService/Export',
};

/** Options of a transport. */
export interface TransportOptions {
  url: string;
  /** `http/protobuf`, `http/json` or `grpc`. */
  protocol: 'http/protobuf' | 'http/json' | 'grpc';
  signal: Signal;
  headers: Readonly<Record<string, string>>;
  compression: 'gzip' | 'none';
  timeoutMs: number;
  concurrency: number;
}

/** A transport for `options.protocol`. */
export function createTransport(options: TransportOptions): Transport {
  return options.protocol === 'grpc' ? new GrpcTransport(options) : new HttpTransport(options);
}

/** OTLP/HTTP: these statuses are retryable (the specification's list). */
const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);
/** Most bytes of a downstream response read (a partial success is small). */
const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * Parses a `Retry-After` header (delay-seconds or an HTTP date) into milliseconds from `nowMs`.
 * Undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === '') return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** The attempt cut at the shutdown deadline. */
const ABORTED: Attempt = {
  kind: 'fail',
  reason: 'aborted',
  detail: 'shutdown deadline',
  retryable: false,
  aborted: true,
};

/**
 * One attempt that settles once: `start` begins it with `settle` and returns how to cut it; the
 * cut is registered in `inflight` until the attempt settles (see {@link Transport.abortAll}).
 */
function attempt(
  inflight: Set<() => void>,
  start: (settle: (a: Attempt) => void) => () => void,
): Promise<Attempt> {
  return new Promise((resolve) => {
    let settled = false;
    let cut: () => void = () => undefined;
    const abort = () => {
      settle(ABORTED);
      cut();
    };
    const settle = (a: Attempt) => {
      if (settled) return;
      settled = true;
      inflight.delete(abort);
      resolve(a);
    };
    inflight.add(abort);
    cut = start(settle);
  });
}

class HttpTransport implements Transport {
  private readonly _url: URL;
  private readonly _agent: HttpAgent;
  private readonly _inflight = new Set<() => void>();

  constructor(private readonly _o: TransportOptions) {
    this._url = new URL(_o.url);
    const AgentClass = this._url.protocol === 'https:' ? HttpsAgent : HttpAgent;
    this._agent = new AgentClass({ keepAlive: true, maxSockets: _o.concurrency });
  }

  send(raw: ExportBody, json: boolean): Promise<Attempt> {
    const parts = this._o.compression === 'gzip' ? [gzipSync(joined(raw))] : writableParts(raw);
    const send = this._url.protocol === 'https:' ? httpsRequest : httpRequest;
    const headers: Record<string, string | number> = {
      ...this._o.headers,
      'content-type': json ? 'application/json' : 'application/x-protobuf',
      'content-length': parts.reduce((n, p) => n + p.byteLength, 0),
    };
    if (this._o.compression === 'gzip') headers['content-encoding'] = 'gzip';
    return attempt(this._inflight, (settle) => {
      const req = send(
        this._url,
        { method: 'POST', headers, agent: this._agent, timeout: this._o.timeoutMs },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size <= MAX_RESPONSE_BYTES) chunks.push(c);
          });
          res.on('end', () => {
            // An answer before the whole body was written (a downstream refusing early): stop the
            // writes, so that no byte of this body is read after the attempt settles (the
            // forwarder may then reuse its memory, ./body-pool.ts). The connection could not be
            // reused anyway: it is in the middle of a request.
            if (!req.writableFinished) req.destroy();
            const code = res.statusCode ?? 0;
            if (code >= 200 && code < 300) return settle({ kind: 'ok', body: Buffer.concat(chunks) });
            const retryAfterMs = parseRetryAfter(res.headers['retry-after'], Date.now());
            settle({
              kind: 'fail',
              reason: `status_${code}`,
              detail: `HTTP ${code}, ${size} byte answer`,
              retryable: RETRYABLE_STATUS.has(code),
              ...(retryAfterMs !== undefined && { retryAfterMs }),
            });
          });
          res.on('error', (e) =>
            settle({ kind: 'fail', reason: 'network', detail: e.message, retryable: true }),
          );
        },
      );
      const abort = () => {
        settle({
          kind: 'fail',
          reason: 'aborted',
          detail: 'shutdown deadline',
          retryable: false,
          aborted: true,
        });
        req.destroy();
      };
      this._inflight.add(abort);
      req.on('timeout', () => {
        settle({
          kind: 'fail',
          reason: 'timeout',
          detail: `no answer within ${this._o.timeoutMs} ms`,
          retryable: true,
        });
        req.destroy();
      });
      req.on('error', (e: NodeJS.ErrnoException) =>
        settle({ kind: 'fail', reason: 'network', detail: e.code ?? e.message, retryable: true }),
      );
      // With Content-Length set, the parts go out as one body (written together, not chunked).
      for (let i = 0; i < parts.length - 1; i++) req.write(parts[i]!);
      req.end(parts[parts.length - 1]);
      return () => req.destroy();
    });
  }

  abortAll(): void {
    for (const abort of [...this._inflight]) abort();
  }

  close(): void {
    this._agent.destroy();
  }
}

/** gRPC codes the OTLP specification makes retryable (RESOURCE_EXHAUSTED only with RetryInfo). */
const RETRYABLE_CODES = new Set<number>([
  status.CANCELLED,
  status.DEADLINE_EXCEEDED,
  status.ABORTED,
  status.OUT_OF_RANGE,
  status.UNAVAILABLE,
  status.DATA_LOSS,
]);

const bytes = (b: Buffer) => b;

class GrpcTransport implements Transport {
  private readonly _client: Client;
  private readonly _inflight = new Set<() => void>();

  constructor(private readonly _o: TransportOptions) {
    const url = new URL(_o.url);
    const secure = url.protocol === 'https:';
    const port = url.port || (secure ? '443' : '4317');
    this._client = new Client(
      `${url.hostname}:${port}`,
      secure ? credentials.createSsl() : credentials.createInsecure(),
      {
        'grpc.max_send_message_length': -1,
        ...(_o.compression === 'gzip' && { 'grpc.default_compression_algorithm': 2 }),
      },
    );
  }

  send(body: ExportBody, _json: boolean): Promise<Attempt> {
    // grpc-js frames the message into a buffer of its own, so the parts are joined here.
    const raw = joined(body);
    const metadata = new Metadata();
    for (const [k, v] of Object.entries(this._o.headers)) metadata.set(k.toLowerCase(), v);
    return attempt(this._inflight, (settle) => {
      const call = this._client.makeUnaryRequest(
        GRPC_PATHS[this._o.signal],
        bytes,
        bytes,
        Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength),
        metadata,
        { deadline: Date.now() + this._o.timeoutMs },
        (err: ServiceError | null, value?: Buffer) => {
          if (!err) return settle({ kind: 'ok', body: value ?? Buffer.alloc(0) });
          const retryAfterMs = retryInfoMs(err.metadata);
          const retryable =
            RETRYABLE_CODES.has(err.code) ||
            (err.code === status.RESOURCE_EXHAUSTED && retryAfterMs !== undefined);
          settle({
            kind: 'fail',
            reason: err.code === status.DEADLINE_EXCEEDED ? 'timeout' : `grpc_${err.code}`,
            detail: `gRPC status ${err.code}`,
            retryable,
            ...(retryAfterMs !== undefined && { retryAfterMs }),
          });
        },
      );
      return () => call.cancel();
    });
  }

  abortAll(): void {
    for (const abort of [...this._inflight]) abort();
  }

  close(): void {
    this._client.close();
  }
}

const RETRY_INFO_TYPE = 'type.googleapis.com/google.rpc.RetryInfo';
/** Trailer carrying the `google.rpc.Status` with details (gRPC convention). */
export const STATUS_DETAILS_KEY = 'grpc-status-details-bin';

/** Calls `visit` with each field of a protobuf message (the reader at its value); skips what it leaves. */
function eachField(bytes: Uint8Array, visit: (no: number, r: Reader) => boolean): void {
  const r = Reader.create(bytes);
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (!visit(tag >>> 3, r)) r.skipType(tag & 7);
  }
}

/**
 * The delay of a `google.rpc.RetryInfo` in a status's details, ms; undefined when there is none.
 * Status { code = 1; message = 2; repeated Any details = 3 }, Any { type_url = 1; value = 2 },
 * RetryInfo { Duration retry_delay = 1 }, Duration { int64 seconds = 1; int32 nanos = 2 }.
 */
export function retryInfoMs(metadata: Metadata | undefined): number | undefined {
  const raw = metadata?.get(STATUS_DETAILS_KEY)[0];
  if (!Buffer.isBuffer(raw)) return undefined;
  let delay: number | undefined;
  try {
    eachField(raw, (no, status) => {
      if (no !== 3) return false;
      let type = '';
      let value: Uint8Array | undefined;
      eachField(status.bytes(), (n, any) => {
        if (n === 1) type = any.string();
        else if (n === 2) value = any.bytes();
        else return false;
        return true;
      });
      if (type !== RETRY_INFO_TYPE || !value) return true;
      eachField(value, (n, info) => {
        if (n !== 1) return false;
        let seconds = 0;
        let nanos = 0;
        eachField(info.bytes(), (m, d) => {
          if (m === 1) seconds = Number(d.int64());
          else if (m === 2) nanos = d.int32();
          else return false;
          return true;
        });
        delay = seconds * 1000 + Math.floor(nanos / 1e6);
        return true;
      });
      return true;
    });
  } catch {
    return undefined;
  }
  return delay;
}

/** A `google.rpc.Status` with one RetryInfo of `seconds`, for the status-details trailer. */
export function statusWithRetryInfo(code: number, message: string, seconds: number): Buffer {
  const duration = Writer.create().uint32(8).int64(seconds).finish();
  const retryInfo = Writer.create().uint32(10).bytes(duration).finish();
  const any = Writer.create().uint32(10).string(RETRY_INFO_TYPE).uint32(18).bytes(retryInfo).finish();
  return Buffer.from(
    Writer.create().uint32(8).int32(code).uint32(18).string(message).uint32(26).bytes(any).finish(),
  );
}
