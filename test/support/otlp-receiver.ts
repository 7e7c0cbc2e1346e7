/**
 * The one OTLP/HTTP receiver of the test suite: a real HTTP server on 127.0.0.1 (a free port) that
 * decodes what the product and the SDK exporters send with the project's own codec (src/otlp) and
 * keeps every request, decoded span and decode error for assertions. It stands for a collector
 * (the next hop of `continuity serve`, the endpoint of the hooks and recording commands, the
 * target of the SDK exporters), and can play a failing, slow or partly refusing one.
 *
 * Used as is by the SDK-exporter tests (test/otel/wire, test/demo, test/examples/traced-agent), by
 * test/claude-code/harness.ts and test/export/harness.ts (trace requests only), and behind the
 * `Downstream` of test/service/harness.ts.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import {
  attributesToRecord,
  decodeMetricsRequest,
  decodeTraceRequest,
  encodeMetricsResponse,
  encodeTraceResponse,
  type OtlpFormat,
  type OtlpMetricsRequest,
  type OtlpSpan,
  type OtlpTraceRequest,
} from '../../src/otlp/index.js';

/** The two OTLP/HTTP signal paths the receiver serves. */
export const TRACES_PATH = '/v1/traces';
/** See {@link TRACES_PATH}. */
export const METRICS_PATH = '/v1/metrics';
/** Logs are kept as bytes (the codec has no logs schema): see {@link OtlpReceiver.raw}. */
export const LOGS_PATH = '/v1/logs';

/** A decoded span as the tests read it: the OTLP span, its ids and links, attributes as records. */
export interface ReceivedSpan {
  /** The decoded OTLP span (OTLP/JSON shape, attributes as KeyValue arrays). */
  span: OtlpSpan;
  name: string;
  traceId: string;
  spanId: string;
  links: Array<{ traceId: string; spanId: string }>;
  /** The span's attributes as a plain record. */
  attributes: Record<string, unknown>;
  /** Its resource's attributes as a plain record. */
  resource: Record<string, unknown>;
  /** `service.name` of its resource. */
  service: unknown;
  /** The OTLP status code (0 unset, 2 error). */
  statusCode: number;
}

/** The spans of a decoded trace request, in order. */
export function spansOf(request: OtlpTraceRequest): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of request.resourceSpans) {
    const resource = attributesToRecord(rs.resource?.attributes) as Record<string, unknown>;
    for (const ss of rs.scopeSpans) {
      for (const span of ss.spans) {
        out.push({
          span,
          name: span.name,
          traceId: span.traceId,
          spanId: span.spanId,
          links: span.links.map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
          attributes: attributesToRecord(span.attributes) as Record<string, unknown>,
          resource,
          service: resource['service.name'],
          statusCode: span.status?.code ?? 0,
        });
      }
    }
  }
  return out;
}

/** Every request that reached the receiver, whatever it answered. */
export interface Attempt {
  path: string;
  /** The `Content-Type` header as sent ('' when none). */
  contentType: string;
  /** The `Content-Encoding` header as sent (`identity` when none). */
  contentEncoding: string;
  /** The HTTP status the receiver answered. */
  status: number;
}

/** A request the receiver decoded and accepted. */
export interface ReceivedRequest {
  path: typeof TRACES_PATH | typeof METRICS_PATH;
  format: OtlpFormat;
  /** The `Content-Type` header as sent. */
  contentType: string;
  headers: IncomingHttpHeaders;
  /** The payload as the sender encoded it (after undoing a gzip `Content-Encoding`), for leak scans. */
  body: Buffer;
  /** The decoded request: `trace` for {@link TRACES_PATH}, `metrics` for {@link METRICS_PATH}. */
  trace?: OtlpTraceRequest;
  metrics?: OtlpMetricsRequest;
  /** The spans of `trace` (none for metrics). */
  spans: ReceivedSpan[];
}

/** How the receiver answers trace requests (metrics requests are always accepted). */
export type ReceiverMode =
  | { kind: 'ok' }
  /** Answer every request with `status` (with a `Retry-After` of `retryAfter` seconds), decoding nothing. */
  | { kind: 'fail'; status: number; retryAfter?: number }
  /** Accept, but only after `ms` (a slow collector). */
  | { kind: 'slow'; ms: number }
  /** Answer trace requests 200 with an OTLP partial success refusing `rejected` spans, keeping nothing. */
  | { kind: 'partial'; rejected: number };

/** Options of {@link startOtlpReceiver}. */
export interface ReceiverOptions {
  /** The signal paths accepted; any other path is an error (404). Default both traces and metrics. */
  paths?: ReadonlyArray<typeof TRACES_PATH | typeof METRICS_PATH | typeof LOGS_PATH>;
}

