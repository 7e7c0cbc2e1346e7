/**
 * Test support for `continuity serve`: start the real command as a child process
 * (`node bin/continuity.js serve --config FILE`, free ports, its own state directory), a real
 * downstream OTLP/HTTP receiver on 127.0.0.1, a Prometheus text scraper, and polling helpers.
 * Every process is stopped by its PID.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { stringify } from 'yaml';
import {
  attributesToRecord,
  decodeMetricsRequest,
  decodeTraceRequest,
  encodeTraceResponse,
} from '../../src/otlp/index.js';
import type { OtlpMetricsRequest, OtlpSpan } from '../../src/otlp/types.js';

const REPO = new URL('../..', import.meta.url).pathname;
const BIN = join(REPO, 'bin', 'continuity.js');

/** A temporary directory for one test (config, state). */
export function tempDir(prefix = 'serve-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A running `continuity serve` child process. */
export interface ServeProcess {
  child: ChildProcess;
  pid: number;
  /** `http://127.0.0.1:port` */
  base: string;
  otlp: string;
  metrics: string;
  ready: string;
  /** Everything logged on stderr so far. */
  stderr(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL (kill -9), then wait for the exit. */
  kill9(): Promise<void>;
}

/** Options of {@link startServe}. */
export interface StartServeOptions {
  /** The YAML configuration (as an object). `server.port` defaults to 0 here. */
  config?: Record<string, unknown>;
  /** Extra environment. OTEL_* and CONTINUITY_* of the test runner are not inherited. */
  env?: Record<string, string>;
  /** Where the config file goes. Default: a new temp dir. */
  dir?: string;
}

function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('OTEL_') && !k.startsWith('CONTINUITY_')) env[k] = v;
  }
  return { ...env, ...extra };
}

/** Starts `node bin/continuity.js serve --config <file>` and waits for its address line on stdout. */
export async function startServe(options: StartServeOptions = {}): Promise<ServeProcess> {
  const dir = options.dir ?? tempDir();
  const config = structuredClone(options.config ?? {}) as Record<string, Record<string, unknown>>;
  config.server = { port: 0, ...(config.server ?? {}) };
  config.state = { dir: join(dir, 'state'), ...(config.state ?? {}) };
  const file = join(dir, `serve-${Date.now()}-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, stringify(config));
  const child = spawn(process.execPath, [BIN, 'serve', '--config', file], {
    cwd: REPO,
    env: cleanEnv(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => {
    err += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    void exited.then((code) =>
      reject(new Error(`continuity serve exited with ${code} before listening:\n${err}`)),
    );
  });
  const addr = JSON.parse(line) as { otlp: string; metrics: string; ready: string; pid: number };
  return {
    child,
    pid: child.pid!,
    base: addr.otlp.replace(/\/v1\/traces$/, ''),
    otlp: addr.otlp,
    metrics: addr.metrics,
    ready: addr.ready,
    stderr: () => err,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGTERM');
      return exited;
    },
    kill9: async () => {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGKILL');
      await exited;
    },
  };
}

/** A span the downstream received, with its attributes as a record and its resource's. */
export interface ReceivedSpan {
  span: OtlpSpan;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
}

/** What the downstream answers: 200, or a failure status (with Retry-After seconds). */
export type DownstreamMode =
  | { kind: 'ok' }
  | { kind: 'fail'; status: number; retryAfter?: number }
  /** Accept, but only after `ms` (a slow downstream). */
  | { kind: 'slow'; ms: number }
  /** Answer 200 with an OTLP partial success refusing `rejected` spans of each request. */
  | { kind: 'partial'; rejected: number };

/** A real OTLP/HTTP receiver standing in for the next hop (a collector, Jaeger, Tempo). */
export interface Downstream {
  /** `http://127.0.0.1:port` */
  base: string;
  port: number;
  spans: ReceivedSpan[];
  metrics: OtlpMetricsRequest[];
  /** Trace export requests seen (including failed ones). */
  attempts: number;
  contentTypes: Set<string>;
  /** `Content-Encoding` values of trace requests (`identity` when none). */
  contentEncodings: Set<string>;
  setMode(mode: DownstreamMode): void;
  /** Stops listening (connections refused) until {@link Downstream.reopen}. */
  close(): Promise<void>;
  /** Listens again on the same port. */
  reopen(): Promise<void>;
}

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Starts the downstream receiver on a free port. */
export async function startDownstream(): Promise<Downstream> {
  let mode: DownstreamMode = { kind: 'ok' };
  const spans: ReceivedSpan[] = [];
  const metrics: OtlpMetricsRequest[] = [];
  const contentTypes = new Set<string>();
  const contentEncodings = new Set<string>();
  let attempts = 0;
  let server: Server;
  const handler = async (req: IncomingMessage, res: import('node:http').ServerResponse) => {
    let body = await readAll(req);
    if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
    const format = req.headers['content-type']?.startsWith('application/json') ? 'json' : 'protobuf';
    if (req.url === '/v1/metrics') {
      metrics.push(decodeMetricsRequest(body, format));
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' });
      res.end(format === 'json' ? '{}' : '');
      return;
    }
    attempts++;
    contentTypes.add(req.headers['content-type'] ?? '');
    contentEncodings.add(req.headers['content-encoding'] ?? 'identity');
    if (mode.kind === 'fail') {
      const headers: Record<string, string> = {};
      if (mode.retryAfter !== undefined) headers['retry-after'] = String(mode.retryAfter);
      res.writeHead(mode.status, headers);
      res.end();
      return;
    }
    if (mode.kind === 'slow') await new Promise((r) => setTimeout(r, (mode as { ms: number }).ms));
    if (mode.kind === 'partial') {
      const answer = encodeTraceResponse(
        { partialSuccess: { rejectedSpans: String(mode.rejected), errorMessage: 'refused by the test' } },
        format,
      );
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/x-protobuf' });
      res.end(answer);
      return;
    }
    const decoded = decodeTraceRequest(body, format);
    for (const rs of decoded.resourceSpans) {
      const resource = attributesToRecord(rs.resource?.attributes);
      for (const ss of rs.scopeSpans) {
        for (const span of ss.spans)
          spans.push({ span, attributes: attributesToRecord(span.attributes), resource });
      }
    }
    res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/x-protobuf' });
    res.end(format === 'json' ? '{}' : '');
  };
  const make = () => {
    const s = createServer((req, res) => {
      handler(req, res).catch(() => {
        res.writeHead(400);
        res.end();
      });
    });
    s.keepAliveTimeout = 1000;
    return s;
  };
  server = make();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    spans,
    metrics,
    get attempts() {
      return attempts;
    },
    contentTypes,
    contentEncodings,
    setMode: (m) => {
      mode = m;
    },
    close: async () => {
      await new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      });
    },
    reopen: async () => {
      server = make();
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    },
  };
}

/** One sample of a Prometheus text exposition. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format (what `/metrics` serves). */
export function parsePrometheus(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** GETs a URL and returns status and body. */
export function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

/** Scrapes `/metrics`. */
export async function scrape(url: string): Promise<Sample[]> {
  const r = await httpGet(url);
  if (r.status !== 200) throw new Error(`scrape ${url}: ${r.status}`);
  return parsePrometheus(r.body);
}

/** Sum of the samples named `name` whose labels include `labels`. */
export function total(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes (then throws with `what`). */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const start = Date.now();
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() - start > timeoutMs) {
      throw new Error(
        `timed out waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A raw HTTP POST (for malformed requests): status, headers and body of the answer. */
export function post(
  url: string,
  body: Buffer | string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: import('node:http').IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { 'content-length': String(Buffer.byteLength(body)), ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
