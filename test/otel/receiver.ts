/**
 * An OTLP/HTTP receiver for tests: a real HTTP server on 127.0.0.1 (free port) that decodes what
 * the exporters send with the project's own codec (src/otlp) and keeps it for assertions.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import {
  decodeMetricsRequest,
  decodeTraceRequest,
  encodeMetricsResponse,
  encodeTraceResponse,
  type OtlpFormat,
  type OtlpMetricsRequest,
  type OtlpSpan,
  type OtlpTraceRequest,
} from '../../src/otlp/index.js';

/** One request as received. */
export interface Received {
  path: string;
  format: OtlpFormat;
  contentType: string;
}

/** A running receiver. */
export interface Receiver {
  /** `http://127.0.0.1:<port>` — give it to the exporters as OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: string;
  requests: Received[];
  traces: OtlpTraceRequest[];
  metrics: OtlpMetricsRequest[];
  /** Decode failures (a test asserts there are none). */
  errors: string[];
  /** Every span received, flattened. */
  spans(): OtlpSpan[];
  close(): Promise<void>;
}

function formatOf(contentType: string): OtlpFormat | undefined {
  if (contentType.startsWith('application/x-protobuf')) return 'protobuf';
  if (contentType.startsWith('application/json')) return 'json';
  return undefined;
}

/** Starts a receiver on 127.0.0.1 with a free port. */
export async function startReceiver(): Promise<Receiver> {
  const requests: Received[] = [];
  const traces: OtlpTraceRequest[] = [];
  const metrics: OtlpMetricsRequest[] = [];
  const errors: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const contentType = String(req.headers['content-type'] ?? '');
      const format = formatOf(contentType);
      const path = req.url ?? '';
      if (!format || (path !== '/v1/traces' && path !== '/v1/metrics')) {
        res.writeHead(format ? 404 : 415).end();
        return;
      }
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      requests.push({ path, format, contentType });
      try {
        let answer: Uint8Array | string;
        if (path === '/v1/traces') {
          traces.push(decodeTraceRequest(body, format));
          answer = encodeTraceResponse({}, format);
        } else {
          metrics.push(decodeMetricsRequest(body, format));
          answer = encodeMetricsResponse({}, format);
        }
        res.writeHead(200, { 'content-type': contentType.split(';')[0]! }).end(answer);
      } catch (err) {
        errors.push(`${path} (${format}): ${(err as Error).message}`);
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    traces,
    metrics,
    errors,
    spans: () => traces.flatMap((t) => t.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
