/**
 * A test double of the OpenTelemetry Collector that sits downstream of `continuity serve`:
 * it receives the spans the service forwards (OTLP/HTTP, protobuf or JSON) and serves, on
 * `/metrics`, the series the collector's `spanmetrics` connector would produce from them through
 * its `prometheus` exporter, and beside them the series Tempo's metrics-generator would produce
 * from the same spans (names, labels, default buckets in `collector-names.ts`).
 *
 * What it stands for: the collector in `otelcol-gateway.yaml` (connector + exporter) and a Tempo
 * behind it, so the dashboard's span panels can be checked against real Prometheus data made from
 * the spans the service really forwarded, with either choice of its `spanmetrics_prefix`. What it
 * is not: the collector or Tempo. It counts calls and a cumulative duration histogram (seconds)
 * per (service, span name, kind, status) and nothing else; the exact names are checked against
 * their sources, not against a running collector or Tempo.
 *
 * `failWith(status)` makes it answer every export with that status (503 to test retries and
 * drops) until `failWith(undefined)`.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { attributesToRecord, decodeTraceRequest } from '../../src/otlp/index.js';
import type { OtlpSpan } from '../../src/otlp/types.js';
import {
  SPANMETRICS_CALLS,
  SPANMETRICS_DEFAULT_BUCKETS_S,
  SPANMETRICS_DURATION,
  SPANMETRICS_STATUS,
  TEMPO_SPANMETRICS_CALLS,
  TEMPO_SPANMETRICS_DEFAULT_BUCKETS_S,
  TEMPO_SPANMETRICS_LATENCY,
} from './collector-names.js';

const SPAN_KINDS = [
  'SPAN_KIND_UNSPECIFIED',
  'SPAN_KIND_INTERNAL',
  'SPAN_KIND_SERVER',
  'SPAN_KIND_CLIENT',
  'SPAN_KIND_PRODUCER',
  'SPAN_KIND_CONSUMER',
] as const;
const STATUS_CODES = [SPANMETRICS_STATUS.unset, SPANMETRICS_STATUS.ok, SPANMETRICS_STATUS.error] as const;

interface Series {
  serviceName: string;
  /** span_name, span_kind, status_code: the same in both families. */
  labels: Record<string, string>;
  /** Every span duration seen, in seconds (test volumes are small). */
  durations: number[];
}

/** One family of series as it reaches Prometheus. */
interface Family {
  calls: string;
  histogram: string;
  serviceLabel: string;
  buckets: readonly number[];
}

const FAMILIES: readonly Family[] = [
  {
    calls: SPANMETRICS_CALLS,
    histogram: SPANMETRICS_DURATION,
    serviceLabel: 'service_name',
    buckets: SPANMETRICS_DEFAULT_BUCKETS_S,
  },
  {
    calls: TEMPO_SPANMETRICS_CALLS,
    histogram: TEMPO_SPANMETRICS_LATENCY,
    serviceLabel: 'service',
    buckets: TEMPO_SPANMETRICS_DEFAULT_BUCKETS_S,
  },
];

/** A received span, reduced to what the tests look at. */
export interface ReceivedSpan {
  serviceName: string;
  span: OtlpSpan;
  attributes: Record<string, unknown>;
}

export class CollectorDouble {
  readonly spans: ReceivedSpan[] = [];
  /** Export requests answered with a failure status. */
  failedRequests = 0;
  private readonly _series = new Map<string, Series>();
  private _failStatus: number | undefined;
  private _server: Server | undefined;

