/**
 * Test support for `continuity serve`: start the real command as a child process
 * (`node bin/continuity.js serve --config FILE`, free ports, its own state directory), the shared
 * OTLP/HTTP receiver (test/support/otlp-receiver.ts) as its downstream, a Prometheus text
 * scraper, and polling helpers. Every process is stopped by its PID.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { prometheusLabel } from '../../src/otel/semconv.js';
import type { OtlpMetricsRequest, OtlpSpan } from '../../src/otlp/types.js';
import { SERVICE_TEST_APPROVER } from '../support/approver.js';
import {
  type ReceivedSpan,
  type ReceiverMode,
  startOtlpReceiver,
  TRACES_PATH,
} from '../support/otlp-receiver.js';

const REPO = new URL('../..', import.meta.url).pathname;
/** bin/continuity.js of this checkout. */
export const BIN = join(REPO, 'bin', 'continuity.js');

/** A temporary directory for one test (config, state). */
export function tempDir(prefix = 'serve-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A running `continuity serve` child process. */
export interface ServeProcess {
  child: ChildProcess;
  pid: number;
  /** The pid in the address line the service printed (the same process as `pid`). */
  printedPid: number;
  /** `http://127.0.0.1:port` */
  base: string;
  otlp: string;
  metrics: string;
  ready: string;
  /** `host:port` of the OTLP/gRPC listener, when gRPC is on. */
  grpc: string | undefined;
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
  /** The node binary. Default: the one running the tests. */
  node?: string;
  /** Options for node before the script (e.g. V8 flags). */
  nodeArgs?: string[];
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
  // The test approver the six cases' approvals are signed with (../support/approver.ts).
  config.correlation = { approverKeys: [SERVICE_TEST_APPROVER.publicKeyHex], ...(config.correlation ?? {}) };
  const file = join(dir, `serve-${Date.now()}-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, stringify(config));
  const child = spawn(
    options.node ?? process.execPath,
    [...(options.nodeArgs ?? []), BIN, 'serve', '--config', file],
    {
      cwd: REPO,
      env: cleanEnv(options.env),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
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
  const addr = JSON.parse(line) as {
    otlp: string;
    metrics: string;
    ready: string;
    pid: number;
    grpc?: string;
  };
  return {
    child,
    pid: child.pid!,
    printedPid: addr.pid,
    base: addr.otlp.replace(/\/v1\/traces$/, ''),
    otlp: addr.otlp,
    metrics: addr.metrics,
    ready: addr.ready,
    grpc: addr.grpc,
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

export type { ReceivedSpan } from '../support/otlp-receiver.js';

/** What the downstream answers trace requests: 200, a failure status, slowly or a partial success. */
export type DownstreamMode = ReceiverMode;

/** The shared OTLP/HTTP receiver standing in for the next hop (a collector, Jaeger, Tempo). */
export interface Downstream {
  /** `http://127.0.0.1:port` */
  base: string;
  port: number;
  spans: ReceivedSpan[];
  metrics: OtlpMetricsRequest[];
  /** Every request body as it arrived, by path (traces, metrics, logs). */
  raw: Array<{ path: string; contentType: string; body: Buffer }>;
  /** Trace export requests seen (including failed ones). */
  readonly attempts: number;
  readonly contentTypes: Set<string>;
  /** `Content-Encoding` values of trace requests (`identity` when none). */
  readonly contentEncodings: Set<string>;
  setMode(mode: DownstreamMode): void;
  /** Stops listening (connections refused) until {@link Downstream.reopen}. */
  close(): Promise<void>;
  /** Listens again on the same port. */
  reopen(): Promise<void>;
}

/** Starts the downstream receiver on a free port of 127.0.0.1. */
export async function startDownstream(): Promise<Downstream> {
  const r = await startOtlpReceiver();
  const traced = () => r.attempts.filter((a) => a.path === TRACES_PATH);
  return {
    base: r.endpoint,
    port: r.port,
    spans: r.spans,
    metrics: r.metrics,
    raw: r.raw,
    get attempts() {
      return traced().length;
    },
    get contentTypes() {
      return new Set(traced().map((a) => a.contentType));
    },
    get contentEncodings() {
      return new Set(traced().map((a) => a.contentEncoding));
    },
    setMode: (mode) => r.setMode(mode),
    close: () => r.close(),
    reopen: () => r.reopen(),
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

/**
 * Sum of the samples named `name` whose labels include `labels`, keyed by metric attribute
 * (`continuity.state`) or by Prometheus label (`continuity_state`): both name the same label.
 */
export function total(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels).map(([k, v]) => [prometheusLabel(k), v] as const);
  return samples
    .filter((s) => s.name === name && want.every(([k, v]) => s.labels[k] === v))
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

/**
 * An OTLP span (the decoded shape): `span`'s fields over every other field's default, both times
 * 1764500000000000000 unless given.
 */
export function otlpSpan(span: Pick<OtlpSpan, 'name' | 'traceId' | 'spanId'> & Partial<OtlpSpan>): OtlpSpan {
  return {
    traceState: '',
    parentSpanId: '',
    flags: 0,
    kind: 1,
    startTimeUnixNano: '1764500000000000000',
    endTimeUnixNano: '1764500000000000000',
    attributes: [],
    droppedAttributesCount: 0,
    events: [],
    droppedEventsCount: 0,
    links: [],
    droppedLinksCount: 0,
    ...span,
  };
}
