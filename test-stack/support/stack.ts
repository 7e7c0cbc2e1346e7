/**
 * The observability stack of `npm run test:stack`, started from the shipped files on 127.0.0.1:
 * the Collector (built by scripts/stack/toolchain.js) on collector-config/otelcol-*.yaml with only
 * the `${env:...}` address placeholders set, Jaeger v2 (memory storage), three `continuity serve`
 * instances, Prometheus on collector-config/prometheus/prometheus.yml (targets and rule file
 * path substituted) with continuity.rules.yml, Alertmanager on alertmanager.yml (webhook
 * addresses substituted), a webhook receiver and an OTLP logs sink. Every process is stopped by
 * its PID.
 *
 * The one stand-in: the contrib `load_balancing` exporter is not served by the Go module proxy
 * here (v0.165.1 and v0.165.0 refused), so the gateway's `load_balancing` exporter is replaced by
 * an `otlp_grpc` exporter to {@link startLoadBalancer}, the exporter's trace-id split and hash
 * ring in Node (test/support/load-balancing.ts), which forwards over OTLP/gRPC to the instances
 * exactly as the exporter would. Nothing else of the gateway file changes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  credentials,
  Server as GrpcServer,
  makeGenericClientConstructor,
  ServerCredentials,
} from '@grpc/grpc-js';
import { parse, stringify } from 'yaml';
import { decodeTraceRequest, encodeTraceRequest } from '../../src/otlp/index.js';
import { exportService } from '../../src/service/grpc.js';
import { HashRing, partitionByTraceId } from '../../test/support/load-balancing.js';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const CONFIG_DIR = join(REPO, 'collector-config');

/** A free port on 127.0.0.1 (bound and released; the caller binds it next). */
export async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a value (not undefined) or `ms` pass. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const until = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > until)
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(250);
  }
}

/** GET a URL's body; undefined unless the status is 200. */
export async function getOk(url: string): Promise<string | undefined> {
  const r = await fetch(url);
  return r.ok ? await r.text() : undefined;
}

/** A child process of the stack, its output in a log file of the run. */
export interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  readonly log: string;
  /** stdout so far (the serve start-up line). */
  stdout(): string;
  /** SIGTERM, then SIGKILL after `ms`; resolves when it exited. */
  stop(ms?: number): Promise<void>;
}

/** Starts `command`, stdout and stderr appended to `<dir>/<name>.log`. */
export function startProc(
  name: string,
  dir: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Proc {
  const log = join(dir, `${name}.log`);
  const file = createWriteStream(log, { flags: 'a' });
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d;
    file.write(d);
  });
  child.stderr!.on('data', (d: Buffer) => file.write(d));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    name,
    child,
    log,
    stdout: () => out,
    async stop(ms = 10_000) {
      if (child.exitCode === null && child.signalCode === null && child.pid) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), ms);
        await exited;
        clearTimeout(t);
      }
      file.end();
    },
  };
}