  /** Starts listening on 127.0.0.1 on a free port. */
  static async start(): Promise<CollectorDouble> {
    const double = new CollectorDouble();
    const server = createServer((req, res) => {
      double._handle(req).then(
        ({ status, body, type }) => {
          res.writeHead(status, { 'content-type': type });
          res.end(body);
        },
        (e: Error) => {
          res.writeHead(400, { 'content-type': 'text/plain' });
          res.end(e.message);
        },
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    double._server = server;
    return double;
  }

  /** `host:port`, for a Prometheus scrape target. */
  get address(): string {
    const a = this._server!.address() as AddressInfo;
    return `127.0.0.1:${a.port}`;
  }

  /** The OTLP/HTTP traces URL to configure as the service's downstream. */
  get tracesUrl(): string {
    return `http://${this.address}/v1/traces`;
  }

  /** Answer exports with `status` (e.g. 503) until called again with undefined. */
  failWith(status: number | undefined): void {
    this._failStatus = status;
  }

  async stop(): Promise<void> {
    const server = this._server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async _handle(
    req: IncomingMessage,
  ): Promise<{ status: number; body: string | Uint8Array; type: string }> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    if (req.method === 'GET' && req.url === '/metrics') {
      return { status: 200, body: this._exposition(), type: 'text/plain; version=0.0.4' };
    }
    if (req.method !== 'POST' || req.url !== '/v1/traces')
      return { status: 404, body: '', type: 'text/plain' };
    if (this._failStatus !== undefined) {
      this.failedRequests++;
      return { status: this._failStatus, body: '', type: 'text/plain' };
    }
    const json = (req.headers['content-type'] ?? '').startsWith('application/json');
    const request = decodeTraceRequest(
      json ? body.toString('utf8') : new Uint8Array(body),
      json ? 'json' : 'protobuf',
    );
    for (const rs of request.resourceSpans) {
      const resource = attributesToRecord(rs.resource?.attributes);
      const serviceName =
        typeof resource['service.name'] === 'string' ? resource['service.name'] : 'unknown_service';
      for (const ss of rs.scopeSpans) {
        for (const span of ss.spans) {
          this.spans.push({ serviceName, span, attributes: attributesToRecord(span.attributes) });
          this._count(serviceName, span);
        }
      }
    }
    return json
      ? { status: 200, body: '{}', type: 'application/json' }
      : { status: 200, body: new Uint8Array(0), type: 'application/x-protobuf' };
  }

  private _count(serviceName: string, span: OtlpSpan): void {
    const labels = {
      span_name: span.name,
      span_kind: SPAN_KINDS[span.kind] ?? SPAN_KINDS[0],
      status_code: STATUS_CODES[span.status?.code ?? 0] ?? SPANMETRICS_STATUS.unset,
    };
    const key = JSON.stringify([serviceName, labels]);
    let s = this._series.get(key);
    if (!s) {
      s = { serviceName, labels, durations: [] };
      this._series.set(key, s);
    }
    s.durations.push(Number(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)) / 1e9);
  }

  /** Prometheus text format 0.0.4, as the collector's prometheus exporter (and Tempo) serve it. */
  private _exposition(): string {
    const fmt = (labels: Record<string, string>) =>
      `{${Object.entries(labels)
        .map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`)
        .join(',')}}`;
    const lines: string[] = [];
    for (const f of FAMILIES) {
      const labelsOf = (s: Series) => ({ [f.serviceLabel]: s.serviceName, ...s.labels });
      lines.push(`# TYPE ${f.calls} counter`);
      for (const s of this._series.values())
        lines.push(`${f.calls}${fmt(labelsOf(s))} ${s.durations.length}`);
      lines.push(`# TYPE ${f.histogram} histogram`);
      for (const s of this._series.values()) {
        const labels = labelsOf(s);
        for (const bound of f.buckets) {
          const count = s.durations.filter((d) => d <= bound).length;
          lines.push(`${f.histogram}_bucket${fmt({ ...labels, le: String(bound) })} ${count}`);
        }
        lines.push(`${f.histogram}_bucket${fmt({ ...labels, le: '+Inf' })} ${s.durations.length}`);
        lines.push(`${f.histogram}_sum${fmt(labels)} ${s.durations.reduce((a, b) => a + b, 0)}`);
        lines.push(`${f.histogram}_count${fmt(labels)} ${s.durations.length}`);
      }
    }
    return `${lines.join('\n')}\n`;
  }
}
