/**
 * DNS rebinding: a web page under a name its author controls, re-pointed at 127.0.0.1, makes the
 * browser send `Host: <that name>`. Every endpoint of `continuity serve` refuses such a `Host`, not
 * only the page (issue 26).
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeTraceRequest } from '../../src/otlp/index.js';
import { loadServiceConfig } from '../../src/service/config.js';
import { HostAllowList } from '../../src/service/host-check.js';
import { type Downstream, otlpSpan, type ServeProcess, startDownstream, startServe } from './harness.js';

function send(
  url: string,
  method: 'GET' | 'POST',
  host: string,
  body?: Buffer,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        headers: {
          host,
          ...(body && { 'content-type': 'application/x-protobuf', 'content-length': String(body.length) }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function traces(spanId: string): Buffer {
  return Buffer.from(
    encodeTraceRequest(
      {
        resourceSpans: [
          {
            resource: { attributes: [], droppedAttributesCount: 0 },
            scopeSpans: [
              {
                scope: { name: 't', version: '', attributes: [], droppedAttributesCount: 0 },
                spans: [otlpSpan({ name: 'work', traceId: 'cd'.repeat(16), spanId })],
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
}

describe('HostAllowList', () => {
  const list = new HostAllowList(['continuity-serve']);
  it.each([
    [undefined, true],
    ['localhost', true],
    ['localhost:4318', true],
    ['127.0.0.1:4318', true],
    ['[::1]:4318', true],
    ['10.0.0.7:4318', true],
    ['[fd00::7]:4318', true],
    ['continuity-serve:4318', true],
    ['CONTINUITY-SERVE', true],
    ['attacker.example', false],
    ['attacker.example:4318', false],
    ['localhost.attacker.example', false],
    ['127.0.0.1.nip.io', false],
    ['', false],
  ])('Host %s → %s', (host, allowed) => {
    expect(list.allows(host)).toBe(allowed);
  });
});

describe('server.allowedHosts from the environment', () => {
  it('reads CONTINUITY_SERVE_ALLOWED_HOSTS as a comma-separated list, and refuses a name with a port', () => {
    const config = loadServiceConfig({
      env: { CONTINUITY_SERVE_ALLOWED_HOSTS: 'serve-a, serve-b.internal,' },
    });
    expect(config.server.allowedHosts).toEqual(['serve-a', 'serve-b.internal']);
    expect(() => loadServiceConfig({ env: { CONTINUITY_SERVE_ALLOWED_HOSTS: 'serve-a:4318' } })).toThrow(
      /server\.allowedHosts\[0\] \(from CONTINUITY_SERVE_ALLOWED_HOSTS\): expected a host name without port/,
    );
  });
});

describe('continuity serve checks Host on every endpoint', () => {
  let downstream: Downstream;
  let serve: ServeProcess;
  let split: ServeProcess;
  beforeAll(async () => {
    downstream = await startDownstream();
    serve = await startServe({
      config: {
        downstream: { endpoint: `${downstream.base}/v1/traces` },
        server: { allowedHosts: ['continuity-serve'], grpcPort: false },
        ui: { enabled: false },
      },
    });
    split = await startServe({
      config: { metrics: { port: 0 }, server: { grpcPort: false }, ui: { enabled: false } },
    });
  }, 30_000);
  afterAll(async () => {
    await serve?.stop();
    await split?.stop();
    await downstream?.close();
  });

  it('refuses POST /v1/traces with a rebound Host: nothing reaches the downstream', async () => {
    const port = new URL(serve.base).port;
    const refused = await send(serve.otlp, 'POST', `attacker.example:${port}`, traces('0000000000000001'));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatch(/server\.allowedHosts/);
    const accepted = await send(serve.otlp, 'POST', `127.0.0.1:${port}`, traces('0000000000000002'));
    expect(accepted.status).toBe(200);
    const named = await send(serve.otlp, 'POST', `continuity-serve:${port}`, traces('0000000000000003'));
    expect(named.status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    const ids = downstream.spans.map((s) => s.spanId);
    expect(ids).toContain('0000000000000002');
    expect(ids).toContain('0000000000000003');
    expect(ids).not.toContain('0000000000000001');
  });

  it('refuses GET /metrics, /healthz and /readyz with a rebound Host', async () => {
    for (const path of ['/metrics', '/healthz', '/readyz']) {
      expect((await send(`${serve.base}${path}`, 'GET', 'attacker.example', undefined)).status, path).toBe(
        403,
      );
      expect((await send(`${serve.base}${path}`, 'GET', 'localhost', undefined)).status, path).toBe(200);
    }
  });

  it('refuses a rebound Host on the separate metrics listener too', async () => {
    const metrics = await send(split.metrics, 'GET', 'attacker.example', undefined);
    expect(metrics.status).toBe(403);
    expect(metrics.body).not.toMatch(/continuity_/);
    expect((await send(split.metrics, 'GET', 'localhost', undefined)).status).toBe(200);
  });
});
