/**
 * Test support for the recording commands' span export: a private ledger directory and a clean
 * environment (nothing of the runner's OTEL_* or CONTINUITY_*), a real OTLP/HTTP receiver on
 * 127.0.0.1 that keeps the raw bodies and headers, and a port nobody listens on.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { attributesToRecord, decodeTraceRequest } from '../../src/otlp/index.js';
import type { OtlpTraceRequest } from '../../src/otlp/types.js';

export { BIN, ROOT, type Run, runCli } from '../claude-code/harness.js';

/** A span as the tests read it. */
export interface SeenSpan {
  name: string;
  traceId: string;
  spanId: string;
  links: Array<{ traceId: string; spanId: string }>;
  attributes: Record<string, unknown>;
  /** `service.name` of its resource. */
  service: unknown;
  /** The OTLP status code (0 unset, 2 error). */
  statusCode: number;
}

/** The spans of a decoded trace request, in order. */
export function spansOf(request: OtlpTraceRequest): SeenSpan[] {
  const out: SeenSpan[] = [];
  for (const rs of request.resourceSpans) {
    const service = attributesToRecord(rs.resource?.attributes)['service.name'];
    for (const ss of rs.scopeSpans) {
      for (const s of ss.spans) {
        out.push({
          name: s.name,
          traceId: s.traceId,
          spanId: s.spanId,
          links: s.links.map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
          attributes: attributesToRecord(s.attributes) as Record<string, unknown>,
          service,
          statusCode: s.status?.code ?? 0,
        });
      }
    }
  }
  return out;
}

/** One request the receiver accepted. */
export interface Received {
  body: Buffer;
  headers: IncomingHttpHeaders;
  spans: SeenSpan[];
}

/** A running OTLP/HTTP receiver. */
export interface Receiver {
  /** `http://127.0.0.1:port` */
  endpoint: string;
  requests: Received[];
  /** Every span of every accepted request, in arrival order. */
  spans(): SeenSpan[];
  /** Requests that could not be decoded (the receiver answered 400). */
  errors: string[];
  close(): Promise<void>;
}

/** Starts a receiver on a free port of 127.0.0.1; it decodes JSON and protobuf with src/otlp. */
export async function startReceiver(): Promise<Receiver> {
  const requests: Received[] = [];
  const errors: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const type = String(req.headers['content-type'] ?? '');
      const format = type.startsWith('application/x-protobuf') ? 'protobuf' : 'json';
      try {
        if (req.url !== '/v1/traces') throw new Error(`unexpected path ${req.url}`);
        const decoded = decodeTraceRequest(
          format === 'json' ? body.toString('utf8') : new Uint8Array(body),
          format,
        );
        requests.push({ body, headers: req.headers, spans: spansOf(decoded) });
        res.writeHead(200, { 'content-type': type }).end(format === 'json' ? '{}' : Buffer.alloc(0));
      } catch (e) {
        errors.push((e as Error).message);
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    spans: () => requests.flatMap((r) => r.spans),
    errors,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A base URL on 127.0.0.1 where nothing listens (a port taken from the OS, then released). */
export async function deadEndpoint(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/** A temporary directory with a ledger path in it, and an environment that points only there. */
export interface Place {
  dir: string;
  ledger: string;
  /** The recording commands' spool: `<ledger>.spool`. */
  spool: string;
  /** The runner's environment without OTEL_* and CONTINUITY_*, plus CONTINUITY_LEDGER and `extra`. */
  env(extra?: Record<string, string>): NodeJS.ProcessEnv;
  dispose(): void;
}

/** Creates a {@link Place}. */
export function makePlace(prefix = 'export-cli-'): Place {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const ledger = join(dir, 'state', 'ledger.jsonl');
  return {
    dir,
    ledger,
    spool: `${ledger}.spool`,
    env: (extra = {}) => {
      const env: NodeJS.ProcessEnv = {};
      for (const [k, v] of Object.entries(process.env)) {
        if (!k.startsWith('OTEL_') && !k.startsWith('CONTINUITY_')) env[k] = v;
      }
      return { ...env, HOME: join(dir, 'home'), CONTINUITY_LEDGER: ledger, ...extra };
    },
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The spooled requests (`*.json` / `*.pb`) of a spool directory, oldest first; none when it does not exist. */
export function spooled(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => /\.(?:json|pb)$/.test(n))
      .sort();
  } catch {
    return [];
  }
}

/** Every byte of every file under `dir` (ledger, index, spool). */
export function bytesUnder(dir: string): Buffer {
  const out: Buffer[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(readFileSync(p));
    }
  };
  walk(dir);
  return Buffer.concat(out);
}
