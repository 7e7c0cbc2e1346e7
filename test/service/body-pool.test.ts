/**
 * Request bodies read into reused memory (src/service/body-pool.ts): the pool itself, the body
 * reader with it, the transport's guarantee that no byte of a body is read after its attempt
 * settles, and the whole service reusing memory while exports of other bodies wait to retry,
 * with every byte forwarded as it came.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, request } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { snapshotAttributes } from '../../src/otel/attributes.js';
import { SPAN_COMPACTION_POST } from '../../src/otel/semconv.js';
import { decodeTraceRequest, encodeTraceRequest, recordToAttributes } from '../../src/otlp/index.js';
import type { OtlpSpan } from '../../src/otlp/types.js';
import { readRawBody } from '../../src/service/body.js';
import { BodyPool, POOLED_MAX_BYTES, POOLED_MIN_BYTES } from '../../src/service/body-pool.js';
import { loadServiceConfig } from '../../src/service/config.js';
import { createLogger } from '../../src/service/log.js';
import { ContinuityService } from '../../src/service/service.js';
import { createTransport } from '../../src/service/transport.js';
import { otlpSpan, post, tempDir, waitFor } from './harness.js';

const PROTOBUF = { 'content-type': 'application/x-protobuf' };

afterEach(() => {
  vi.restoreAllMocks();
});

describe('BodyPool', () => {
  it('hands out buffers of the exact size and reuses what was given back, once', () => {
    const pool = new BodyPool();
    expect(pool.take(POOLED_MIN_BYTES - 1)).toBeUndefined();
    expect(pool.take(POOLED_MAX_BYTES + 1)).toBeUndefined();
    const a = pool.take(100_000)!;
    expect(a.length).toBe(100_000);
    expect(a.buffer.byteLength).toBe(131_072);
    pool.give(a);
    expect(pool.idleBytes).toBe(131_072);
    // Given twice: the second is ignored, so the slab cannot be handed to two holders.
    pool.give(a);
    expect(pool.idleBytes).toBe(131_072);
    const b = pool.take(120_000)!;
    expect(b.buffer).toBe(a.buffer);
    expect(pool.idleBytes).toBe(0);
    const c = pool.take(120_000)!;
    expect(c.buffer).not.toBe(b.buffer);
    // Another size class gets its own slab.
    expect(pool.take(70_000)!.buffer.byteLength).toBe(131_072);
    expect(pool.take(300_000)!.buffer.byteLength).toBe(524_288);
  });

  it('ignores buffers it did not hand out, and keeps no more idle memory than its bound', () => {
    const pool = new BodyPool(256 * 1024);
    pool.give(Buffer.alloc(131_072));
    pool.give(new Uint8Array(new ArrayBuffer(131_072)));
    expect(pool.idleBytes).toBe(0);
    const taken = [1, 2, 3].map(() => pool.take(100_000)!);
    for (const t of taken) pool.give(t);
    expect(pool.idleBytes).toBe(262_144);
    // The third went to the garbage collector; a given-back view of a slab counts as the slab.
    const again = pool.take(100_000)!;
    expect([taken[0]!.buffer, taken[1]!.buffer]).toContain(again.buffer);
    pool.give(again.subarray(0, 10));
    expect(pool.idleBytes).toBe(262_144);
  });
});

/** A server that hands each request to `onRequest`, and its URL. */
async function serve(onRequest: (req: IncomingMessage, res: import('node:http').ServerResponse) => void) {
  const server = createServer(onRequest);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('readRawBody with a pool', () => {
  it('reads a body with a Content-Length into pooled memory, and gives it back when the body does not arrive', async () => {
    const pool = new BodyPool();
    const results: Array<Buffer | Error> = [];
    const server = await serve((req, res) => {
      readRawBody(req, { maxBytes: 8 << 20, timeoutMs: 2000 }, pool).then(
        (body) => {
          results.push(Buffer.from(body));
          res.end(String(body.buffer.byteLength));
        },
        (e: Error) => {
          results.push(e);
          res.end();
        },
      );
    });
    try {
      const sent = randomBytes(200_000);
      const slabSize = (await post(server.url, sent, {})).body.toString();
      expect((results[0] as Buffer).equals(sent)).toBe(true);
      expect(slabSize).toBe('262144');
      // The pooled body was not given back by the reader: its holder does that.
      expect(pool.idleBytes).toBe(0);

      // A body cut off halfway: the reader gives its memory back at once.
      await new Promise<void>((resolve) => {
        const req = request(server.url, { method: 'POST', headers: { 'content-length': 300_000 } });
        req.on('error', () => resolve());
        req.write(sent.subarray(0, 100_000), () => setTimeout(() => req.destroy(), 50));
      });
      await waitFor('the cut-off body refused', () => results.length === 2);
      expect(results[1]).toBeInstanceOf(Error);
      expect(pool.idleBytes).toBe(524_288);
    } finally {
      await server.close();
    }
  });
});

describe('the OTLP/HTTP transport', () => {
  it('stops writing a body when the downstream answers before reading it all, so nothing of it is read after the attempt settles', async () => {
    // The downstream answers 413 at once, and only then reads what arrives. The body is far larger
    // than loopback's socket buffers, so most of it is still waiting to be written when the
    // answer comes; after the attempt settles the test overwrites the body, and the downstream
    // must never see the new bytes.
    const OVERWRITE = 0xee;
    const BODY_BYTES = 64 << 20;
    let seenOverwritten = false;
    let received = 0;
    let closed: () => void = () => undefined;
    const connectionClosed = new Promise<void>((resolve) => {
      closed = resolve;
    });
    // A plain TCP server speaking just enough HTTP/1.1 (node:http would discard the unread body).
    const tcp = createNetServer((socket) => {
      socket.once('data', () => {
        socket.write('HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\n\r\n');
        socket.pause();
        setTimeout(() => {
          socket.on('data', (c: Buffer) => {
            received += c.length;
            // Without the guard the rest of the body arrives, overwritten, on an open connection.
            if (c.includes(OVERWRITE)) {
              seenOverwritten = true;
              closed();
            }
          });
          socket.resume();
        }, 100);
      });
      socket.on('error', () => undefined);
      socket.on('close', () => closed());
    });
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    const server = {
      url: `http://127.0.0.1:${(tcp.address() as AddressInfo).port}/v1/traces`,
      close: () => new Promise<void>((resolve) => tcp.close(() => resolve())),
    };
    const body = Buffer.alloc(BODY_BYTES, 1);
    const transport = createTransport({
      url: server.url,
      protocol: 'http/protobuf',
      signal: 'traces',
      headers: {},
      compression: 'none',
      timeoutMs: 10_000,
      concurrency: 1,
    });
    try {
      const attempt = await transport.send(body, false);
      expect(attempt).toMatchObject({ kind: 'fail', reason: 'status_413', retryable: false });
      body.fill(OVERWRITE);
      await connectionClosed;
    } finally {
      transport.close();
      await server.close();
    }
    expect(received).toBeLessThan(body.length);
    expect(seenOverwritten).toBe(false);
  });
});

describe('continuity serve with pooled bodies', () => {
  it('reuses body memory while other exports wait to retry, and forwards every byte as it came', async () => {
    // Which slabs the pool hands out: a slab seen twice was reused.
    const handed = new Set<ArrayBufferLike>();
    let reused = 0;
    const take = BodyPool.prototype.take;
    vi.spyOn(BodyPool.prototype, 'take').mockImplementation(function (this: BodyPool, size: number) {
      const b = take.call(this, size);
      if (b) {
        if (handed.has(b.buffer)) reused++;
        handed.add(b.buffer);
      }
      return b;
    });

    // The downstream refuses every export's first attempt (retryable, after a random delay) and
    // records the bytes of both attempts.
    const firstAttempt = new Map<string, Buffer>();
    const retriedSame: boolean[] = [];
    const delivered: Buffer[] = [];
    const downstream = await serve((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const got = Buffer.concat(chunks);
        const key = idOf(got);
        setTimeout(
          () => {
            const first = firstAttempt.get(key);
            if (first === undefined) {
              firstAttempt.set(key, got);
              res.writeHead(503, { 'retry-after': '0', 'content-length': 0 }).end();
              return;
            }
            retriedSame.push(first.equals(got));
            delivered.push(got);
            res.writeHead(200, { 'content-length': 0 }).end();
          },
          Math.floor(Math.random() * 15),
        );
      });
    });

    const dir = tempDir('body-pool-');
    const file = join(dir, 'serve.yaml');
    writeFileSync(
      file,
      JSON.stringify({
        server: { port: 0, grpcPort: false },
        downstream: {
          endpoint: downstream.url,
          concurrency: 6,
          maxBatchSpans: 512,
          retry: { initialInterval: '5ms', maxInterval: '20ms' },
        },
        state: { dir: join(dir, 'state') },
        log: { level: 'error' },
      }),
    );
    const service = await ContinuityService.start(loadServiceConfig({ file, env: {} }), {
      env: {},
      logger: createLogger('error'),
    });
    const ORDINARY = 30;
    const WITH_COMPACTION = 12;
    const ordinary = Array.from({ length: ORDINARY }, (_, i) => batch(`o${i}`, 0));
    const mixed = Array.from({ length: WITH_COMPACTION }, (_, i) => batch(`c${i}`, 4));
    try {
      let next = 0;
      const all = [...ordinary, ...mixed].sort(() => Math.random() - 0.5);
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < all.length) {
            const body = all[next++]!;
            expect(body.length).toBeGreaterThan(POOLED_MIN_BYTES);
            expect((await post(`${service.url}/v1/traces`, body, PROTOBUF)).status).toBe(200);
          }
        }),
      );
      await waitFor('every export delivered', () => delivered.length === all.length, 30_000);
    } finally {
      await service.stop();
      await downstream.close();
    }

    expect(reused).toBeGreaterThan(0);
    expect(retriedSame).toHaveLength(ORDINARY + WITH_COMPACTION);
    expect(retriedSame.every(Boolean)).toBe(true);
    // Ordinary requests pass byte for byte.
    const byId = new Map(delivered.map((d) => [idOf(d), d]));
    for (const sent of ordinary) expect(byId.get(idOf(sent))?.equals(sent)).toBe(true);
    // Requests with compaction spans: every span as sent, post spans with the continuity
    // attributes added.
    for (const sent of mixed) {
      const got = byId.get(idOf(sent));
      expect(got).toBeDefined();
      const before = decodeTraceRequest(sent, 'protobuf').resourceSpans[0]!.scopeSpans[0]!.spans;
      const after = decodeTraceRequest(got!, 'protobuf').resourceSpans[0]!.scopeSpans[0]!.spans;
      expect(after).toHaveLength(before.length);
      after.forEach((s, i) => {
        const b = before[i]!;
        if (s.name !== SPAN_COMPACTION_POST) {
          expect(s).toEqual(b);
          return;
        }
        expect(s.attributes.length).toBeGreaterThan(b.attributes.length);
        const keys = new Set(b.attributes.map((a) => a.key));
        expect({ ...s, attributes: s.attributes.filter((a) => keys.has(a.key)), links: [] }).toEqual({
          ...b,
          links: [],
        });
      });
    }
  }, 60_000);
});