/** A running receiver. */
export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: the base URL (append `/v1/traces` for a per-signal endpoint). */
  readonly endpoint: string;
  readonly port: number;
  /** Every request that reached the receiver, in arrival order, including refused ones. */
  readonly attempts: Attempt[];
  /** The requests decoded and accepted, in arrival order. */
  readonly requests: ReceivedRequest[];
  /** The decoded trace requests, in arrival order. */
  readonly traces: OtlpTraceRequest[];
  /** The decoded metrics requests, in arrival order. */
  readonly metrics: OtlpMetricsRequest[];
  /** Every span of every accepted trace request, in arrival order. */
  readonly spans: ReceivedSpan[];
  /** Requests that could not be taken (unknown content type or path, a body that does not decode). */
  readonly errors: string[];
  /** Every request body as it arrived (gzip undone), by path, in arrival order: for byte-for-byte checks. */
  readonly raw: Array<{ path: string; contentType: string; body: Buffer }>;
  readonly mode: ReceiverMode;
  setMode(mode: ReceiverMode): void;
  /** Stops listening (connections refused) until {@link OtlpReceiver.reopen}. */
  close(): Promise<void>;
  /** Listens again on the same port. */
  reopen(): Promise<void>;
}

function formatOf(contentType: string): OtlpFormat | undefined {
  if (contentType.startsWith('application/x-protobuf')) return 'protobuf';
  if (contentType.startsWith('application/json')) return 'json';
  return undefined;
}

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Starts a receiver on 127.0.0.1 with a free port. */
export async function startOtlpReceiver(options: ReceiverOptions = {}): Promise<OtlpReceiver> {
  const paths: ReadonlyArray<string> = options.paths ?? [TRACES_PATH, METRICS_PATH, LOGS_PATH];
  const raw: OtlpReceiver['raw'] = [];
  let mode: ReceiverMode = { kind: 'ok' };
  const attempts: Attempt[] = [];
  const requests: ReceivedRequest[] = [];
  const traces: OtlpTraceRequest[] = [];
  const metrics: OtlpMetricsRequest[] = [];
  const spans: ReceivedSpan[] = [];
  const errors: string[] = [];

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const wire = await readAll(req);
    const path = req.url ?? '';
    const contentType = String(req.headers['content-type'] ?? '');
    const contentEncoding = String(req.headers['content-encoding'] ?? 'identity');
    const answer = (status: number, headers: Record<string, string> = {}, body?: Uint8Array | string) => {
      attempts.push({ path, contentType, contentEncoding, status });
      res.writeHead(status, headers).end(body);
    };
    // The modes stand for a failing trace pipeline; metrics requests always go through.
    const traced = path === TRACES_PATH;
    if (mode.kind === 'fail' && traced) {
      const headers: Record<string, string> = {};
      if (mode.retryAfter !== undefined) headers['retry-after'] = String(mode.retryAfter);
      answer(mode.status, headers);
      return;
    }
    const format = formatOf(contentType);
    if (!format) {
      errors.push(`${path}: unexpected content type '${contentType}'`);
      answer(415);
      return;
    }
    if (!paths.includes(path)) {
      errors.push(`unexpected path ${path}`);
      answer(404);
      return;
    }
    if (mode.kind === 'slow' && traced) await new Promise((r) => setTimeout(r, (mode as { ms: number }).ms));
    const headers = { 'content-type': `application/${format === 'json' ? 'json' : 'x-protobuf'}` };
    if (mode.kind === 'partial' && path === TRACES_PATH) {
      const partialSuccess = { rejectedSpans: String(mode.rejected), errorMessage: 'refused by the test' };
      answer(200, headers, encodeTraceResponse({ partialSuccess }, format));
      return;
    }
    try {
      const body = contentEncoding === 'gzip' ? gunzipSync(wire) : wire;
      raw.push({ path, contentType, body });
      if (path === LOGS_PATH) {
        answer(200, headers, format === 'json' ? '{}' : Buffer.alloc(0));
        return;
      }
      const payload = format === 'json' ? body.toString('utf8') : new Uint8Array(body);
      const received = { path, format, contentType, headers: req.headers, body } as const;
      if (path === TRACES_PATH) {
        const trace = decodeTraceRequest(payload, format);
        const decoded = spansOf(trace);
        requests.push({ ...received, path, trace, spans: decoded });
        traces.push(trace);
        spans.push(...decoded);
        answer(200, headers, encodeTraceResponse({}, format));
      } else {
        const request = decodeMetricsRequest(payload, format);
        requests.push({ ...received, path: METRICS_PATH, metrics: request, spans: [] });
        metrics.push(request);
        answer(200, headers, encodeMetricsResponse({}, format));
      }
    } catch (err) {
      errors.push(`${path} (${format}): ${(err as Error).message}`);
      answer(400);
    }
  };

  const make = (): Server => {
    const s = createServer((req, res) => {
      handle(req, res).catch((err: unknown) => {
        errors.push(`${req.url}: ${(err as Error).message}`);
        if (!res.headersSent) res.writeHead(400);
        res.end();
      });
    });
    // Short keep-alive so a closed receiver is really gone for the sender's next request.
    s.keepAliveTimeout = 1000;
    return s;
  };
  let server = make();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    attempts,
    requests,
    traces,
    metrics,
    spans,
    errors,
    raw,
    get mode() {
      return mode;
    },
    setMode: (m) => {
      mode = m;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    reopen: async () => {
      server = make();
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
  };
}

/** A base URL on 127.0.0.1 where nothing listens (a port taken from the OS, then released). */
export async function deadEndpoint(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
