/**
 * `continuity serve` refuses a downstream that is its own listener (issue 27): exit 2 and one line
 * naming the variable, instead of looping every span it forwards back to itself.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { encodeTraceRequest } from '../../src/otlp/index.js';
import { selfForwardProblem } from '../../src/service/self-forward.js';
import { BIN, otlpSpan, post, tempDir } from './harness.js';

async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

const NO_ORIGINS = new Map<string, string>();

describe('selfForwardProblem', () => {
  const server = (host: string) => ({ host, port: 4318, grpcPort: 4317 });
  it.each([
    ['127.0.0.1', 'http://127.0.0.1:4318/v1/traces'],
    ['127.0.0.1', 'http://localhost:4318/v1/traces'],
    ['127.0.0.1', 'http://LOCALHOST:4318/v1/traces'],
    ['127.0.0.1', 'http://[::1]:4318/v1/traces'],
    ['127.0.0.1', 'http://0.0.0.0:4318/v1/traces'],
    ['127.0.0.1', 'http://127.0.0.2:4317'],
    ['127.0.0.1', 'http://[::ffff:127.0.0.1]:4318/v1/traces'],
    ['0.0.0.0', 'http://localhost:4317'],
    ['0.0.0.0', 'http://10.1.2.3:4318/v1/traces'],
    ['::', 'http://[::]:4318/v1/traces'],
    ['localhost', 'http://127.0.0.1:4318/v1/traces'],
  ])('listening on %s, refuses %s', (host, endpoint) => {
    const p = selfForwardProblem({ server: server(host), downstream: { endpoint } }, NO_ORIGINS, [
      '10.1.2.3',
    ]);
    expect(p?.path).toBe('downstream.endpoint');
    expect(p?.message).toMatch(/own listener/);
  });

  it.each([
    ['127.0.0.1', 'http://127.0.0.1:4319/v1/traces'],
    ['127.0.0.1', 'http://collector:4318/v1/traces'],
    ['127.0.0.1', 'http://10.1.2.3:4318/v1/traces'],
    ['10.1.2.3', 'http://127.0.0.1:4318/v1/traces'],
    ['0.0.0.0', 'http://10.9.9.9:4318/v1/traces'],
  ])('listening on %s, accepts %s', (host, endpoint) => {
    expect(
      selfForwardProblem({ server: server(host), downstream: { endpoint } }, NO_ORIGINS, ['10.1.2.3']),
    ).toBeUndefined();
  });

  it('names the variable that set the endpoint, and checks the metrics and logs endpoints too', () => {
    const p = selfForwardProblem(
      { server: server('127.0.0.1'), downstream: { logsEndpoint: 'http://localhost:4318/v1/logs' } },
      new Map([['downstream.logsEndpoint', 'SOME_VAR']]),
      [],
    );
    expect(p?.path).toBe('downstream.logsEndpoint (from SOME_VAR)');
  });

  it('never compares a port picked at start (0), nor gRPC when it is off', () => {
    expect(
      selfForwardProblem(
        {
          server: { host: '127.0.0.1', port: 0, grpcPort: false },
          downstream: { endpoint: 'http://127.0.0.1:0' },
        },
        NO_ORIGINS,
        [],
      ),
    ).toBeUndefined();
    expect(
      selfForwardProblem(
        {
          server: { host: '127.0.0.1', port: 4318, grpcPort: false },
          downstream: { endpoint: 'http://127.0.0.1:4317' },
        },
        NO_ORIGINS,
        [],
      ),
    ).toBeUndefined();
  });
});

describe('continuity serve with OTEL_EXPORTER_OTLP_ENDPOINT at its own port', () => {
  it.each([
    ['http/protobuf', (http: number) => `http://localhost:${http}`],
    ['grpc', (_http: number, grpc: number) => `http://[::1]:${grpc}`],
  ] as const)(
    'exits 2 with one line naming the variable (%s); 11 spans never become more',
    async (protocol, endpoint) => {
      const dir = tempDir('serve-self-');
      const http = await freePort();
      const grpc = await freePort();
      const file = join(dir, 'serve.yaml');
      writeFileSync(
        file,
        stringify({
          server: { port: http, grpcPort: grpc },
          state: { dir: join(dir, 'state') },
          ui: { enabled: false },
        }),
      );
      const env: NodeJS.ProcessEnv = {};
      for (const [k, v] of Object.entries(process.env))
        if (!k.startsWith('OTEL_') && !k.startsWith('CONTINUITY_')) env[k] = v;
      env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint(http, grpc);
      env.OTEL_EXPORTER_OTLP_PROTOCOL = protocol;
      const child = spawn(process.execPath, [BIN, 'serve', '--config', file], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => {
        err += d;
      });
      // Without the check it starts and prints its address line: then send 11 spans, let it loop a
      // moment, read what it received, and stop it.
      const started = new Promise<'started'>((resolve) =>
        child.stdout.on('data', () => out.includes('\n') && resolve('started')),
      );
      const exited = once(child, 'exit').then(([code]) => code as number | null);
      const first = await Promise.race([started, exited]);
      if (first === 'started') {
        const spans = Array.from({ length: 11 }, (_, i) =>
          otlpSpan({
            name: 'work',
            traceId: 'ab'.repeat(16),
            spanId: (i + 1).toString(16).padStart(16, '0'),
          }),
        );
        const body = Buffer.from(
          encodeTraceRequest(
            {
              resourceSpans: [
                {
                  resource: { attributes: [], droppedAttributesCount: 0 },
                  scopeSpans: [
                    {
                      scope: { name: 't', version: '', attributes: [], droppedAttributesCount: 0 },
                      spans,
                      schemaUrl: '',
                    },
                  ],
                  schemaUrl: '',
                },
              ],
            },
            'protobuf',
          ),
        );
        await post(`http://127.0.0.1:${http}/v1/traces`, body, { 'content-type': 'application/x-protobuf' });
        await new Promise((r) => setTimeout(r, 1500));
        const metrics = await fetch(`http://127.0.0.1:${http}/metrics`).then((r) => r.text());
        child.kill('SIGKILL');
        const received = /continuity_service_spans_received_total\S* (\d+)/.exec(metrics)?.[1];
        expect.fail(
          `serve started with its downstream at its own listener; it received ${received} spans from 11`,
        );
      }
      expect(await exited).toBe(2);
      const lines = err.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/OTEL_EXPORTER_OTLP_ENDPOINT/);
      expect(lines[0]).toMatch(/own listener/);
      expect(out).toBe('');
    },
    30_000,
  );
});
