/**
 * A restart mid-run, on the sidecar recipe (collector-config/otelcol-sidecar.yaml as shipped, only
 * its addresses set): load → `continuity serve` → the Collector's otlp/enriched → the traces
 * backend (an OTLP/gRPC receiver here). The service is restarted (SIGTERM, then started again on
 * the same port and state directory) while requests keep coming, then the Collector is. What the
 * service acknowledged (200) must all reach the backend; what was refused while it was down is
 * counted, not lost silently: the sender knows (a refused connection, which an OTLP exporter
 * retries). docs/stack.md ("Restarts") quotes the counts this prints.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { encodeTraceRequest } from '../src/otlp/index.js';
import { type GrpcReceiver, startGrpcReceiver } from '../test/support/grpc-receiver.js';
import { type OtlpReceiver, startOtlpReceiver } from '../test/support/otlp-receiver.js';
import {
  CONFIG_DIR,
  freePort,
  type Proc,
  type Serve,
  startCollector,
  startServe,
  waitFor,
} from './support/stack.js';

const stack = inject('stack');
const dir = mkdtempSync(join(tmpdir(), 'continuity-restart-'));
const SPANS_PER_REQUEST = 50;

let backend: GrpcReceiver;
let logs: OtlpReceiver;
let collector: Proc;
let serve: Serve;
let servePort: number;
let serveGrpcPort: number;
const collectorEnv: Record<string, string> = {};
let metricsUrl: string;

function serveConfig(): Record<string, unknown> {
  return {
    server: { host: '127.0.0.1', port: servePort, grpcPort: serveGrpcPort },
    downstream: { endpoint: `http://${collectorEnv.OTELCOL_ENRICHED_HTTP_ENDPOINT}/v1/traces` },
    state: { dir: join(dir, 'serve-state') },
    ui: { ledger: false },
  };
}

async function startTheCollector(): Promise<Proc> {
  return startCollector(
    'otelcol-sidecar',
    dir,
    stack.collector,
    join(CONFIG_DIR, 'otelcol-sidecar.yaml'),
    collectorEnv,
    metricsUrl,
  );
}

beforeAll(async () => {
  backend = await startGrpcReceiver();
  logs = await startOtlpReceiver();
  const [enriched, prom] = [await freePort(), await freePort()];
  Object.assign(collectorEnv, {
    OTELCOL_ENRICHED_HTTP_ENDPOINT: `127.0.0.1:${enriched}`,
    OTELCOL_TRACES_BACKEND_ENDPOINT: backend.endpoint.replace(/^http:\/\//, ''),
    OTELCOL_LOGS_BACKEND_ENDPOINT: logs.endpoint,
    OTELCOL_PROMETHEUS_ENDPOINT: `127.0.0.1:${prom}`,
  });
  metricsUrl = `http://127.0.0.1:${prom}/metrics`;
  collector = await startTheCollector();
  [servePort, serveGrpcPort] = [await freePort(), await freePort()];
  serve = await startServe('serve', dir, serveConfig());
});

afterAll(async () => {
  await serve?.proc.stop();
  await collector?.stop();
  await backend?.close();
  await logs?.close();
  rmSync(dir, { recursive: true, force: true });
});

let seq = 0;
/** One request of ordinary spans with fresh ids; returns its body and span ids. */
function request(): { body: Buffer; ids: string[] } {
  const ids: string[] = [];
  const spans = Array.from({ length: SPANS_PER_REQUEST }, () => {
    const n = ++seq;
    const spanId = n.toString(16).padStart(16, '0');
    ids.push(spanId);
    const t = BigInt(Date.now()) * 1_000_000n;
    return {
      traceId: n.toString(16).padStart(32, 'a'),
      spanId,
      name: 'agent.step',
      kind: 1,
      startTimeUnixNano: String(t),
      endTimeUnixNano: String(t + 1000n),
      attributes: [],
    };
  });
  const body = encodeTraceRequest(
    {
      resourceSpans: [
        {
          resource: { attributes: [] },
          scopeSpans: [{ scope: { name: 'restart-test' }, spans: spans as never }],
        },
      ],
    },
    'protobuf',
  );
  return { body: Buffer.from(body), ids };
}

/**
 * Sends requests one after another for `ms`, each with a 5 s timeout; records which were
 * acknowledged (200) and which were refused or failed.
 */
async function load(ms: number, acked: string[], refused: string[]): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const { body, ids } = request();
    const ok = await fetch(`http://127.0.0.1:${servePort}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
      body,
      signal: AbortSignal.timeout(5_000),
    }).then(
      (r) => r.status === 200,
      () => false,
    );
    (ok ? acked : refused).push(...ids);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('a restart mid-run (otelcol-sidecar.yaml as shipped)', () => {
  it('loses nothing continuity serve acknowledged when the service restarts', async () => {
    const acked: string[] = [];
    const refused: string[] = [];
    const running = load(12_000, acked, refused);
    await new Promise((r) => setTimeout(r, 4_000));
    await serve.proc.stop();
    serve = await startServe('serve', dir, serveConfig());
    await running;
    await waitFor('every acknowledged span at the backend', async () => {
      const got = new Set(backend.spans.map((s) => s.spanId));
      return acked.every((id) => got.has(id)) ? true : undefined;
    }).catch(() => undefined);
    const got = new Set(backend.spans.map((s) => s.spanId));
    const lost = acked.filter((id) => !got.has(id));
    process.stderr.write(
      `restart of continuity serve: ${acked.length} spans acknowledged, ${lost.length} of them lost; ${refused.length} refused while it was down (the sender's to retry)\n`,
    );
    expect(acked.length).toBeGreaterThan(0);
    expect(refused.length, 'the restart happened while requests were coming').toBeGreaterThan(0);
    expect(lost).toEqual([]);
  });

  it('loses nothing continuity serve acknowledged when the Collector restarts (it retries)', async () => {
    const acked: string[] = [];
    const refused: string[] = [];
    const running = load(12_000, acked, refused);
    await new Promise((r) => setTimeout(r, 4_000));
    await collector.stop();
    await new Promise((r) => setTimeout(r, 2_000));
    collector = await startTheCollector();
    await running;
    await waitFor(
      'every acknowledged span at the backend',
      async () => {
        const got = new Set(backend.spans.map((s) => s.spanId));
        return acked.every((id) => got.has(id)) ? true : undefined;
      },
      90_000,
    ).catch(() => undefined);
    const got = new Set(backend.spans.map((s) => s.spanId));
    const lost = acked.filter((id) => !got.has(id));
    process.stderr.write(
      `restart of the Collector: ${acked.length} spans acknowledged by continuity serve, ${lost.length} of them lost; ${refused.length} refused\n`,
    );
    expect(acked.length).toBeGreaterThan(0);
    expect(lost).toEqual([]);
  });
});