/** The first span's name of an export body: each test batch has its own. */
function idOf(body: Buffer): string {
  return decodeTraceRequest(body, 'protobuf').resourceSpans[0]!.scopeSpans[0]!.spans.at(-1)!.name;
}

/** A 512-span request named `tag` (its last span), with `pairs` pre/post pairs in fresh sessions. */
function batch(tag: string, pairs: number): Buffer {
  const spans: OtlpSpan[] = [];
  let n = 0;
  const span = (name: string, attributes: Record<string, unknown>): OtlpSpan => {
    n++;
    return otlpSpan({
      traceId: randomBytes(16).toString('hex'),
      spanId: randomBytes(8).toString('hex'),
      name,
      endTimeUnixNano: '1764500000100000000',
      attributes: recordToAttributes(attributes as never),
    });
  };
  for (let p = 0; p < pairs; p++) {
    const sessionId = `${tag}-${p}-${randomBytes(4).toString('hex')}`;
    const ctx = { boundaryId: `${sessionId}-b`, runtime: 'sdk' as const, trigger: 'auto' as const };
    const snap = (at: string) => ({
      sessionId,
      capturedAt: at,
      normalizerVersion: 1,
      decisions: {
        scope: {
          digest: `sha256:${'a'.repeat(64)}`,
          revision: 1,
          observedAt: at,
          source: 'task-record' as const,
        },
      },
    });
    spans.push(
      span('continuity.compaction.pre', snapshotAttributes('pre', snap('2026-11-30T10:00:00Z'), ctx)),
      span('continuity.compaction.post', snapshotAttributes('post', snap('2026-11-30T10:05:00Z'), ctx)),
    );
  }
  while (spans.length < 511) {
    spans.push(
      span('llm.call', {
        'gen_ai.request.model': randomBytes(6).toString('hex'),
        'gen_ai.usage.input_tokens': n,
        'http.response.status_code': 200,
      }),
    );
  }
  spans.push(span(tag, {}));
  return Buffer.from(
    encodeTraceRequest(
      {
        resourceSpans: [
          {
            resource: { attributes: recordToAttributes({ 'service.name': 'pool-test' }) },
            scopeSpans: [{ scope: { name: 'pool-test' }, spans }],
          },
        ],
      } as never,
      'protobuf',
    ),
  );
}