/** Runs a command to completion with `input` on its stdin. */
export function runWithInput(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  input: string,
  timeoutMs = 5 * 60_000,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(t);
      resolve({ status, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

/** The last lines of a process's log, for a failure message. */
export function tail(proc: Proc, lines = 15): string {
  try {
    return readFileSync(proc.log, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

// ── The Collector ───────────────────────────────────────────────────────────────────────────

/**
 * The gateway file as shipped, with only `load_balancing` replaced by an `otlp_grpc` exporter to
 * the stand-in (see the file comment). Written to `dir`; returns its path.
 */
export function gatewayWithStandIn(dir: string, standIn: string): string {
  const doc = parse(readFileSync(join(CONFIG_DIR, 'otelcol-gateway.yaml'), 'utf8')) as {
    exporters: Record<string, unknown>;
    service: { pipelines: Record<string, { exporters: string[] }> };
  };
  if (!('load_balancing' in doc.exporters))
    throw new Error('otelcol-gateway.yaml has no load_balancing exporter');
  delete doc.exporters.load_balancing;
  doc.exporters['otlp_grpc/load_balancing_stand_in'] = { endpoint: standIn, tls: { insecure: true } };
  for (const p of Object.values(doc.service.pipelines)) {
    p.exporters = p.exporters.map((e) => (e === 'load_balancing' ? 'otlp_grpc/load_balancing_stand_in' : e));
  }
  const file = join(dir, 'otelcol-gateway.stand-in.yaml');
  writeFileSync(file, stringify(doc));
  return file;
}

/** The Collector on `config`, its placeholders from `env`; ready when its Prometheus exporter answers. */
export async function startCollector(
  name: string,
  dir: string,
  binary: string,
  config: string,
  env: Record<string, string>,
  metricsUrl: string,
): Promise<Proc> {
  const proc = startProc(name, dir, binary, ['--config', config], {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...env,
  });
  await waitFor(`${name} (${proc.log})`, async () => {
    if (proc.child.exitCode !== null) throw new Error(`${name} exited ${proc.child.exitCode}: ${tail(proc)}`);
    return (await getOk(metricsUrl).catch(() => undefined)) === undefined ? undefined : true;
  });
  return proc;
}

// ── Jaeger ──────────────────────────────────────────────────────────────────────────────────

/** Jaeger v2: memory storage, OTLP/gRPC in, the query API (and UI) on `queryPort`. */
export async function startJaeger(
  dir: string,
  binary: string,
): Promise<{ proc: Proc; otlpGrpc: string; query: string }> {
  const [grpc, http, query, queryGrpc, health] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const config = {
    service: {
      extensions: ['jaeger_storage', 'jaeger_query', 'healthcheckv2'],
      pipelines: {
        traces: { receivers: ['otlp'], processors: ['batch'], exporters: ['jaeger_storage_exporter'] },
      },
      telemetry: { metrics: { level: 'none' }, logs: { level: 'info' } },
    },
    extensions: {
      jaeger_query: {
        storage: { traces: 'memstore' },
        http: { endpoint: `127.0.0.1:${query}` },
        grpc: { endpoint: `127.0.0.1:${queryGrpc}` },
      },
      jaeger_storage: { backends: { memstore: { memory: { max_traces: 100_000 } } } },
      healthcheckv2: { use_v2: true, http: { endpoint: `127.0.0.1:${health}` } },
    },
    receivers: {
      otlp: {
        protocols: { grpc: { endpoint: `127.0.0.1:${grpc}` }, http: { endpoint: `127.0.0.1:${http}` } },
      },
    },
    processors: { batch: {} },
    exporters: { jaeger_storage_exporter: { trace_storage: 'memstore' } },
  };
  const file = join(dir, 'jaeger.yaml');
  writeFileSync(file, stringify(config));
  const proc = startProc('jaeger', dir, binary, ['--config', file], {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
  });
  const queryUrl = `http://127.0.0.1:${query}`;
  await waitFor(`jaeger (${proc.log})`, async () => {
    if (proc.child.exitCode !== null) throw new Error(`jaeger exited ${proc.child.exitCode}: ${tail(proc)}`);
    return (await getOk(`${queryUrl}/api/services`).catch(() => undefined)) === undefined ? undefined : true;
  });
  return { proc, otlpGrpc: `127.0.0.1:${grpc}`, query: queryUrl };
}

// ── continuity serve ────────────────────────────────────────────────────────────────────────

/** One `continuity serve` instance and the addresses of its start-up line. */
export interface Serve {
  proc: Proc;
  otlp: string;
  grpc: string;
  metrics: string;
  ui: string;
  pid: number;
  config: string;
}

/** `continuity serve --config <dir>/<name>.json` (written from `config`); waits for its start-up line. */
export async function startServe(name: string, dir: string, config: Record<string, unknown>): Promise<Serve> {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(config));
  const proc = startProc(
    name,
    dir,
    process.execPath,
    [join(REPO, 'bin', 'continuity.js'), 'serve', '--config', file],
    {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
    },
  );
  const line = await waitFor(`${name} start-up line (${proc.log})`, async () => {
    if (proc.child.exitCode !== null) throw new Error(`${name} exited ${proc.child.exitCode}: ${tail(proc)}`);
    const nl = proc.stdout().indexOf('\n');
    return nl < 0 ? undefined : proc.stdout().slice(0, nl);
  });
  const a = JSON.parse(line) as { otlp: string; grpc: string; metrics: string; ui: string; pid: number };
  return { proc, ...a, config: file };
}

// ── The load-balancing exporter's stand-in ──────────────────────────────────────────────────

/** What the stand-in did: trace requests per endpoint. */
export interface LoadBalancer {
  endpoint: string;
  sent: Map<string, number>;
  close(): Promise<void>;
}

/**
 * An OTLP/gRPC trace receiver that splits each request by trace id and sends each trace to the
 * endpoint the exporter's hash ring names (`endpoints` as the static resolver lists them), over
 * OTLP/gRPC; answers once every part was accepted (the exporter's behaviour without its queue).
 */
export async function startLoadBalancer(endpoints: string[]): Promise<LoadBalancer> {
  const ring = new HashRing(endpoints);
  const Client = makeGenericClientConstructor(exportService('traces') as never, 'TraceService');
  const clients = new Map(endpoints.map((e) => [e, new Client(e, credentials.createInsecure())]));
  const sent = new Map<string, number>();
  const server = new GrpcServer();
  server.addService(exportService('traces'), {
    Export: (call: { request: Buffer }, callback: (err: Error | null, res?: Buffer) => void) => {
      const parts = partitionByTraceId(decodeTraceRequest(call.request, 'protobuf'), ring);
      const sends: Promise<void>[] = [];
      for (const [endpoint, requests] of parts) {
        const client = clients.get(endpoint)!;
        for (const request of requests) {
          sent.set(endpoint, (sent.get(endpoint) ?? 0) + 1);
          const body = Buffer.from(encodeTraceRequest(request, 'protobuf'));
          sends.push(
            new Promise((resolve, reject) =>
              (client as unknown as { Export: (b: Buffer, cb: (e: Error | null) => void) => void }).Export(
                body,
                (e) => (e ? reject(e) : resolve()),
              ),
            ),
          );
        }
      }
      Promise.all(sends).then(
        () => callback(null, Buffer.alloc(0)),
        (e: Error) => callback(e),
      );
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  return {
    endpoint: `127.0.0.1:${port}`,
    sent,
    close: async () => {
      for (const c of clients.values()) c.close();
      await new Promise<void>((r) => server.tryShutdown(() => r()));
    },
  };
}

// ── Prometheus and Alertmanager ────────────────────────────────────────────────────────────

/**
 * prometheus.yml as shipped with its addresses substituted: the scrape targets, the
 * Alertmanager, and the rule file's path (continuity.rules.yml as shipped).
 */
export function prometheusConfig(
  dir: string,
  targets: { serve: string[]; collector: string; alertmanager: string },
): string {
  const doc = parse(readFileSync(join(CONFIG_DIR, 'prometheus', 'prometheus.yml'), 'utf8')) as {
    rule_files: string[];
    alerting: { alertmanagers: { static_configs: { targets: string[] }[] }[] };
    scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
  };
  doc.rule_files = doc.rule_files.map((f) => join(CONFIG_DIR, 'prometheus', f));
  doc.alerting.alertmanagers[0]!.static_configs[0]!.targets = [targets.alertmanager];
  for (const job of doc.scrape_configs) {
    job.static_configs[0]!.targets =
      job.job_name === 'continuity-serve' ? targets.serve : [targets.collector];
  }
  const file = join(dir, 'prometheus.yml');
  writeFileSync(file, stringify(doc));
  return file;
}

/** Prometheus on `config`, storage in `dir`. */
export async function startPrometheus(dir: string, config: string): Promise<{ proc: Proc; url: string }> {
  const port = await freePort();
  mkdirSync(join(dir, 'prometheus-data'), { recursive: true });
  const proc = startProc(
    'prometheus',
    dir,
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'prometheus-data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { PATH: process.env.PATH, HOME: process.env.HOME },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`prometheus (${proc.log})`, async () => {
    if (proc.child.exitCode !== null) throw new Error(`prometheus exited: ${tail(proc)}`);
    return (await getOk(`${url}/-/ready`).catch(() => undefined)) === undefined ? undefined : true;
  });
  return { proc, url };
}

/** alertmanager.yml as shipped, its webhook base address pointed at `webhook`. */
export function alertmanagerConfig(dir: string, webhook: string): string {
  const text = readFileSync(join(CONFIG_DIR, 'prometheus', 'alertmanager.yml'), 'utf8');
  const shipped = 'http://127.0.0.1:9095';
  if (!text.includes(shipped)) throw new Error(`alertmanager.yml no longer names ${shipped}`);
  const file = join(dir, 'alertmanager.yml');
  writeFileSync(file, text.replaceAll(shipped, webhook));
  return file;
}

/** Alertmanager on `config`, clustering off. */
export async function startAlertmanager(dir: string, config: string): Promise<{ proc: Proc; url: string }> {
  const port = await freePort();
  mkdirSync(join(dir, 'alertmanager-data'), { recursive: true });
  const proc = startProc(
    'alertmanager',
    dir,
    'prometheus-alertmanager',
    [
      `--config.file=${config}`,
      `--storage.path=${join(dir, 'alertmanager-data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--cluster.listen-address=',
    ],
    { PATH: process.env.PATH, HOME: process.env.HOME },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`alertmanager (${proc.log})`, async () => {
    if (proc.child.exitCode !== null) throw new Error(`alertmanager exited: ${tail(proc)}`);
    return (await getOk(`${url}/-/ready`).catch(() => undefined)) === undefined ? undefined : true;
  });
  return { proc, url };
}

/** One notification Alertmanager sent to the webhook. */
export interface Notification {
  path: string;
  body: {
    status: string;
    groupLabels: Record<string, string>;
    alerts: { status: string; labels: Record<string, string>; annotations: Record<string, string> }[];
  };
}

/** The webhook receiver: records every notification. */
export async function startWebhook(): Promise<{
  url: string;
  received: Notification[];
  close(): Promise<void>;
}> {
  const received: Notification[] = [];
  const server: Server = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: JSON.parse(body) as Notification['body'] });
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    received,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

// ── Reading the peers ───────────────────────────────────────────────────────────────────────

/** A PromQL instant query's result. */
export async function promQuery(
  url: string,
  query: string,
): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const r = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(query)}`);
  const body = (await r.json()) as {
    status: string;
    error?: string;
    data: { result: { metric: Record<string, string>; value: [number, string] }[] };
  };
  if (body.status !== 'success') throw new Error(`${query}: ${body.error}`);
  return body.data.result;
}

/** A span as Jaeger's query API returns it. */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: 'CHILD_OF' | 'FOLLOWS_FROM'; traceID: string; spanID: string }[];
  tags: { key: string; type: string; value: unknown }[];
  processID: string;
}

/** One trace from Jaeger's HTTP API; undefined when Jaeger does not have it. */
export async function jaegerTrace(query: string, traceId: string): Promise<JaegerSpan[] | undefined> {
  const r = await fetch(`${query}/api/traces/${traceId}`);
  if (r.status === 404) return undefined;
  const body = (await r.json()) as { data?: { spans: JaegerSpan[] }[] };
  return body.data?.[0]?.spans;
}

/** Every trace of a service with an operation (Jaeger search, last hour). */
export async function jaegerSearch(
  query: string,
  service: string,
  operation?: string,
  limit = 2000,
): Promise<JaegerSpan[][]> {
  const params = new URLSearchParams({ service, limit: String(limit), lookback: '1h' });
  if (operation) params.set('operation', operation);
  const r = await fetch(`${query}/api/traces?${params}`);
  const body = (await r.json()) as { data?: { spans: JaegerSpan[] }[] };
  return (body.data ?? []).map((t) => t.spans);
}

/** A span tag's value. */
export function tag(span: JaegerSpan, key: string): unknown {
  return span.tags.find((t) => t.key === key)?.value;
}
